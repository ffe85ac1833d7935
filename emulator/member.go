package emulator

// Member events (watch-and-webhooks.txt): dataset.changed for each
// promotion of a watched dataset, and the request events. They go to the
// member's webhooks that belong to no subscription, signed and retried as
// feed deliveries are; there is no log of them on the wire (MemberEvents is
// the tests' view).

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// requestEventTypes are the request events of the docs.
var requestEventTypes = []string{
	"data_request.sourcing", "data_request.matched", "data_request.checkpoint_released", "data_request.ready",
	"data_request.failed", "data_request.cancelled", "data_request.paid_source", "data_request.cycle_refused",
	"data_request.question", "data_request.question_reminder",
	"research_request.report_ready", "research_request.question", "research_request.answered",
	"research_request.needs_attention",
}

// memberEventTypes are the types a member webhook receives.
var memberEventTypes = append([]string{"dataset.changed"}, requestEventTypes...)

// RequestEventTypes lists the request event types EmitRequestEvent takes.
func RequestEventTypes() []string { return slices.Clone(requestEventTypes) }

// memberEvent is one dataset.changed or request event.
type memberEvent struct {
	id        string
	typ       string
	ts        time.Time
	datasetID string
	body      []byte
}

// emitMemberLocked records a member event and queues it for every member
// webhook whose filter lets it through, of the members to (nil: every
// member).
func (e *Emulator) emitMemberLocked(typ, datasetID string, data map[string]any, to []string) (*memberEvent, error) {
	ev := &memberEvent{id: fmt.Sprintf("evt_m%011d", len(e.memberEvents)+1), typ: typ, ts: e.nowLocked(), datasetID: datasetID}
	body, err := json.Marshal(map[string]any{"id": ev.id, "type": typ, "timestamp": ev.ts.Format(time.RFC3339), "data": data})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w: %v", typ, ErrInvalid, err)
	}
	ev.body = body
	e.memberEvents = append(e.memberEvents, ev)
	w := e.webhooks
	if w == nil {
		return ev, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.order {
		h := w.hooks[id]
		if h.Disabled || h.SubscriptionID != "" || (len(h.Events) > 0 && !slices.Contains(h.Events, typ)) ||
			to != nil && !slices.Contains(to, h.Member) {
			continue
		}
		w.nextMsg++
		w.queue = append(w.queue, &message{hook: h, id: fmt.Sprintf("msg_%012d", w.nextMsg), eventID: ev.id, typ: typ,
			dataset: datasetID, seq: int64(w.nextMsg), body: body, due: ev.ts})
	}
	w.notifyLocked()
	w.wake()
	return ev, nil
}

// sendDatasetChangedLocked sends dataset.changed for a promotion to the
// webhooks of the members who watch the dataset ("each new version sends a
// dataset.changed event to all your webhooks"), when the workspace's
// coverage and plan open it.
func (e *Emulator) sendDatasetChangedLocked(d *dataset, pv *plotiVersion) {
	watchers := e.watchersLocked(d.spec.ID)
	if len(watchers) == 0 || e.openErr(d) != nil {
		return
	}
	e.emitMemberLocked("dataset.changed", d.spec.ID, map[string]any{
		"datasetId": d.spec.ID, "version": pv.num, "promotedAt": pv.promotedAt.Format(time.RFC3339),
		"counts":        map[string]any{"added": pv.counts.added, "changed": pv.counts.changed, "removed": pv.counts.removed},
		"provenanceUrl": d.provenanceURL(),
	}, watchers)
}

// EmitRequestEvent sends a request event (one of RequestEventTypes) to the
// member's webhooks and returns its event id. data must carry "requestId"
// (a non-empty string); "url" defaults to the request's address in Ploti;
// research_request.question needs "questions" ([{"id", "text"}]) and
// research_request.answered "answer". Anything else in data is sent as
// given. It returns ErrInvalid (wrapped, with the reason) otherwise.
func (e *Emulator) EmitRequestEvent(typ string, data map[string]any) (string, error) {
	if !slices.Contains(requestEventTypes, typ) {
		return "", fmt.Errorf("emit request event: %w: %q is not one of %s", ErrInvalid, typ, strings.Join(requestEventTypes, ", "))
	}
	data = maps.Clone(data)
	if data == nil {
		data = map[string]any{}
	}
	id, _ := data["requestId"].(string)
	if id == "" {
		return "", fmt.Errorf("emit %s: %w: data.requestId must be a non-empty string", typ, ErrInvalid)
	}
	if _, ok := data["url"]; !ok {
		data["url"] = "https://ploti.ai/requests/" + id
	}
	for _, need := range [][2]string{{"research_request.question", "questions"}, {"research_request.answered", "answer"}} {
		if _, ok := data[need[1]]; typ == need[0] && !ok {
			return "", fmt.Errorf("emit %s: %w: data.%s is required", typ, ErrInvalid, need[1])
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return "", ErrClosed
	}
	ev, err := e.emitMemberLocked(typ, "", data, nil)
	if err != nil {
		return "", err
	}
	return ev.id, nil
}

// MemberEvents returns every dataset.changed and request event sent so
// far, oldest first (SubscriptionID empty; DatasetID set for
// dataset.changed).
func (e *Emulator) MemberEvents() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Event, 0, len(e.memberEvents))
	for _, ev := range e.memberEvents {
		var data map[string]any
		var whole struct {
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal(ev.body, &whole) == nil {
			data = whole.Data
		}
		out = append(out, Event{ID: ev.id, Type: ev.typ, Timestamp: ev.ts, DatasetID: ev.datasetID, Data: data,
			JSON: slices.Clone(ev.body)})
	}
	return out
}
