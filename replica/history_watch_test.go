package replica

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// assertWatchedHistory compares a watched dataset's history as of each
// version the replica held with the emulator's WatchTruth of the syncs up
// to it.
func assertWatchedHistory(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID string, synced []int) {
	tb.Helper()
	ctx := context.Background()
	d := datasetRow(tb, r, datasetID)
	at := publishedTimes(tb, r, datasetID)
	for i, v := range synced {
		truth, err := em.WatchTruth(ctx, datasetID, synced[:i+1])
		if err != nil {
			tb.Fatalf("truth of %s %v: %v", datasetID, synced[:i+1], err)
		}
		asOf := "(" + asOfQuery(r, d, v) + ")"
		if extra, missing := diffRows(tb, r.DB(), asOf, "read_parquet("+storage.Literal(truth)+")"); extra != 0 || missing != 0 {
			tb.Fatalf("%s as of v%d (syncs %v): %d rows not in the truth, %d of it missing", datasetID, v, synced[:i+1], extra, missing)
		}
		// As of its promotedAt, when no later version synced shares it.
		t, ok := at[v]
		if !ok || i < len(synced)-1 && at[synced[i+1]].Equal(t) {
			continue
		}
		q := fmt.Sprintf("SELECT * FROM history.%s(%s)", storage.Ident(d.Table+"_at"), storage.Literal(t.UTC().Format(time.RFC3339Nano)))
		if extra, missing := diffRows(tb, r.DB(), "("+withGeometry(r, d, q)+")", "read_parquet("+storage.Literal(truth)+")"); extra != 0 || missing != 0 {
			tb.Fatalf("%s at %s (v%d): %d rows not in the truth, %d of it missing", datasetID, t.UTC().Format(time.RFC3339), v, extra, missing)
		}
	}
	if _, ok := at[synced[len(synced)-1]]; !ok {
		tb.Fatalf("%s: the history knows no promotedAt of v%d", datasetID, synced[len(synced)-1])
	}
}

// "versions of watched datasets are Ploti's own numbers: marks and history
// must work for them too": merges one version at a time, renames, a
// catch-up of two versions at once, and a whole read.
func TestHistory_WatchedDataset(t *testing.T) {
	onlyInAFile(t, "history")
	ctx := context.Background()
	em := mustEmulator(t)
	first := seedWatched(t, em, 30)
	r := mustOpenWatches(t, em, "", func(o *Options) { o.History = []string{HistoryAll} })
	mustSync(t, r)
	em.Advance(time.Hour)
	synced := []int{first}
	must(t, r.Advance(ctx, "agent", mustChanges(t, r, "agent")))
	sync := func(what string) {
		t.Helper()
		mustSync(t, r)
		em.Advance(time.Hour) // the next version its own promotedAt
		synced = append(synced, datasetRow(t, r, dsWatched).Version)
		t.Run(what, func(t *testing.T) {
			assertWatchedHistory(t, r, em, dsWatched, synced)
			assertWatchedDiffs(t, r, em, dsWatched, synced)
		})
	}
	mustPublishRows(t, em, dsWatched, watchRows(1, 30))
	sync("merge")
	var old string
	must(t, r.DB().QueryRow("SELECT _ploti_record_id FROM main."+storage.Ident(datasetRow(t, r, dsWatched).Table)+" WHERE k = 'k0020'").Scan(&old))
	mustPublishRows(t, em, dsWatched, watchRows(2, 30), emulator.WithRenames(old))
	sync("renames")
	mustPublishRows(t, em, dsWatched, watchRows(3, 30))
	mustPublishRows(t, em, dsWatched, watchRows(4, 30))
	sync("two versions at once")
	mustPublishRows(t, em, dsWatched, watchRows(5, 30), emulator.WithChangeLog("full_refresh"))
	sync("read whole")

	// The renamed record's story goes on under its new id.
	story, err := r.Story(ctx, dsWatched, old)
	must(t, err)
	if n := len(story); n < 2 || story[0].RecordID != old || story[n-1].RecordID == old {
		t.Fatalf("story of %s: %+v", old, story)
	}
	// The mark reads the history: what changed since the first version.
	cs := mustChanges(t, r, "agent")
	dc := datasetChangesOf(t, cs, dsWatched)
	if !dc.FromHistory || dc.FromVersion != first || dc.ToVersion != synced[len(synced)-1] || dc.Counts.Renamed != 1 || dc.Counts.Added == 0 || dc.Counts.Removed == 0 {
		t.Fatalf("changes of a watched dataset since v%d: %+v", first, dc.Counts)
	}
	df, err := r.Diff(ctx, dsWatched, first, synced[len(synced)-1])
	must(t, err)
	if len(df.Changes) != len(dc.Changes) {
		t.Fatalf("the mark's %d changes and the diff's %d differ", len(dc.Changes), len(df.Changes))
	}
}

// A watched dataset's history across its schema changes (docs/wire.md 9,
// reading 5): a column added (merged), one removed and one retyped (each
// read whole); as of every version and between every two, the truths'.
func TestHistory_WatchedColumns(t *testing.T) {
	onlyInAFile(t, "history")
	em := mustEmulator(t)
	first := seedWatched(t, em, 30)
	r := mustOpenWatches(t, em, "", func(o *Options) { o.History = []string{HistoryAll} })
	mustSync(t, r)
	em.Advance(time.Hour)
	synced := []int{first}
	sync := func(what string, merged bool) {
		t.Helper()
		res := mustSync(t, r)
		em.Advance(time.Hour) // the next version its own promotedAt
		if merged && res.WatchMerges != 1 || !merged && res.WatchReloads != 1 {
			t.Fatalf("%s: %+v", what, res)
		}
		synced = append(synced, datasetRow(t, r, dsWatched).Version)
		t.Run(what, func(t *testing.T) {
			assertWatchedHistory(t, r, em, dsWatched, synced)
			assertWatchedDiffs(t, r, em, dsWatched, synced)
		})
	}
	cols := append(watchCols(), emulator.Column{Name: "units", Type: "integer"})
	rows := watchRows(1, 30)
	for i, row := range rows {
		if i%4 == 0 {
			row["units"] = int64(i)
		}
	}
	mustPublishRows(t, em, dsWatched, rows, emulator.WithSchema(cols, []string{"k"}))
	sync("minor", true)
	fewer := watchRows(2, 30)
	for _, row := range fewer {
		delete(row, "j")
	}
	mustPublishRows(t, em, dsWatched, fewer, emulator.WithSchema(watchCols()[:len(watchCols())-1], []string{"k"}), emulator.SkipReview())
	sync("major, a column removed", false)
	retyped := watchCols()[:len(watchCols())-1]
	retyped[4] = emulator.Column{Name: "d", Type: "string"} // decimal to string
	rows = watchRows(3, 30)
	for _, row := range rows {
		delete(row, "j")
		row["d"] = fmt.Sprintf("d=%v", row["d"])
	}
	mustPublishRows(t, em, dsWatched, rows, emulator.WithSchema(retyped, []string{"k"}), emulator.SkipReview())
	sync("major, a column retyped", false)
}
