package webhook_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/webhook"
)

// seenHandler is a Handler keeping its seen ids in file, its clock at
// *now; keep, when set, is its Keep.
func seenHandler(tb testing.TB, file string, now *time.Time, maxSeen int, keep func(context.Context, webhook.Event) error) *webhook.Handler {
	tb.Helper()
	clock := func() time.Time { return *now }
	h, err := webhook.NewHandler(webhook.HandlerOptions{Verifier: mustVerifier(tb, testSecret, clock),
		SeenFile: file, MaxSeen: maxSeen, Keep: keep, Now: clock})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// result sends d to h and returns the answer's status.
func result(tb testing.TB, h *webhook.Handler, d delivery) int {
	tb.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, d.request(tb))
	return w.Code
}

// A delivery answered before a restart is a duplicate after it (HandlerOptions.SeenFile):
// a new Handler on the same file answers a replay 200 "duplicate", not 202;
// one past the window is new again, and so is one whose Keep failed.
func TestHandler_seenIDsSurviveARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "feeds.duckdb.seen")
	now := testNow
	feed := delivery{body: event("evt_1", "feed.dataset.updated")}
	if got := result(t, seenHandler(t, file, &now, 0, nil), feed); got != 202 {
		t.Fatalf("first delivery: %d, want 202", got)
	}
	failing := func(context.Context, webhook.Event) error { return errors.New("disk full") }
	request := delivery{id: "msg_2", body: event("evt_2", "data_request.ready")}
	if got := result(t, seenHandler(t, file, &now, 0, failing), request); got != 503 {
		t.Fatalf("a request event not kept: %d, want 503", got)
	}
	restarted := seenHandler(t, file, &now, 0, nil)
	if got := result(t, restarted, feed); got != 200 {
		t.Fatalf("the delivery replayed after a restart: %d, want 200 (duplicate)", got)
	}
	if got := result(t, restarted, request); got != 200 {
		t.Fatalf("the request event whose keep failed, delivered again: %d, want 200 (received)", got)
	}
	later := now.Add(webhook.DefaultSeenWindow + time.Second)
	feed.at = later.Sub(testNow)
	if got := result(t, seenHandler(t, file, &later, 0, nil), feed); got != 202 {
		t.Fatalf("a delivery of the id past the window: %d, want 202", got)
	}
}

// The file stays bounded as the set is: thousands of deliveries with
// MaxSeen 10 leave a few hundred lines at most, and the ten last ids are
// still known after a restart.
func TestHandler_seenFileStaysBounded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "feeds.duckdb.seen")
	now := testNow
	h := seenHandler(t, file, &now, 10, nil)
	const n = 3000
	for i := range n {
		d := delivery{id: fmt.Sprintf("msg_%d", i), body: event(fmt.Sprintf("evt_%d", i), "feed.dataset.updated")}
		if got := result(t, h, d); got != 202 {
			t.Fatalf("delivery %d: %d", i, got)
		}
	}
	if lines := countLines(t, file); lines > 2*10+256+1 {
		t.Fatalf("the seen file has %d lines after %d deliveries with MaxSeen 10", lines, n)
	}
	restarted := seenHandler(t, file, &now, 10, nil)
	for i := n - 10; i < n; i++ {
		d := delivery{id: "msg_x", body: event(fmt.Sprintf("evt_%d", i), "feed.dataset.updated")}
		if got := result(t, restarted, d); got != 200 {
			t.Fatalf("evt_%d after the restart: %d, want 200 (duplicate)", i, got)
		}
	}
}

func countLines(tb testing.TB, path string) int {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}
