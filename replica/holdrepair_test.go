package replica

import (
	"context"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// feed-events.txt on feed.dataset.delayed: "version is the version you
// hold, which stays current meanwhile". A dataset that failed on that very
// version, and that the next sync repairs by loading it, still waits for
// Ploti's review of the next: the repair keeps the server hold and its
// reason (the crash soak found it lost).
func TestSync_RepairKeepsPlotisHoldOnTheNextVersion(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	rel, err := em.Publish(ctx, "ds_permits", permits(2), emulator.Hold("data_check"))
	must(t, err)
	if !rel.Held {
		t.Fatalf("version 3 should be held: %+v", rel)
	}
	em.FailNext("GET /v1/feeds/datasets/ds_permits/versions/2", 400, 1) // a permanent failure: the dataset fails at v1
	if _, err := r.Sync(ctx); err == nil {
		t.Fatal("the first sync should fail on ds_permits")
	}
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusFailed || d.Version != 1 {
		t.Fatalf("after the failure: %s v%d, want failed at v1", d.Status, d.Version)
	}
	mustSync(t, r) // repairs: loads the current version, 2
	d := datasetRow(t, r, "ds_permits")
	hs := holdsOf(t, r, "ds_permits")
	if d.Version != 2 || d.Status != storage.StatusCurrent || d.StatusReason != "data_check" ||
		len(hs) != 1 || hs[0].Kind != storage.HoldServer || hs[0].Version != 2 {
		t.Fatalf("after the repair: %s v%d (%q), holds %+v; want current at v2 with Ploti's data_check hold on the next", d.Status, d.Version, d.StatusReason, hs)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
}
