package replica

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Done when: "after merges, reloads, id replacements, MINOR and
// MAJOR schema changes and a removal, every dataset's history equals what
// the emulator's truth says each version held". TestHistory_EveryVersion-
// MatchesTheTruth reloads on record_ids_changed, a MAJOR change under
// --on-major reload and a dataset added back; this test takes the other
// ways a dataset is reloaded: a resync with previous_unavailable, a repair
// of a failed dataset (which skips a version), a 410 on the log (the whole
// subscription reloaded from the manifest, "Reload from the subscription's
// manifest, which gives a fresh cursor"), Ploti's staff replacing ids, and
// a MAJOR change held locally and released (a reload at the pending
// version). After each, every version held is compared row by row with its
// truth, and the diff between every two with the truths' difference.
func TestHistory_ReloadsMatchTheTruth(t *testing.T) {
	onlyInAFile(t, "history")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	logs := &lockedLog{}
	r := mustOpen(t, em, sub, "", func(o *Options) {
		o.History = []string{HistoryAll}
		o.Logger = logs.logger()
	})
	held := heldVersions{}
	check := func(what string) {
		t.Helper()
		held.note(t, r)
		for id, vs := range held {
			t.Run(fmt.Sprintf("%s/%s", what, id), func(t *testing.T) { assertHistoryMatchesTruth(t, r, em, id, vs) })
		}
	}
	publish := func(id string, rows []emulator.Row, opts ...emulator.PublishOption) emulator.Release {
		t.Helper()
		em.Advance(time.Hour) // each version its own publishedAt, for the _at macro
		rel, err := em.Publish(ctx, id, rows, opts...)
		must(t, err)
		return rel
	}
	mustSync(t, r)
	publish("ds_permits", permits(1))
	publish("ds_parcels", parcels(1))
	mustSync(t, r)
	check("merges")

	// feed-events.txt: a version released again is sent as a resync.
	must(t, em.ReRelease("ds_permits", 2))
	rel := publish("ds_permits", permits(2))
	if !rel.ResyncRequired || rel.ResyncReason != "previous_unavailable" {
		t.Fatalf("emulator: want a previous_unavailable resync, got %+v", rel)
	}
	if res := mustSync(t, r); res.SnapshotsLoaded != 1 {
		t.Fatalf("want the resync reloaded: %+v", res)
	}
	check("resync")

	// A repair: the dataset fails on v4; the next sync loads the version
	// current then (v5), past the one it never held.
	publish("ds_permits", permits(3))
	em.FailNext("GET /v1/feeds/datasets/ds_permits/versions/4", 400, 1)
	if _, err := r.Sync(ctx); err == nil {
		t.Fatal("the sync should fail on ds_permits v4")
	}
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusFailed || d.Version != 3 {
		t.Fatalf("after the failure: %s v%d, want failed at v3", d.Status, d.Version)
	}
	publish("ds_permits", permits(4))
	if res := mustSync(t, r); res.SnapshotsLoaded != 1 || datasetRow(t, r, "ds_permits").Version != 5 {
		t.Fatalf("want the repair to load v5: %+v", res)
	}
	check("repair")

	// A 410 on the log: the cursor is past retention, every dataset is
	// reloaded from the manifest. The parcels' v3, which the file skips,
	// is past retention too: the reload cannot follow ids back through it
	// (decision 46), says so, and still loads.
	publish("ds_parcels", parcels(2))
	em.Advance(91 * 24 * time.Hour)
	publish("ds_parcels", parcels(3))
	publish("ds_permits", permits(5))
	if res := mustSync(t, r); !res.Bootstrapped {
		t.Fatalf("want a reload from the manifest after 410: %+v", res)
	}
	if !strings.Contains(logs.String(), `"dataset":"ds_parcels","version":3,"held":2`) {
		t.Fatalf("no warning that ds_parcels v3 is past retention:\n%s", logs)
	}
	check("410")

	// Ploti's staff replace a third of the permits' ids: the same values
	// under new ids, a renamed record to the history.
	rel, err := em.ReplaceIDs(ctx, "ds_permits", 0.3)
	must(t, err)
	if rel.ResyncReason != "record_ids_changed" {
		t.Fatalf("emulator: want record_ids_changed, got %+v", rel)
	}
	mustSync(t, r)
	check("ids replaced")

	// MAJOR, held by the replica (--on-major hold, the default), then
	// released: a reload at the pending version, a column removed.
	cols := append(slices.Clone(permitCols[:4]), permitCols[5])
	rows := permits(6)
	for _, row := range rows {
		delete(row, "final")
	}
	publish("ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusHeld {
		t.Fatalf("a MAJOR change under --on-major hold: %s v%d", d.Status, d.Version)
	}
	must(t, r.Release(ctx, "ds_permits"))
	check("major released")
	rows = permits(7)[3:]
	for _, row := range rows {
		delete(row, "final")
	}
	publish("ds_permits", rows)
	mustSync(t, r)
	check("merge after major")
}

// watchTruthRows reads a watched dataset's truth for a client that synced
// at the versions synced, each value as text the way diffRows compares
// them (timestamps as TIMESTAMPTZ, geometry as WKT, JSON normalised).
func watchTruthRows(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID string, synced []int) map[string]map[string]string {
	tb.Helper()
	path, err := em.WatchTruth(context.Background(), datasetID, synced)
	if err != nil {
		tb.Fatalf("truth of %s %v: %v", datasetID, synced, err)
	}
	truth := "read_parquet(" + storage.Literal(path) + ")"
	return textRows(tb, r.DB(), "SELECT "+comparableColumns(tb, r.DB(), truth)+" FROM "+truth)
}

// assertWatchedDiffs checks the diff between every two versions of a
// watched dataset's history against the difference of the emulator's
// truths: the records added, removed (a renamed record is its old id
// removed and its new one added, as truths see it) and changed, and each
// changed record's columns.
func assertWatchedDiffs(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID string, synced []int) {
	tb.Helper()
	truths := make([]map[string]map[string]string, len(synced))
	for i := range synced {
		truths[i] = watchTruthRows(tb, r, em, datasetID, synced[:i+1])
	}
	for i, from := range synced {
		for j := i + 1; j < len(synced); j++ {
			to := synced[j]
			df, err := r.Diff(context.Background(), datasetID, from, to)
			if err != nil {
				tb.Fatalf("diff %s v%d v%d: %v", datasetID, from, to, err)
			}
			var got kindList
			for _, c := range df.Changes {
				if c.Change == storage.ChangeRenamed {
					got = append(got, "removed "+c.PreviousRecordID, "added "+c.RecordID)
					continue
				}
				got = append(got, c.Change+" "+c.RecordID)
				if c.Change != storage.ChangeChanged {
					continue
				}
				var names, want []string
				for _, cc := range c.Columns {
					names = append(names, cc.Name)
				}
				a, b := truths[i][c.RecordID], truths[j][c.RecordID]
				for col := range b {
					if a[col] != b[col] {
						want = append(want, col)
					}
				}
				for col := range a {
					if _, ok := b[col]; !ok {
						want = append(want, col)
					}
				}
				sort.Strings(names)
				sort.Strings(want)
				if !slices.Equal(names, want) {
					tb.Fatalf("diff %s v%d v%d, record %s: columns %v changed, truths say %v", datasetID, from, to, c.RecordID, names, want)
				}
			}
			sort.Strings(got)
			if want := truthChanges(truths[i], truths[j], true); !sameKinds(got, want) {
				tb.Fatalf("diff %s v%d v%d differs from the truths': %s", datasetID, from, to, kindsDiff(got, want))
			}
		}
	}
}
