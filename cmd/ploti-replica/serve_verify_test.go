package main

import (
	"context"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// serve --verify-every runs verify on its schedule, waking a sync for it
// when no poll would, and exports the result in /metrics: a table changed
// by hand between two runs shows as a dataset that differs.
func TestServe_verifyEvery(t *testing.T) {
	w := newServeWorld(t)
	w.start(t, time.Second, "--poll", "0", "--verify-every", "300ms")
	waitMetric := func(name, labels string, want float64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for w.metric(t, name, labels) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s{%s} stays below %v", name, labels, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitMetric("ploti_replica_verify_runs_total", `result="ok"`, 1)
	if got := w.metric(t, "ploti_replica_verify_datasets", `verdict="verified"`); got != 1 {
		t.Fatalf("verified datasets: %v, want 1", got)
	}
	if w.metric(t, "ploti_replica_verify_last_run_timestamp_seconds", "") < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatal("the last verify run's time is not set")
	}
	ctx := context.Background()
	db, err := backends.Open(ctx, w.db, storage.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, "UPDATE main."+storage.Ident(serveDataset)+" SET amount = amount + 1 WHERE permit = (SELECT min(permit) FROM main."+storage.Ident(serveDataset)+")"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	waitMetric("ploti_replica_verify_runs_total", `result="differs"`, 1)
	if got := w.metric(t, "ploti_replica_verify_datasets", `verdict="differs"`); got != 1 {
		t.Fatalf("datasets that differ: %v, want 1", got)
	}
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
}
