package serve

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
)

// While a sync sits on an answer that sends its headers and then nothing
// (its idle timeout set long), /healthz stops saying "ok, syncing": past
// StuckAfter without progress it answers 503 "stuck".
func TestDaemon_healthzStuckSync(t *testing.T) {
	em, sub := testEmulator(t)
	target, err := url.Parse(em.URL())
	must(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var stall atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stall.Load() && strings.HasPrefix(r.URL.Path, "/v1/") {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer api.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ropts := replica.Options{APIURL: api.URL, APIKey: em.APIKey(), SubscriptionID: sub,
		FetchOptions: func(fo *fetch.Options) { fo.APIIdleTimeout = time.Minute }}
	d, err := New(Options{DB: filepath.Join(t.TempDir(), "feeds.duckdb"), Replica: ropts, Poll: 200 * time.Millisecond,
		StuckAfter: time.Second, Listener: ln})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	base := "http://" + ln.Addr().String()
	if h := waitSyncs(t, base, 1); h.Status != "ok" {
		t.Fatalf("after the first sync: %+v", h)
	}
	stall.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var h healthBody
		resp, err := http.Get(base + "/healthz")
		must(t, err)
		must(t, json.NewDecoder(resp.Body).Decode(&h))
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && strings.HasPrefix(h.Reason, "stuck:") && h.Syncing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz during a stalled sync: %d %+v, want 503 stuck", resp.StatusCode, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the cancel")
	}
}

// The default StuckAfter is what the API client's limits allow one call
// plus the Retry-After budget, the flags' values included.
func TestStuckAfterFor(t *testing.T) {
	if got := stuckAfterFor(Options{}); got != 23*time.Minute {
		t.Fatalf("default: %v, want 23m", got)
	}
	o := Options{Replica: replica.Options{FetchOptions: func(fo *fetch.Options) {
		fo.MaxAttempts, fo.APITotalTimeout, fo.RetryAfterBudget = 2, 10*time.Second, time.Minute
	}}}
	if got := stuckAfterFor(o); got != 2*(10*time.Second+time.Minute)+time.Minute {
		t.Fatalf("with the client's limits set: %v", got)
	}
	if got := stuckAfterFor(Options{StuckAfter: time.Second}); got != time.Second {
		t.Fatalf("StuckAfter set: %v", got)
	}
}
