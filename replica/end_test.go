package replica

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// walSize is the size of the file's write-ahead log, 0 when there is none.
func walSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path + ".wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// A sync's last commit holds its last page's data, its cursor and its end
// (last sync time, the run's row), and a large one is checkpointed as it
// commits (storage.CheckpointThreshold): after a sync that merged a large
// changes file the WAL is empty, with nothing written after the data.
func TestSync_LastCommitEndsTheSyncAndCheckpoints(t *testing.T) {
	em := mustEmulator(t)
	ctx := context.Background()
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_permits", Title: "Permits", PlaceID: "fl-orange", Topic: "development-activity",
		KeyColumns: []string{"permit"}, Columns: []emulator.Column{
			{Name: "permit", Type: "string"}, {Name: "description", Type: "string"},
			{Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
			{Name: "geometry", Type: "geometry"}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	q := `SELECT 'P-' || i AS permit, 'work at lot ' || i || ', a description long enough to weigh' AS description,
		((i + 1) * %d)::DECIMAL(14,2) AS valuation, 'POINT (' || i %% 90 || ' 1)' AS geometry FROM range(60000) t(i)`
	_, err = em.PublishQuery(ctx, "ds_permits", fmt.Sprintf(q, 10))
	must(t, err)

	path := filepath.Join(t.TempDir(), "replica.duckdb")
	r := mustOpen(t, em, sub, path)
	mustSync(t, r)
	if walSize(t, path) == 0 {
		// The bootstrap checkpoints after its swap, then commits its end
		// on its own: the WAL holds that small commit.
		t.Fatal("no WAL after the bootstrap's small last commit: the check below could not fail")
	}
	rel, err := em.PublishQuery(ctx, "ds_permits", fmt.Sprintf(q, 11)) // every row changed
	must(t, err)
	if rel.Changed != 60000 {
		t.Fatalf("release = %+v", rel)
	}
	res := mustSync(t, r)
	if res.ChangesMerged != 1 {
		t.Fatalf("sync = %+v, want one merge", res)
	}
	if n := walSize(t, path); n != 0 {
		t.Fatalf("WAL is %d bytes after a sync that merged 60000 rows: something committed after the merge's checkpoint", n)
	}
	var result, cursorTo, cursor string
	var finished, last bool
	if err := r.DB().QueryRowContext(ctx, `SELECT result, cursor_to, finished_at IS NOT NULL FROM _ploti.sync_runs ORDER BY run_id DESC LIMIT 1`).
		Scan(&result, &cursorTo, &finished); err != nil {
		t.Fatal(err)
	}
	if err := r.DB().QueryRowContext(ctx, `SELECT cursor, last_sync_at IS NOT NULL FROM _ploti.subscription`).Scan(&cursor, &last); err != nil {
		t.Fatal(err)
	}
	if result != "ok" || !finished || cursorTo != res.Cursor || cursor != res.Cursor || !last {
		t.Fatalf("run %q finished %v cursor_to %q; subscription cursor %q last sync %v; sync cursor %q", result, finished, cursorTo, cursor, last, res.Cursor)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
}

// Options.KeepChanges keeps the rows of each dataset's latest merged
// versions in _ploti.changes and drops the older ones; 0 keeps them all.
func TestSync_KeepChangesPrunesTheLog(t *testing.T) {
	for _, keep := range []int{0, 2} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			em := mustEmulator(t)
			ctx := context.Background()
			sub, permits, parcels := seedTwo(t, em)
			r := mustOpen(t, em, sub, "", func(o *Options) { o.KeepChanges = keep })
			mustSync(t, r)
			_, err := em.Publish(ctx, "ds_parcels", parcels(1))
			must(t, err)
			for round := 1; round <= 3; round++ { // versions 2, 3 and 4 of the permits
				_, err := em.Publish(ctx, "ds_permits", permits(round))
				must(t, err)
			}
			if res := mustSync(t, r); res.ChangesMerged != 4 {
				t.Fatalf("sync = %+v, want 4 merges", res)
			}
			rows, err := r.DB().QueryContext(ctx, `SELECT dataset_id || ' v' || version FROM _ploti.changes GROUP BY 1 ORDER BY 1`)
			must(t, err)
			defer rows.Close()
			var got []string
			for rows.Next() {
				var s string
				must(t, rows.Scan(&s))
				got = append(got, s)
			}
			want := []string{"ds_parcels v2", "ds_permits v2", "ds_permits v3", "ds_permits v4"}
			if keep == 2 {
				want = []string{"ds_parcels v2", "ds_permits v3", "ds_permits v4"}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("_ploti.changes holds %v, want %v", got, want)
			}
			// The view's sets: a pruned version's set goes with its rows.
			var sets int
			must(t, r.DB().QueryRowContext(ctx, `SELECT count(*) FROM _ploti.change_sets`).Scan(&sets))
			if sets != len(want) {
				t.Fatalf("_ploti.change_sets holds %d sets for %d logged versions", sets, len(want))
			}
		})
	}
}
