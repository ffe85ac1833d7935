package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
)

// A service of its own embeds the daemon: Handler on the service's server
// beside its own route, the metrics on the service's registry, Run in the
// background. A signed delivery (polling off: nothing else starts a sync)
// brings the new version into the file, and Run returns soon after its
// context is cancelled.
func TestDaemon_embeddedInAService(t *testing.T) {
	em, sub := testEmulator(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "the service's own") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	wh, err := em.CreateWebhook(emulator.WebhookSpec{URL: srv.URL + "/hooks/ploti", SubscriptionID: sub, Description: "embedded"})
	must(t, err)
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	ropts := replica.Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, LockTimeout: 10 * time.Second}
	reg := prometheus.NewRegistry()
	d, err := New(Options{DB: db, Replica: ropts, Webhook: Webhook{Path: "/hooks/ploti", Secret: wh.Secret}, Registry: reg})
	must(t, err)
	for _, p := range []string{"/hooks/ploti", "/healthz", "/metrics"} {
		mux.Handle(p, d.Handler())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	if h := waitSyncs(t, srv.URL, 1); h.Status != "ok" {
		t.Fatalf("after the first sync: %+v", h) // a retry must not pass for the webhook's sync
	}
	publish(t, em, 2)
	if h := waitSyncs(t, srv.URL, 2); h.Status != "ok" { // the webhook's sync
		t.Fatalf("after the webhook: %+v", h)
	}
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		must(t, err)
		if took := time.Since(stopped); took > 3*time.Second {
			t.Fatalf("Run returned %s after the cancel", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the cancel")
	}
	assertHolds(t, db, ropts, 2)
	mfs, err := reg.Gather()
	must(t, err)
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "ploti_replica_syncs_total"
	}
	if !found {
		t.Fatal("the service's registry lacks the daemon's metrics")
	}
	if resp, err := http.Get(srv.URL + "/hello"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the service's own route: %v %v", resp, err)
	}
}

// waitSyncs waits (20 s at most) until at least n syncs have finished and
// none runs, as /healthz tells, and returns its answer.
func waitSyncs(t *testing.T, base string, n int) healthBody {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var h healthBody
		resp, err := http.Get(base + "/healthz")
		must(t, err)
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		must(t, err)
		if h.Syncs >= n && !h.Syncing {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d finished syncs within 20s: %+v", n, h)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertHolds opens the file and checks it holds the given version of the
// dataset, that version's marked row included.
func assertHolds(t *testing.T, db string, opts replica.Options, version int) {
	t.Helper()
	ctx := context.Background()
	r, err := replica.Open(ctx, db, opts)
	must(t, err)
	defer r.Close()
	st, err := r.Status(ctx)
	must(t, err)
	if len(st.Datasets) != 1 || st.Datasets[0].Version != version {
		t.Fatalf("the file holds %+v, want version %d of %s", st.Datasets, version, testDataset)
	}
	var n int
	q := `SELECT count(*) FROM main."` + st.Datasets[0].Table + `" WHERE status = ?`
	must(t, r.DB().QueryRowContext(ctx, q, fmt.Sprintf("changed in round %d", version)).Scan(&n))
	if n != 1 {
		t.Fatalf("version %d's changed row: %d, want 1", version, n)
	}
}
