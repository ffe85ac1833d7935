package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// InboxQueue's rule: "an event Ploti was told it got is not lost with the
// process". A crash (or a full disk) can leave the queue ending in a line
// cut short, whose delivery was not answered 2xx and comes again; the next
// event kept after it, answered 2xx, must still read back whole, not glued
// to the cut line and skipped with it.
func TestInboxQueue_keepAfterALineCutShort(t *testing.T) {
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	q := NewInboxQueue(db, time.Now, nil)
	ctx := context.Background()
	must(t, q.Keep(ctx, readyEvent("evt_a")))
	// evt_b's line was being written when the process died.
	f, err := os.OpenFile(q.path, os.O_APPEND|os.O_WRONLY, 0o600)
	must(t, err)
	_, err = f.WriteString(`{"id":"evt_b","type":"data_req`)
	must(t, err)
	must(t, f.Close())
	// After the restart, evt_c is kept and answered 2xx.
	must(t, q.Keep(ctx, readyEvent("evt_c")))

	_, evs, err := q.take()
	must(t, err)
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	if len(ids) != 2 || ids[0] != "evt_a" || ids[1] != "evt_c" {
		t.Fatalf("queue read back %v, want [evt_a evt_c]: the event kept after a line cut short was lost", ids)
	}
}

// README: request events are "recorded by the next sync in _ploti.inbox".
// A queue taken and not recorded (a sync that failed to write it, or a
// crash) is recorded first; the events kept since, in a new queue, must
// not wait for yet another sync (with --poll 0, for another delivery).
func TestInboxQueue_aQueueLeftTakenDoesNotHoldBackTheEventsAfterIt(t *testing.T) {
	em, sub := testEmulator(t)
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	q := NewInboxQueue(db, time.Now, nil)
	ctx := context.Background()
	must(t, q.Keep(ctx, readyEvent("evt_a")))
	if path, evs, err := q.take(); err != nil || path == "" || len(evs) != 1 {
		t.Fatalf("take: %q %v %v", path, evs, err) // and not recorded: the sync failed
	}
	must(t, q.Keep(ctx, readyEvent("evt_b")))
	r, err := replica.Open(ctx, db, replica.Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub})
	must(t, err)
	defer r.Close()
	q.Record(ctx, r)
	var n int
	must(t, r.DB().QueryRowContext(ctx, "SELECT count(*) FROM _ploti.inbox").Scan(&n))
	if n != 2 {
		t.Fatalf("the next sync recorded %d request event(s), want both: the one kept after the queue left taken waits", n)
	}
}

// InboxQueue's rule: "an event Ploti was told it got is not lost". A sync
// in another process (a `sync` of the same file while serve runs) takes
// the queue between serve's open of it and its write: the event's line
// lands in the taken file after it was read, and is removed with it. It
// must be in the queue still, for the next sync.
func TestInboxQueue_anEventWrittenWhileAnotherProcessTakesTheQueueIsNotLost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	serve := NewInboxQueue(db, time.Now, nil)
	other := NewInboxQueue(db, time.Now, nil) // the other process's
	var got []string
	takeAll := func(q *InboxQueue) {
		path, evs, err := q.take()
		must(t, err)
		for _, e := range evs {
			got = append(got, e.ID)
		}
		q.done(path, false)
	}
	serve.opened = func() {
		serve.opened = nil
		takeAll(other) // renamed, read (nothing yet) and removed
	}
	must(t, serve.Keep(context.Background(), webhook.Event{ID: "evt_a", Type: "data_request.ready", Timestamp: time.Now().UTC(),
		Data: json.RawMessage(`{"requestId":"req_1"}`)}))
	takeAll(serve) // the next sync
	if len(got) != 1 || got[0] != "evt_a" {
		t.Fatalf("the syncs took %v, want evt_a: an event answered 2xx was lost", got)
	}
}

// readyEvent is a data_request.ready request event with the given id.
func readyEvent(id string) webhook.Event {
	return webhook.Event{ID: id, Type: "data_request.ready", Timestamp: time.Now().UTC(),
		Data: json.RawMessage(`{"requestId":"req_1","url":"https://app.ploti.ai/r/1"}`)}
}
