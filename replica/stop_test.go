package replica

import (
	"context"
	"errors"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// TestSync_stop guards StopSync ("SIGINT/SIGTERM finishes the current
// transaction"): a load under way when StopSync is called commits, nothing
// after it starts, and the next Sync finishes the job.
func TestSync_stop(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	path := freshReplica(t)
	loads := 0
	var r *Replica
	r = mustOpen(t, em, sub, path, func(o *Options) {
		// A spool of one byte holds one dataset at a time, so each load is
		// a transaction of its own (ready datasets otherwise share one).
		o.SpoolLimit = 1
		o.Progress = func(p Progress) {
			if p.Phase == "load" {
				loads++
				r.StopSync() // during the first snapshot load
			}
		}
	})
	res, err := r.Sync(context.Background())
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Sync = %v, want ErrStopped", err)
	}
	if got, want := res.SnapshotsLoaded, 1; got != want || loads != 1 {
		t.Fatalf("snapshots loaded = %d (loads started %d), want %d: the load under way finishes, no other starts", got, loads, want)
	}
	st, err := r.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Cursor != "" || st.LastRun == nil || st.LastRun.Result != "stopped" {
		t.Fatalf("after the stop: cursor %q, last run %+v; want no cursor and a stopped run", st.Cursor, st.LastRun)
	}
	// The dataset the stopped bootstrap did not load is listed
	// as pending, never silently missing.
	byStatus := map[string]string{}
	for _, d := range st.Datasets {
		byStatus[d.Status] += d.Reason
	}
	if len(st.Datasets) != 2 || byStatus[storage.StatusCurrent] != "" || byStatus[storage.StatusPending] != storage.ReasonNotLoadedYet {
		t.Fatalf("after the stop, status should list one dataset current and the other pending (%s): %+v", storage.ReasonNotLoadedYet, st.Datasets)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = mustOpen(t, em, sub, path)
	res = mustSync(t, r)
	if got, want := res.SnapshotsLoaded, 1; got != want {
		t.Fatalf("second sync loaded %d snapshots, want %d (the first one stays)", got, want)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
}
