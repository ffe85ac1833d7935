package replica

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// commits is how many commits the file has made (its commit log's last
// sequence number).
func commits(tb testing.TB, r *Replica) int64 {
	tb.Helper()
	var n int64
	if err := r.db.SQL().QueryRowContext(context.Background(), "SELECT coalesce(max(seq), 0) FROM _ploti.commit_log").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// countsFileCommits skips a test that counts commits on another backend:
// the count is the DuckDB file's commit log (a database keeps none); the
// walk groups pages there too, and the other tests run it.
func countsFileCommits(tb testing.TB) {
	tb.Helper()
	if testBackend != "duckdb" {
		tb.Skip("counts commits by the DuckDB file's commit log, which " + testBackend + " does not keep")
	}
}

// The walk commits the pages it reads ahead in one transaction, bounded
// by Options.BatchEvents: six pages of a merge each are one commit (with
// the run's row), against six or more at a transaction a page, and the
// tables, the counts and the cursor are the same both ways. The sync
// leaves no WAL behind, the replica still open.
func TestSync_GroupsPagesInOneTransaction(t *testing.T) {
	countsFileCommits(t)
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	page := func(o *Options) { o.PageSize = 1 }
	grouped := mustOpen(t, em, sub, "", page)
	alone := mustOpen(t, em, sub, "", page, func(o *Options) { o.BatchEvents = 1 })
	mustSync(t, grouped)
	mustSync(t, alone)
	for round := 1; round <= 3; round++ {
		_, err := em.Publish(ctx, "ds_permits", permits(round))
		must(t, err)
		_, err = em.Publish(ctx, "ds_parcels", parcels(round))
		must(t, err)
	}
	var results [2]SyncResult
	var made [2]int64
	for i, r := range []*Replica{grouped, alone} {
		before := commits(t, r)
		results[i] = mustSync(t, r)
		made[i] = commits(t, r) - before
		// The walk's commits gathered in the WAL, and its end
		// checkpointed them: a replica kept open (Run) leaves none.
		if fi, err := os.Stat(r.db.Path() + ".wal"); err == nil && fi.Size() > 0 {
			t.Fatalf("a WAL of %d bytes is left after the sync", fi.Size())
		}
		assertMatchesTruth(t, r, em, "ds_permits", 4)
		assertMatchesTruth(t, r, em, "ds_parcels", 4)
	}
	if results[0].ChangesMerged != 6 || results[1].ChangesMerged != 6 || results[0].EventsSeen != results[1].EventsSeen ||
		results[0].EventsApplied != results[1].EventsApplied || results[0].Cursor != results[1].Cursor {
		t.Fatalf("grouped %+v, a transaction a page %+v: want the same, six merges", results[0], results[1])
	}
	if made[0] != 1 || made[1] < 6 {
		t.Fatalf("commits of the walk: %d grouped, %d a transaction a page; want 1 and at least 6", made[0], made[1])
	}
}

// A merge that fails in a transaction holding several pages makes the
// walk apply those pages again, a transaction a page with each merge on
// its own: the merges of the pages before it, uncommitted when it
// failed, are merged and counted once, and only the failing dataset
// fails.
func TestSync_RetryOfAGroupAppliesItsPagesAgain(t *testing.T) {
	countsFileCommits(t)
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", fastRetries, func(o *Options) { o.PageSize = 1 })
	mustSync(t, r)
	for round := 1; round <= 2; round++ {
		_, err := em.Publish(ctx, "ds_parcels", parcels(round))
		must(t, err)
		_, err = em.Publish(ctx, "ds_permits", permits(round))
		must(t, err)
	}
	_, err := em.Publish(ctx, "ds_parcels", parcels(3))
	must(t, err)
	// ds_permits v3, the fourth page: a changes file with a repeated id,
	// refused in the shared transaction.
	must(t, em.SpoilFileQuery(ctx, "ds_permits", 3, "changes", 0,
		"SELECT * FROM original UNION ALL (SELECT * FROM original ORDER BY _ploti_record_id LIMIT 1)"))
	before := commits(t, r)
	res, err := r.Sync(ctx)
	if !errors.Is(err, ErrPartial) {
		t.Fatalf("sync: %v, want ErrPartial", err)
	}
	if len(res.Failed) != 1 || res.Failed[0] != "ds_permits" || res.ChangesMerged != 4 || res.EventsFailed != 1 || res.EventsSeen != 5 {
		t.Fatalf("%+v: want ds_permits failed, four merges and five events counted once", res)
	}
	if n := commits(t, r) - before; n < 5 {
		t.Fatalf("%d commits: the pages were not applied again one by one", n)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 4)
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusFailed || d.Version != 2 {
		t.Fatalf("ds_permits: %s v%d, want failed at v2", d.Status, d.Version)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
}
