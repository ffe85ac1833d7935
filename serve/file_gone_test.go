package serve

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ploti-replica/ploti-replica/replica"
)

// The file deleted under a running Daemon: its next sync stops the
// Daemon (replica.ErrFileReplaced) rather than make a new file without a
// word, and the request event the last sync recorded into the deleted
// file is not lost: the Daemon started again records it into the new
// file. Before, the new file was made silently, without the event.
func TestDaemon_aFileDeletedUnderItStopsItAndKeepsTheRequestEvents(t *testing.T) {
	em, sub := testEmulator(t)
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	ropts := replica.Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, LockTimeout: 10 * time.Second}
	start := func() (*Daemon, string, <-chan error, context.CancelFunc) {
		d, err := New(Options{DB: db, Replica: ropts, Poll: time.Hour, Registry: prometheus.NewRegistry()})
		must(t, err)
		srv := httptest.NewServer(d.Handler())
		t.Cleanup(srv.Close)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		return d, srv.URL, done, cancel
	}
	d, base, done, cancel := start()
	defer cancel()
	waitSyncs(t, base, 1)
	must(t, d.inbox.Keep(context.Background(), readyEvent("evt_a")))
	d.trig.Signal()
	waitSyncs(t, base, 2) // records evt_a into the file
	must(t, os.Remove(db))
	d.trig.Signal()
	select {
	case err := <-done:
		if !errors.Is(err, replica.ErrFileReplaced) {
			t.Fatalf("Run after the file was deleted: %v, want ErrFileReplaced", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the Daemon went on after its file was deleted")
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("a file was made in the deleted one's place: %v", err)
	}

	_, base, done, cancel = start() // started again: a new file
	waitSyncs(t, base, 1)
	cancel()
	must(t, <-done)
	r, err := replica.Open(context.Background(), db, ropts)
	must(t, err)
	defer r.Close()
	var n int
	must(t, r.DB().QueryRowContext(context.Background(), "SELECT count(*) FROM _ploti.inbox WHERE event_id = 'evt_a'").Scan(&n))
	if n != 1 {
		t.Fatalf("the new file's inbox has evt_a %d times, want once: the event recorded into the deleted file was lost", n)
	}
}
