package replica

import (
	"context"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// docs/wire.md 8.2: "a `resync_required` with reason `schema_changed` after a
// MINOR change (a reload needed for another reason) reloads under every
// policy." feed-events.txt: "A schema_changed names the same version as the
// event that follows it: an updated for a MINOR change, or a
// resync_required for a MAJOR change or a reload for another reason." Here
// the other reason is a re-release (previous_unavailable), and the version
// only adds a column: whatever the hold policy, the dataset reloads to the
// new version and nothing is held for review.
func TestDocRule_MinorResyncReloadsUnderEveryPolicy(t *testing.T) {
	for _, policy := range []string{"", apply.OnMajorHold, apply.OnMajorReload} {
		name := policy
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			em := mustEmulator(t)
			sub, permits, _ := seedTwo(t, em)
			r := mustOpen(t, em, sub, "", func(o *Options) { o.OnMajor = policy })
			mustSync(t, r)
			must(t, em.ReRelease("ds_permits", 1))
			cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
			rel, err := em.Publish(ctx, "ds_permits", withUnits(permits(1), 4), emulator.WithSchema(cols, []string{"permit"}))
			must(t, err)
			if rel.Held || rel.SchemaBump != "minor" || !rel.ResyncRequired || rel.ResyncReason != "schema_changed" {
				t.Fatalf("emulator: want a released MINOR change sent as resync_required schema_changed, got %+v", rel)
			}
			res := mustSync(t, r)
			d := datasetRow(t, r, "ds_permits")
			hs := holdsOf(t, r, "ds_permits")
			if d.Status != storage.StatusCurrent || d.Version != rel.Version || len(hs) != 0 {
				t.Fatalf("after a MINOR resync_required: %s v%d (%s), holds %+v; want current at v%d with no hold",
					d.Status, d.Version, d.StatusReason, hs, rel.Version)
			}
			if res.SnapshotsLoaded != 1 {
				t.Fatalf("the resync should load the version's snapshot: %+v", res)
			}
			if d.SchemaVersion != rel.SchemaVersion || d.Columns[len(d.Columns)-1].Name != "units" {
				t.Fatalf("registry: schema %s columns %v, want %s with units last", d.SchemaVersion, d.Columns, rel.SchemaVersion)
			}
			assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
		})
	}
}

// feed-events.txt, feed.dataset.delayed: "since is when the held version was
// built." and "It is sent once per held version, including to a
// subscription that adds the dataset while it waits." The hold kept for a
// dataset added hours after its version was held says when it was built,
// not when the delayed event was sent.
func TestDocRule_DelayedSinceIsBuildTimeForALateSubscriber(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	em.AddPlace(emulator.Place{ID: "fl-lake", Name: "Lake County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_lake", Title: "Lake permits", PlaceID: "fl-lake", KeyColumns: []string{"permit"}, Columns: permitCols}))
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	rows := []emulator.Row{{"permit": "L-1", "valuation": "1.00", "geometry": "POINT (1 2)"}, {"permit": "L-2", "valuation": "2.00", "geometry": "POINT (3 4)"}}
	_, err := em.Publish(ctx, "ds_lake", rows)
	must(t, err)
	built := em.Now()
	rel, err := em.Publish(ctx, "ds_lake", rows[:1], emulator.Hold("row_drop"))
	must(t, err)
	if !rel.Held {
		t.Fatalf("emulator did not hold: %+v", rel)
	}
	em.Advance(5 * time.Hour)
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange", "fl-seminole", "fl-lake"}}))
	var delayed *emulator.Event
	for _, ev := range em.Events(sub) {
		if ev.Type == "feed.dataset.delayed" && ev.DatasetID == "ds_lake" {
			delayed = &ev
		}
	}
	if delayed == nil || !delayed.Timestamp.After(built) {
		t.Fatalf("emulator: want a delayed for ds_lake sent after the build, got %+v", delayed)
	}
	mustSync(t, r)
	hs := holdsOf(t, r, "ds_lake")
	if len(hs) != 1 || hs[0].Kind != storage.HoldServer || hs[0].Version != 1 || hs[0].Reason != "data_check" || hs[0].Since == nil {
		t.Fatalf("holds after the dataset was added while it waits: %+v", hs)
	}
	if want := built.Truncate(time.Second); !hs[0].Since.Equal(want) {
		t.Fatalf("hold since %s, want the build time %s (the event was sent at %s)", hs[0].Since.UTC(), want, delayed.Timestamp)
	}
	d := datasetRow(t, r, "ds_lake")
	if d.Status != storage.StatusCurrent || d.StatusReason != "data_check" {
		t.Fatalf("ds_lake: %s (%s), want current with the delay's reason", d.Status, d.StatusReason)
	}
	assertMatchesTruth(t, r, em, "ds_lake", 1)
}

// docs/wire.md 8.4: "`feed.dataset.delayed` for a dataset the subscriber
// holds no version of carries `version` null: the dataset stays `pending`
// with a server hold." Once Ploti releases the version it loads as the
// first version and the hold ends.
func TestDocRule_DelayedWithNoVersionStaysPending(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_new", Title: "New", PlaceID: "fl-orange", KeyColumns: []string{"permit"}, Columns: permitCols}))
	mustSync(t, r)
	rel, err := em.Publish(ctx, "ds_new", []emulator.Row{{"permit": "N-1", "valuation": "1.00", "geometry": "POINT (1 2)"}},
		emulator.Hold("identity_unresolved"))
	must(t, err)
	if !rel.Held {
		t.Fatalf("emulator did not hold the first version: %+v", rel)
	}
	mustSync(t, r)
	d := datasetRow(t, r, "ds_new")
	if d.Status != storage.StatusPending || d.StatusReason != "processing" || d.Version != 0 {
		t.Fatalf("ds_new after delayed with version null: %s v%d (%s), want pending (processing)", d.Status, d.Version, d.StatusReason)
	}
	hs := holdsOf(t, r, "ds_new")
	if len(hs) != 1 || hs[0].Kind != storage.HoldServer || hs[0].Reason != "processing" {
		t.Fatalf("holds after delayed with version null: %+v, want one server hold (processing)", hs)
	}
	var nullVersion int
	must(t, r.DB().QueryRow("SELECT count(*) FROM _ploti.holds WHERE dataset_id = 'ds_new' AND version IS NULL").Scan(&nullVersion))
	if nullVersion != 1 {
		t.Fatalf("the server hold's version should be NULL: %d such holds", nullVersion)
	}

	released, err := em.ReleaseHeld("ds_new")
	must(t, err)
	mustSync(t, r)
	d = datasetRow(t, r, "ds_new")
	if hs := holdsOf(t, r, "ds_new"); d.Status != storage.StatusCurrent || d.Version != released.Version || len(hs) != 0 {
		t.Fatalf("after release: %s v%d (%s), holds %+v; want current at v%d with no hold", d.Status, d.Version, d.StatusReason, hs, released.Version)
	}
	assertMatchesTruth(t, r, em, "ds_new", 1)
}

// schemas-and-holds.txt: "A MINOR change comes with a version that has
// changes to apply, compared over the columns both versions have. A
// changed row carries the new column. Records that did not change keep the
// value your table gives a new column, usually null, until you reload."
// The new column here sits between two old ones in Ploti's schema: the
// version is still merged (the table gains the column at its end, decision
// 60), unchanged rows keep null, and its changes are logged. It used to be
// loaded from the snapshot, filling every row, with nothing in
// _ploti.changes.
func TestDocRule_AMinorColumnAddedMidSchemaIsMerged(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	cols := append(append([]emulator.Column{}, permitCols[:2]...), emulator.Column{Name: "units", Type: "integer"})
	cols = append(cols, permitCols[2:]...)
	rel, err := em.Publish(ctx, "ds_permits", withUnits(permits(1), 2), emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	if rel.SchemaBump != "minor" || rel.Held || rel.ResyncRequired {
		t.Fatalf("emulator: want a released MINOR change with changes to apply, got %+v", rel)
	}
	res := mustSync(t, r)
	if res.ChangesMerged != 1 || res.SnapshotsLoaded != 0 {
		t.Fatalf("a MINOR change comes with changes to apply: want one merge, got %+v", res)
	}
	var logged, filled int64
	must(t, r.DB().QueryRow("SELECT count(*) FROM _ploti.changes WHERE dataset_id = 'ds_permits' AND version = ?", rel.Version).Scan(&logged))
	if want := rel.Added + rel.Changed + rel.Removed; logged != want {
		t.Fatalf("_ploti.changes holds %d rows for v%d, want its %d changes", logged, rel.Version, want)
	}
	must(t, r.DB().QueryRow("SELECT count(*) FILTER (WHERE units IS NOT NULL) FROM ds_permits").Scan(&filled))
	if filled > rel.Added+rel.Changed {
		t.Fatalf("%d rows have units, more than the %d rows the changes file brings", filled, rel.Added+rel.Changed)
	}
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
	d := datasetRow(t, r, "ds_permits")
	if d.SchemaVersion != rel.SchemaVersion || len(d.Columns) != len(cols) || d.Columns[len(d.Columns)-1].Name != "units" {
		t.Fatalf("registry: schema %s columns %v, want %s with units last, as in the table", d.SchemaVersion, d.Columns, rel.SchemaVersion)
	}
	// verify matches columns by name: the table is the version.
	if rep, err := r.Verify(ctx, VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify after the merge: %v %+v", err, rep)
	}
	// A next version of the same schema merges too.
	rel, err = em.Publish(ctx, "ds_permits", withUnits(permits(2), 3), emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	if res := mustSync(t, r); res.ChangesMerged != 1 || res.SnapshotsLoaded != 0 {
		t.Fatalf("the next version of the same schema: want one merge, got %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
}

// feed-events.txt: "On a MAJOR change, hold the dataset at its current
// version until someone on your side has reviewed it." A dataset held here
// for review that leaves the subscription and comes back at that version
// is held for review again (its removed ended the hold): an added loads
// its version's snapshot only once the MAJOR change is reviewed, as the
// other reloads do (a repair, a rebootstrap). Release then loads it.
func TestDocRule_AReviewIsNotSkippedByLeavingAndComingBack(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	cols, rows := droppingFinal(permits(1))
	major, err := em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusHeld {
		t.Fatalf("a MAJOR change: want held for review, got %s", d.Status)
	}
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-seminole"}}))
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusRemoved || d.Version != 1 {
		t.Fatalf("after leaving: %s v%d, want removed at v1", d.Status, d.Version)
	}
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange", "fl-seminole"}}))
	mustSync(t, r)
	d := datasetRow(t, r, "ds_permits")
	hs := holdsOf(t, r, "ds_permits")
	if d.Status != storage.StatusHeld || d.StatusReason != storage.ReasonMajorSchemaChange || d.Version != 1 || len(hs) != 1 || hs[0].Kind != storage.HoldLocal {
		t.Fatalf("back with the unreviewed MAJOR change (v%d, schema %s): %s v%d (%s) schema %s, holds %+v; want held at v1 for review",
			major.Version, major.SchemaVersion, d.Status, d.Version, d.StatusReason, d.SchemaVersion, hs)
	}
	must(t, r.Release(ctx, "ds_permits"))
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusCurrent || d.Version != major.Version {
		t.Fatalf("after release: %s v%d, want current at v%d", d.Status, d.Version, major.Version)
	}
	assertMatchesTruth(t, r, em, "ds_permits", major.Version)
}

// schemas-and-holds.txt: "A newer version of the dataset replaces a held
// one, so a source that is fixed unblocks the feed", and "Each version's
// schema change is measured from the schema of the last version released
// before it". A version held for a MAJOR change (Ploti's delay) is
// replaced by a newer one with only a MINOR change over the version held
// here: the replica merges it, Ploti's hold ends with it, and nothing is
// held for review.
func TestDocRule_ANewerVersionReplacesAHeldOne(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	cols, rows := droppingFinal(permits(1))
	held, err := em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	if !held.Held {
		t.Fatalf("emulator: want the MAJOR change held by Ploti, got %+v", held)
	}
	mustSync(t, r)
	if hs := holdsOf(t, r, "ds_permits"); len(hs) != 1 || hs[0].Kind != storage.HoldServer || hs[0].Reason != "schema_review" {
		t.Fatalf("holds after delayed: %+v", hs)
	}
	fixed := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
	rel, err := em.Publish(ctx, "ds_permits", withUnits(permits(2), 3), emulator.WithSchema(fixed, []string{"permit"}))
	must(t, err)
	if rel.Held || rel.SchemaBump != "minor" || rel.PreviousVersion == nil || *rel.PreviousVersion != 1 {
		t.Fatalf("emulator: want a released MINOR change from version 1, got %+v", rel)
	}
	res := mustSync(t, r)
	if res.ChangesMerged != 1 || len(res.HeldForReview) != 0 {
		t.Fatalf("the newer version: want one merge and no review, got %+v", res)
	}
	d := datasetRow(t, r, "ds_permits")
	if hs := holdsOf(t, r, "ds_permits"); d.Status != storage.StatusCurrent || d.StatusReason != "" || len(hs) != 0 {
		t.Fatalf("after the newer version: %s (%s), holds %+v; want current with no hold", d.Status, d.StatusReason, hs)
	}
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
}
