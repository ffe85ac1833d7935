package replica

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// _ploti.applied_events keeps the ids of the events Ploti still keeps
// (storage.AppliedEventsKept): a sync past that after the one that
// applied some events deletes their ids, and keeps the later ones.
func TestSync_prunesAppliedEventsPastTheLogsRetention(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	r := mustOpen(t, em, sub, "", func(o *Options) { o.Now = func() time.Time { return time.Unix(0, now.Load()) } })
	mustSync(t, r) // a bootstrap: no event applied
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	mustSync(t, r)
	first := appliedEvents(t, r)
	if first == 0 {
		t.Fatal("the first sync recorded no applied event")
	}
	now.Add(int64(storage.AppliedEventsKept - time.Hour))
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	mustSync(t, r)
	second := appliedEvents(t, r)
	if second <= first {
		t.Fatalf("applied events %d, then %d: the second sync's were not added, or the first's pruned too soon", first, second)
	}
	now.Add(int64(2 * time.Hour))
	mustSync(t, r)
	if got := appliedEvents(t, r); got != second-first {
		t.Fatalf("%d applied events after the first sync's aged past the log's retention, want %d (the second sync's)", got, second-first)
	}
}

func appliedEvents(tb testing.TB, r *Replica) int {
	tb.Helper()
	var n int
	must(tb, r.DB().QueryRowContext(context.Background(), "SELECT count(*) FROM _ploti.applied_events").Scan(&n))
	return n
}
