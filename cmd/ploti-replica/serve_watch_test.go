package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// newMemberServeWorld is serve for a member without Data Feeds: one
// watched dataset and a member webhook (no subscription) to serve's
// listener.
func newMemberServeWorld(t *testing.T) *serveWorld {
	t.Helper()
	em := inspectionsEmulator(t, emulator.Options{Now: time.Now, NoRateLimit: true, DuckDBThreads: 2})
	if _, err := em.Watch(watchedDataset); err != nil {
		t.Fatal(err)
	}
	w := &serveWorld{em: em, db: filepath.Join(t.TempDir(), "watches.duckdb"), logs: &lockedBuffer{}}
	var err error
	if w.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	w.base = "http://" + w.ln.Addr().String()
	wh, err := em.CreateWebhook(emulator.WebhookSpec{URL: w.base + "/ploti", Description: "member webhook"})
	if err != nil {
		t.Fatal(err)
	}
	w.secret, w.webhookID = wh.Secret, wh.ID
	w.secretFile = filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(w.secretFile, []byte(wh.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// heldVersion reads the version the file holds of the watched dataset, once
// serve has it closed.
func (w *serveWorld) heldVersion(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, w.db, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		t.Fatalf("open the file read-only between syncs: %v", err)
	}
	defer db.Close()
	d, err := db.Dataset(ctx, watchedDataset)
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != storage.SourceWatch || d.Status != storage.StatusCurrent {
		t.Fatalf("the watched dataset is %s from %s (%s)", d.Status, d.Source, d.StatusReason)
	}
	return d.Version
}

func latestOf(em *emulator.Emulator) int {
	pvs := em.PlotiVersions(watchedDataset)
	return pvs[len(pvs)-1].Version
}

// A member webhook's dataset.changed starts a sync that reads the new
// version (watch-and-webhooks.txt: "each new version sends a
// dataset.changed event to all your webhooks").
func TestServe_datasetChangedStartsASync(t *testing.T) {
	w := newMemberServeWorld(t)
	w.start(t, time.Second, "--poll", "0")
	if got, want := w.heldVersion(t), latestOf(w.em); got != want {
		t.Fatalf("first sync holds v%d, want v%d", got, want)
	}
	for round := 1; round <= 2; round++ {
		_, before := w.health(t)
		publishInspections(t, w.em, round)
		published := time.Now()
		w.waitIdle(t, before.Syncs+1)
		// Polling is off: the dataset.changed webhook started this sync.
		t.Logf("round %d: read %s after the publish", round, time.Since(published).Round(time.Millisecond))
		if got, want := w.heldVersion(t), latestOf(w.em); got != want {
			t.Fatalf("round %d: the file holds v%d, want v%d", round, got, want)
		}
	}
	if got := w.metric(t, "ploti_replica_webhook_requests_total", `result="other"`); got != 2 {
		t.Fatalf("dataset.changed deliveries taken = %v, want 2", got)
	}
}

// "There is no log of these events": a lost dataset.changed is caught up
// by the poll, whose watches list tells which watched datasets moved.
func TestServe_pollCatchesUpALostDatasetChanged(t *testing.T) {
	w := newMemberServeWorld(t)
	w.em.DropDeliveries(-1)
	w.start(t, time.Second, "--poll", "300ms")
	publishInspections(t, w.em, 1)
	want := publishInspections(t, w.em, 2)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if v, ok := w.tryHeldVersion(t); ok && v == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the poll did not read v%d", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if got := w.acceptedDeliveries(); got != 0 {
		t.Fatalf("%d deliveries arrived, want none", got)
	}
}

// tryHeldVersion reads the version the file holds of the watched dataset
// when serve has the file closed just now.
func (w *serveWorld) tryHeldVersion(t *testing.T) (int, bool) {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, w.db, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return 0, false
	}
	defer db.Close()
	d, err := db.Dataset(ctx, watchedDataset)
	if err != nil {
		return 0, false
	}
	return d.Version, true
}

// Request events are kept before the answer and recorded in _ploti.inbox
// once each by the next sync; `inbox` lists them (watch-and-webhooks.txt,
// "Request events").
func TestServe_requestEventsGoToTheInbox(t *testing.T) {
	w := newMemberServeWorld(t)
	w.start(t, time.Second, "--poll", "0")
	ready, err := w.em.EmitRequestEvent("data_request.ready", map[string]any{"requestId": "req_7"})
	if err != nil {
		t.Fatal(err)
	}
	question, err := w.em.EmitRequestEvent("research_request.question", map[string]any{"requestId": "req_8",
		"questions": []any{map[string]any{"id": "q1", "text": "Which county?"}}})
	if err != nil {
		t.Fatal(err)
	}
	w.waitDeliveries(t)
	w.waitIdle(t, 2)
	// A delivery again (Ploti's retry after a lost answer) is recorded once.
	for _, d := range w.em.Deliveries() {
		if d.EventID == ready && d.OK() {
			if status, _ := w.post(t, d.Header, d.Body); status != 200 {
				t.Fatalf("the delivery again: %d", status)
			}
		}
	}
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PLOTI_DB": w.db}
	code, out, errs := cli(t, vars, "inbox", "--json")
	var in []struct {
		EventID, Type, RequestID, URL string
		Data                          json.RawMessage
	}
	if code != exitOK || json.Unmarshal([]byte(out), &in) != nil {
		t.Fatalf("inbox --json: exit %d: %s%s", code, out, errs)
	}
	if len(in) != 2 || in[0].EventID != ready || in[0].RequestID != "req_7" || in[0].URL == "" ||
		in[1].EventID != question || in[1].Type != "research_request.question" {
		t.Fatalf("inbox = %s", out)
	}
	code, out, _ = cli(t, vars, "inbox", "--type", "research_request.")
	if code != exitOK || !strings.Contains(out, "asks: Which county?") || strings.Contains(out, "req_7") {
		t.Fatalf("inbox --type research_request.:\n%s", out)
	}
	for _, f := range []string{w.db + ".inbox", w.db + ".inbox.taking"} {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("%s is left once its events are recorded", f)
		}
	}
}

// A request event larger than a feed event ever is (a research answer of
// 2 MiB) is taken: Ploti never retries a 413 (feed-events.txt: "An
// answer of 413 is not retried"), so a refused one would be lost.
func TestServe_aLargeRequestEventIsTaken(t *testing.T) {
	w := newMemberServeWorld(t)
	w.start(t, time.Second, "--poll", "0")
	answer := strings.Repeat("the answer, at length. ", 2<<20/23)
	id, err := w.em.EmitRequestEvent("research_request.answered", map[string]any{"requestId": "req_9", "answer": map[string]any{"text": answer}})
	if err != nil {
		t.Fatal(err)
	}
	w.waitDeliveries(t)
	for _, d := range w.em.Deliveries() {
		if d.EventID == id && !d.OK() {
			t.Fatalf("the 2 MiB request event was refused: %d %s", d.Status, d.Err)
		}
	}
	w.waitIdle(t, 2)
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, map[string]string{"PLOTI_DB": w.db}, "inbox", "--json")
	if code != exitOK || !strings.Contains(out, id) {
		t.Fatalf("inbox --json: exit %d, want the large event %s: %.300s%s", code, id, out, errs)
	}
}

// README: request events are "written to disk before the answer and
// recorded by the next sync in _ploti.inbox, once each". serve answers a
// request event while another process holds the file (its own sync fails
// on the lock), then stops; the next sync, a plain `sync`, records it.
func TestServe_aRequestEventKeptIsRecordedByTheNextSyncWhicheverItIs(t *testing.T) {
	w := newMemberServeWorld(t)
	w.start(t, time.Second, "--poll", "0", "--lock-timeout", "300ms")
	_, done := holdFile(t, w.db, 4*time.Second)
	ev, err := w.em.EmitRequestEvent("data_request.ready", map[string]any{"requestId": "req_77"})
	if err != nil {
		t.Fatal(err)
	}
	w.waitDeliveries(t)
	if !slices.ContainsFunc(w.em.Deliveries(), func(d emulator.Delivery) bool { return d.EventID == ev && d.OK() }) {
		t.Fatal("the request event was not answered 2xx")
	}
	w.waitIdle(t, 2)
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	<-done
	vars := map[string]string{"PLOTI_API_URL": w.em.URL(), "PLOTI_API_KEY": w.em.APIKey(), "PLOTI_DB": w.db}
	mustCLI(t, vars, "sync")
	if out := mustCLI(t, vars, "inbox"); !strings.Contains(out, "req_77") {
		t.Fatalf("inbox after the next sync:\n%s", out)
	}
	mustCLI(t, vars, "sync")
	if out := mustCLI(t, vars, "inbox", "--json"); strings.Count(out, `"eventId"`) != 1 {
		t.Fatalf("the event recorded twice:\n%s", out)
	}
}
