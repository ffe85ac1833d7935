package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
)

// capture is a delivery as it arrived: its headers and body.
type capture struct {
	header http.Header
	body   []byte
}

// capturer keeps the deliveries POSTed to /ploti on their way to a
// handler.
type capturer struct {
	mu   sync.Mutex
	seen []capture
}

// wrap serves with the handler next gives, capturing the deliveries.
func (c *capturer) wrap(next func() http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ploti" && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			c.mu.Lock()
			c.seen = append(c.seen, capture{r.Header.Clone(), body})
			c.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next().ServeHTTP(w, r)
	})
}

// last is the last delivery captured.
func (c *capturer) last() (capture, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) == 0 {
		return capture{}, false
	}
	return c.seen[len(c.seen)-1], true
}

// A webhook delivery replayed after serve restarts (a captured delivery,
// or Ploti's retry of one whose answer was lost) is answered as a
// duplicate and starts no sync: the ids the Daemon answered are kept
// beside the file (replica.SeenPath), not only in memory.
func TestDaemon_aDeliveryReplayedAfterARestartIsADuplicate(t *testing.T) {
	em, sub := testEmulator(t)
	var current atomic.Pointer[Daemon]
	captured := &capturer{}
	srv := httptest.NewServer(captured.wrap(func() http.Handler { return current.Load().Handler() }))
	defer srv.Close()
	wh, err := em.CreateWebhook(emulator.WebhookSpec{URL: srv.URL + "/ploti", SubscriptionID: sub, Description: "restart"})
	must(t, err)
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	ropts := replica.Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, LockTimeout: 10 * time.Second}
	start := func() func() {
		d, err := New(Options{DB: db, Replica: ropts, Webhook: Webhook{Secret: wh.Secret}, Registry: prometheus.NewRegistry()})
		must(t, err)
		current.Store(d)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		return func() { cancel(); must(t, <-done) }
	}
	stop := start()
	waitSyncs(t, srv.URL, 1)
	publish(t, em, 2)
	waitSyncs(t, srv.URL, 2) // the webhook's sync
	stop()
	replay, ok := captured.last()
	if !ok {
		t.Fatal("no delivery arrived")
	}

	stop = start()
	defer stop()
	waitSyncs(t, srv.URL, 1) // the sync at start
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/ploti", bytes.NewReader(replay.body))
	must(t, err)
	req.Header = replay.header
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	var answer struct{ Result string }
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	must(t, err)
	if resp.StatusCode != http.StatusOK || answer.Result != "duplicate" {
		t.Fatalf("the delivery replayed after the restart: %d %q, want 200 duplicate", resp.StatusCode, answer.Result)
	}
	time.Sleep(300 * time.Millisecond)
	if h := waitSyncs(t, srv.URL, 1); h.Syncs != 1 {
		t.Fatalf("the replay started a sync: %d syncs since the restart, want 1", h.Syncs)
	}
}
