package emulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"time"
)

type event struct {
	seq       int64
	id        string
	typ       string
	ts        time.Time
	datasetID string
	version   *int // the version links.version names, if any
	data      map[string]any
}

// Event is one feed event as a subscription's log holds it.
type Event struct {
	// ID is the event id ("evt_000000000001"), unique across the emulator.
	ID string
	// Type is the event type, such as "feed.dataset.updated".
	Type string
	// Timestamp is when the emulator clock said it happened.
	Timestamp time.Time
	// SubscriptionID is the subscription whose log holds it.
	SubscriptionID string
	// DatasetID is data.datasetId.
	DatasetID string
	// Data is the event's data object as served (links use URL()).
	Data map[string]any
	// JSON is the whole event as GET .../events serves it.
	JSON json.RawMessage
}

// appendEvent adds an event to a subscription's log.
func (e *Emulator) appendEvent(s *subscription, typ string, d *dataset, data map[string]any) *event {
	e.nextEvent++
	ev := &event{
		seq:       s.pruned + int64(len(s.events)) + 1,
		id:        fmt.Sprintf("evt_%012d", e.nextEvent),
		typ:       typ,
		ts:        e.nowLocked(),
		datasetID: d.spec.ID,
		data:      data,
	}
	if v, ok := data["version"].(*int); ok && v != nil {
		n := *v
		ev.version = &n
		data["version"] = n
	} else if ok {
		data["version"] = nil
	}
	s.events = append(s.events, ev)
	e.queueDeliveriesLocked(s, ev)
	return ev
}

// sendDelayed sends feed.dataset.delayed for the dataset's held version to a
// subscription, once per held version.
func (e *Emulator) sendDelayed(s *subscription, d *dataset) {
	m := s.members[d.spec.ID]
	if m == nil || d.held == nil || m.delayedFor[d.held.num] {
		return
	}
	m.delayedFor[d.held.num] = true
	var v *int
	if cur := d.current(); cur != nil {
		v = &cur.num
	}
	e.appendEvent(s, "feed.dataset.delayed", d, map[string]any{
		"version": v, "since": d.held.builtAt.Format(time.RFC3339), "reason": d.held.delayReason(),
	})
}

// render is the event's JSON object, with links on apiBase.
func (ev *event) render(subID, apiBase string) map[string]any {
	data := maps.Clone(ev.data)
	data["datasetId"] = ev.datasetID
	dsURL := apiBase + "/v1/feeds/datasets/" + url.PathEscape(ev.datasetID)
	links := map[string]any{"dataset": dsURL}
	if ev.version != nil {
		links["version"] = dsURL + "/versions/" + strconv.Itoa(*ev.version)
	}
	data["links"] = links
	return map[string]any{
		"id": ev.id, "type": ev.typ, "timestamp": ev.ts.Format(time.RFC3339),
		"subscriptionId": subID, "data": data,
	}
}

// Events returns a subscription's kept events, oldest first, with links on
// URL(). It returns nil for an unknown subscription.
func (e *Emulator) Events(subscriptionID string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.subs[subscriptionID]
	if s == nil {
		return nil
	}
	out := make([]Event, 0, len(s.events))
	for _, ev := range s.events {
		obj := ev.render(s.id, e.apiURL)
		raw, _ := json.Marshal(obj)
		out = append(out, Event{
			ID: ev.id, Type: ev.typ, Timestamp: ev.ts, SubscriptionID: s.id,
			DatasetID: ev.datasetID, Data: obj["data"].(map[string]any), JSON: raw,
		})
	}
	return out
}

// Cursor is the opaque cursor that reads a subscription's log after its
// n-th event (0: from the start). Tests use it to build cursors without a
// manifest.
func Cursor(subscriptionID string, n int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(subscriptionID + ":" + strconv.FormatInt(n, 10)))
}

// parseCursor reads a cursor that Cursor made for this subscription.
func parseCursor(subID, c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	id, n, ok := strings.Cut(string(b), ":")
	if !ok || id != subID {
		return 0, false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	if err != nil || seq < 0 {
		return 0, false
	}
	return seq, true
}

// lastSeq is the sequence number of the subscription's newest event.
func (s *subscription) lastSeq() int64 { return s.pruned + int64(len(s.events)) }
