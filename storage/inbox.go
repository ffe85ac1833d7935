package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// InboxItem is a row of _ploti.inbox: a request event a member webhook
// received (data_request.*, research_request.*).
type InboxItem struct {
	EventID    string
	Type       string
	OccurredAt *time.Time // the event's timestamp
	ReceivedAt time.Time
	RequestID  string
	URL        string // opens the request in Ploti
	Data       json.RawMessage
}

// AddInbox records request events, once each: an event id already in the
// inbox is skipped (deliveries are at least once). It returns how many
// were new. A ReceivedAt left zero is the transaction's now.
func (tx *Tx) AddInbox(ctx context.Context, items []InboxItem) (int, error) {
	added := 0
	for _, it := range items {
		if it.EventID == "" || it.Type == "" {
			return added, fmt.Errorf("record inbox event: no event id or type")
		}
		at := it.ReceivedAt
		if at.IsZero() {
			at = tx.Now
		}
		var data any
		if len(it.Data) > 0 {
			data = string(it.Data)
		}
		res, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.inbox (event_id, type, occurred_at, received_at, request_id, url, data)
			SELECT ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM _ploti.inbox WHERE event_id = ?)`,
			it.EventID, it.Type, it.OccurredAt, at, nullStr(it.RequestID), nullStr(it.URL), data, it.EventID)
		if err != nil {
			return added, fmt.Errorf("record inbox event %s (%s): %w", it.EventID, it.Type, err)
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			added++
		}
	}
	return added, nil
}

// InboxFilter narrows Inbox.
type InboxFilter struct {
	// Types keeps events of these types, or, for an entry ending in ".",
	// of types starting with it ("data_request."); empty keeps all.
	Types []string
	// Limit keeps the newest Limit events; 0 keeps all.
	Limit int
}

// Inbox lists the recorded request events, oldest received first.
func (db *DB) Inbox(ctx context.Context, f InboxFilter) ([]InboxItem, error) {
	q := `SELECT event_id, type, occurred_at, received_at, coalesce(request_id, ''), coalesce(url, ''), coalesce(data::VARCHAR, '')
		FROM _ploti.inbox`
	var where []string
	var args []any
	for _, t := range f.Types {
		if strings.HasSuffix(t, ".") {
			where = append(where, "starts_with(type, ?)")
		} else {
			where = append(where, "type = ?")
		}
		args = append(args, t)
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " OR ")
	}
	q += " ORDER BY received_at DESC, event_id DESC"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	defer rows.Close()
	var out []InboxItem
	for rows.Next() {
		var it InboxItem
		var data string
		if err := rows.Scan(&it.EventID, &it.Type, &it.OccurredAt, &it.ReceivedAt, &it.RequestID, &it.URL, &data); err != nil {
			return nil, err
		}
		if data != "" {
			it.Data = json.RawMessage(data)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
