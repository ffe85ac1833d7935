package replica

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// InboxEvent is a request event (data_request.*, research_request.*) as a
// member webhook received it.
type InboxEvent struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Timestamp  time.Time       `json:"timestamp"`
	Data       json.RawMessage `json:"data"`
	ReceivedAt time.Time       `json:"receivedAt"`
}

// RecordInbox records request events in _ploti.inbox, each event id once
// (deliveries are at least once), in one transaction; it returns how many
// were new. Events of other types are left out.
func (r *Replica) RecordInbox(ctx context.Context, evs []InboxEvent) (int, error) {
	if err := r.live(); err != nil {
		return 0, err
	}
	var items []storage.InboxItem
	for _, ev := range evs {
		if !ploti.IsRequestEvent(ev.Type) {
			continue
		}
		var d ploti.RequestData
		json.Unmarshal(ev.Data, &d) // a request event's data may hold less: the row keeps the whole data
		it := storage.InboxItem{EventID: ev.ID, Type: ev.Type, ReceivedAt: ev.ReceivedAt, RequestID: d.RequestID, URL: d.URL, Data: ev.Data}
		if !ev.Timestamp.IsZero() {
			at := ev.Timestamp
			it.OccurredAt = &at
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return 0, nil
	}
	var n int
	err := r.db.Update(ctx, func(tx *storage.Tx) (err error) {
		n, err = tx.AddInbox(ctx, items)
		return err
	})
	return n, err
}
