package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// watch-and-webhooks.txt, "Request events": every type the docs list
// (data_request.sourcing, .matched, .checkpoint_released, .ready, .failed,
// .cancelled, .paid_source, .cycle_refused, .question, .question_reminder;
// research_request.report_ready, .question, .answered, .needs_attention)
// reaches _ploti.inbox through serve, each once, with its data as sent
// ("data.url on a request event opens the request in Ploti").
func TestServe_everyRequestEventTypeTheDocsListGoesToTheInbox(t *testing.T) {
	w := newMemberServeWorld(t)
	w.start(t, time.Second, "--poll", "0")
	types := emulator.RequestEventTypes()
	if len(types) != 14 {
		t.Fatalf("the emulator lists %d request event types, the docs 14: %v", len(types), types)
	}
	ids := map[string]string{}
	for i, typ := range types {
		data := map[string]any{"requestId": "req_" + typ}
		switch typ {
		case "research_request.question":
			data["questions"] = []any{map[string]any{"id": "q1", "text": "Which county?"}}
		case "research_request.answered":
			data["answer"] = "Orange County keeps them."
		}
		id, err := w.em.EmitRequestEvent(typ, data)
		if err != nil {
			t.Fatalf("emit %s: %v", typ, err)
		}
		ids[typ] = id
		if i%5 == 4 {
			w.waitDeliveries(t)
		}
	}
	w.waitDeliveries(t)
	w.waitIdle(t, 1)
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, map[string]string{"PLOTI_DB": w.db}, "inbox", "--json")
	var events []struct { // a bare array, as every list --json gives
		EventID, Type, RequestID, URL string
		Data                          json.RawMessage
	}
	if code != exitOK || json.Unmarshal([]byte(out), &events) != nil {
		t.Fatalf("inbox --json: exit %d: %s%s", code, out, errs)
	}
	got := map[string]bool{}
	for _, e := range events {
		if got[e.Type] {
			t.Fatalf("%s recorded twice:\n%s", e.Type, out)
		}
		got[e.Type] = true
		if e.EventID != ids[e.Type] || e.RequestID != "req_"+e.Type || !strings.HasPrefix(e.URL, "https://") {
			t.Fatalf("%s recorded as %s, request %q, url %q; want %s, req_%s, an https url", e.Type, e.EventID, e.RequestID, e.URL, ids[e.Type], e.Type)
		}
	}
	for _, typ := range types {
		if !got[typ] {
			t.Errorf("%s never reached the inbox", typ)
		}
	}
}
