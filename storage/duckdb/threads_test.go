package duckdb

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// A small merge (a few rows into a table of one row group) runs with one
// DuckDB thread; anything large in the same transaction, and every
// transaction after it, runs with the file's own count (threads.go, issue
// 18: DuckDB's idle workers cost the catch-up of 1,800 small merges a
// quarter of its time on two cores).
func TestTx_smallMergesRunOnOneThread(t *testing.T) {
	ctx := context.Background()
	db := openThreeThreads(t)
	snap := mustParquet(t, db, snapQuery)
	big := mustParquet(t, db, strings.Replace(strings.Replace(snapQuery, "range(5)", "range(200000)", 1), "'P' || i AS permit", "md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS permit", 1))
	if smallFiles([]string{big}) {
		t.Fatal("the large snapshot is small")
	}
	changes := func(id, change string) string {
		return mustParquet(t, db, "SELECT '"+id+"' AS _ploti_record_id, '"+change+"' AS _ploti_change, 'fl-orange' AS _ploti_place_id, 'P' AS permit, "+
			"1.00::DECIMAL(14,2) AS valuation, TIMESTAMPTZ '2026-03-01 00:00:00+00' AS issued, ['x'] AS tags, 'POINT (1 1)'::GEOMETRY AS geometry")
	}
	now := func(tx *storage.Tx) int {
		t.Helper()
		var n int
		q := "SELECT current_setting('threads')::INTEGER"
		var err error
		if tx != nil {
			err = tx.QueryRow(ctx, q).Scan(&n)
		} else {
			err = db.SQL().QueryRow(q).Scan(&n)
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := now(nil); got != 3 {
		t.Fatalf("threads after a load = %d, want the file's 3", got)
	}

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The table's size unknown: not small.
	if _, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", testCols, changes("r1", "changed"), -1); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 3 {
		t.Fatalf("threads in a merge into a table of unknown size = %d, want 3", got)
	}
	// More rows than one row group: not small.
	if _, err := tx.Tables().MergeDeferred(ctx, "ds", 3, "permits", testCols, changes("r2", "changed"), smallTableRows+1); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 3 {
		t.Fatalf("threads in a merge into a table past one row group = %d, want 3", got)
	}
	if _, err := tx.Tables().MergeDeferred(ctx, "ds", 4, "permits", testCols, changes("r3", "changed"), 5); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 1 {
		t.Fatalf("threads in a small merge = %d, want 1", got)
	}
	// A large load in the same transaction has them all back; a small
	// one runs on one.
	if _, err := tx.Tables().CreateSnapshot(ctx, "permits2", testCols, []string{big}); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 3 {
		t.Fatalf("threads in a large load after a small merge = %d, want 3", got)
	}
	if _, err := tx.Tables().CreateSnapshot(ctx, "permits3", testCols, []string{snap}); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 1 {
		t.Fatalf("threads in a small load = %d, want 1", got)
	}
	if _, err := eng(tx).LogSnapshotDiff(ctx, "ds3", 2, "permits3", testCols, []string{big}); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 3 {
		t.Fatalf("threads in the diff of a large snapshot = %d, want 3", got)
	}
	if _, err := tx.Tables().MergeChanges(ctx, "ds", 5, "permits", testCols, changes("r4", "changed"), 5); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 1 {
		t.Fatalf("threads in a small merge = %d, want 1", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := now(nil); got != 3 {
		t.Fatalf("threads after the commit = %d, want 3", got)
	}

	// A rollback gives them back too.
	tx, err = db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Tables().MergeChanges(ctx, "ds", 6, "permits", testCols, changes("r0", "removed"), 4); err != nil {
		t.Fatal(err)
	}
	if got := now(tx); got != 1 {
		t.Fatalf("threads in a small merge = %d, want 1", got)
	}
	tx.Rollback()
	if got := now(nil); got != 3 {
		t.Fatalf("threads after a rollback = %d, want 3", got)
	}
	var rows string
	if err := db.SQL().QueryRow("SELECT string_agg(_ploti_record_id, ' ' ORDER BY _ploti_record_id) FROM permits").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if want := "r0 r1 r2 r3 r4"; rows != want {
		t.Fatalf("rows = %s, want %s", rows, want)
	}
}

// A small merge's history, recorded in its transaction, keeps the one
// thread the merge fitted: a walk of small merges with a history does not
// switch DuckDB's threads twice a version.
func TestTx_aSmallMergesHistoryKeepsItsThread(t *testing.T) {
	ctx := context.Background()
	db := openThreeThreads(t)
	snap := mustParquet(t, db, snapQuery)
	hv := storage.HistoryVersion{DatasetID: "ds", Table: "permits", Source: storage.SourceFeed, Version: 1}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap}); err != nil {
			return err
		}
		if err := tx.PutDataset(ctx, &storage.Dataset{ID: "ds", Table: "permits", Status: storage.StatusCurrent, Version: 1, Columns: testCols}); err != nil {
			return err
		}
		return eng(tx).StartHistory(ctx, hv)
	}); err != nil {
		t.Fatal(err)
	}
	changes := mustParquet(t, db, "SELECT 'changed' AS _ploti_change, * REPLACE ('P2' AS permit) FROM ("+snapQuery+") WHERE _ploti_record_id = 'r1'")
	// historyThreads merges the small changes at version, records file in
	// the history, and reads the threads the transaction has then.
	historyThreads := func(version int, file string) (threads int) {
		t.Helper()
		if err := db.Update(ctx, func(tx *storage.Tx) error {
			if _, err := tx.Tables().MergeDeferred(ctx, "ds", version, "permits", testCols, changes, 5); err != nil {
				return err
			}
			hv.Version = version
			if err := eng(tx).MergeHistory(ctx, hv, testCols, []string{file}); err != nil {
				return err
			}
			return tx.QueryRow(ctx, "SELECT current_setting('threads')::INTEGER").Scan(&threads)
		}); err != nil {
			t.Fatal(err)
		}
		return threads
	}
	if threads := historyThreads(2, changes); threads != 1 {
		t.Fatalf("threads after a small merge's history = %d, want the merge's 1", threads)
	}
	// A large file's history has them all back, after a small merge.
	large := mustParquet(t, db, "SELECT 'added' AS _ploti_change, * REPLACE ('n' || _ploti_record_id AS _ploti_record_id) FROM ("+
		strings.Replace(strings.Replace(snapQuery, "range(5)", "range(200000)", 1), "'P' || i AS permit", "md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS permit", 1)+")")
	if smallFiles([]string{large}) {
		t.Fatal("the large changes file is small")
	}
	if threads := historyThreads(3, large); threads != 3 {
		t.Fatalf("threads in a large file's history = %d, want the file's 3", threads)
	}
}

// openThreeThreads opens a new file whose DuckDB has three threads of its
// own, closed with the test.
func openThreeThreads(t *testing.T) *storage.DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "t.duckdb"), storage.Options{Geometry: testGeometry, Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
