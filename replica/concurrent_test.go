package replica

import (
	"context"
	"sync"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Two goroutines call Sync on one Replica at once (a webhook handler and a
// poller in a Go service). The package doc: "A dataset that fails (bad
// file, bad rows) keeps its last good version, is marked failed": a sync
// that raced another one marked datasets failed that had neither, with
// reasons such as "changes file does not fit the held version: added id
// … is already held" or a transaction conflict, or ErrPartial. Syncs of
// one Replica now run one at a time, and both end caught up.
func TestSync_TwoGoroutinesAtOnceFailNoDataset(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	version := 1
	for round := 0; round < 3; round++ {
		for range 3 {
			version++
			_, err := em.Publish(ctx, "ds_permits", permits(version))
			must(t, err)
			_, err = em.Publish(ctx, "ds_parcels", parcels(version))
			must(t, err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = r.Sync(ctx)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: sync %d of two at once: %v", round, i, err)
			}
		}
		for _, id := range []string{"ds_permits", "ds_parcels"} {
			if d := datasetRow(t, r, id); d.Status != storage.StatusCurrent || d.Version != version {
				t.Fatalf("round %d: after two syncs at once %s is %s at v%d (%s), want current at v%d", round, id, d.Status, d.Version, d.StatusReason, version)
			}
			assertMatchesTruth(t, r, em, id, version)
		}
	}
}
