package replica

import (
	"context"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// feed-events.txt: feed.dataset.added "When it is null, the dataset has no
// released version yet, and its first version arrives as
// feed.dataset.resync_required with reason first_version"; and
// subscriptions-manifest-files.txt: "A dataset's files are built only once
// a subscription includes it". A dataset whose source published twice
// while no subscription included it joins a subscription the replica
// already follows: the log brings added (null) then resync_required
// first_version, and the replica holds that version, matching Ploti's rows.
func TestDocRule_AddedWithVersionNullThenFirstVersion(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	em.AddPlace(emulator.Place{ID: "fl-osceola", Name: "Osceola County, FL", Kind: "county", State: "fl"})
	cols := []emulator.Column{{Name: "case_no", Type: "string"}, {Name: "status", Type: "string"}}
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_cases", Title: "Cases", PlaceID: "fl-osceola",
		KeyColumns: []string{"case_no"}, Columns: cols}))
	for round := 0; round < 2; round++ {
		_, err := em.Publish(ctx, "ds_cases", []emulator.Row{{"case_no": "C-1", "status": "open"},
			{"case_no": "C-2", "status": []string{"open", "shut"}[round]}})
		must(t, err)
	}
	before := len(em.Events(sub))
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange", "fl-seminole", "fl-osceola"}}))
	evs := em.Events(sub)[before:]
	if len(evs) != 2 || evs[0].Type != "feed.dataset.added" || evs[0].Data["version"] != nil ||
		evs[1].Type != "feed.dataset.resync_required" || evs[1].Data["reason"] != "first_version" {
		t.Fatalf("emulator: want added (version null) then resync_required first_version, got %+v", evs)
	}
	res := mustSync(t, r)
	d := datasetRow(t, r, "ds_cases")
	if d.Status != storage.StatusCurrent || d.Version != 2 || res.SnapshotsLoaded != 1 {
		t.Fatalf("after the sync: %s v%d (%s), %+v; want current at v2, one snapshot loaded", d.Status, d.Version, d.StatusReason, res)
	}
	assertMatchesTruth(t, r, em, "ds_cases", 2)
}
