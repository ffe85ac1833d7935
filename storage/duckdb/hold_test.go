package duckdb

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// While checkpoints are held, a small transaction's commit gathers in the
// WAL past DuckDB's 16MB and past BulkCommit of its own, another
// transaction's bulk commit is still checkpointed as it commits, and the
// hold's end checkpoints what the WAL holds and puts the threshold back.
func TestHoldCheckpoints_gathersSmallCommitsAndCheckpointsAtTheEnd(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	be := db.Engine().(*DB)
	insert := func(rows int, small bool) { insertWide(t, db, rows, small) }
	if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE t (i BIGINT, a BIGINT, b BIGINT, c BIGINT, s VARCHAR); CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	end := be.HoldCheckpoints(256_000_000)
	// 120,000 rows are 5.8 MB of DuckDB's estimate: without the hold, a
	// bulk commit (TestTx_Commit_checkpointsBulkCommitsAndLetsSmallOnesGather).
	var sizes []int64
	for walSize(db.Path()) < 24_000_000 && len(sizes) < 10 {
		insert(120_000, true)
		sizes = append(sizes, walSize(db.Path()))
		if len(sizes) > 1 && sizes[len(sizes)-1] <= sizes[len(sizes)-2] {
			t.Fatalf("WAL after each small commit while held: %v: one checkpointed", sizes)
		}
	}
	if walSize(db.Path()) < 24_000_000 {
		t.Fatalf("WAL after %d small commits while held: %v", len(sizes), sizes)
	}
	insert(120_000, false)
	if n := walSize(db.Path()); n != 0 {
		t.Fatalf("WAL is %d bytes after a bulk commit while held: it went to the WAL", n)
	}
	insert(5000, true)
	if walSize(db.Path()) == 0 {
		t.Fatal("a small commit checkpointed on an empty WAL")
	}
	held := walSize(db.Path())
	if n, err := end(ctx); err != nil || n != held {
		t.Fatalf("the hold's end checkpointed %d bytes (%v), the WAL held %d", n, err, held)
	}
	if n := walSize(db.Path()); n != 0 {
		t.Fatalf("WAL is %d bytes after the hold's end", n)
	}
	var threshold string
	if err := db.SQL().QueryRowContext(ctx, "SELECT current_setting('checkpoint_threshold')").Scan(&threshold); err != nil {
		t.Fatal(err)
	}
	if threshold != "15.2 MiB" && threshold != "16.0 MB" {
		t.Fatalf("checkpoint_threshold after the hold = %q, want %s back", threshold, CheckpointThreshold)
	}
	if n, err := end(ctx); err != nil || n != 0 {
		t.Fatalf("a second end: %d bytes, %v", n, err)
	}
}

// While checkpoints are held, a transaction marked Small that merges a
// changes file too large for one thread into a table of more than a row
// group is checkpointed as it commits (its rows are not written to the
// WAL and again by the hold's end), and one that merges a few rows into
// the same table still goes to the WAL: DuckDB's estimate of what it
// adds decides, as for any commit not marked Small.
func TestHoldCheckpoints_aLargeMergeCheckpointsAsItCommits(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	big := strings.Replace(snapQuery, "range(5)", "range(130000)", 1)
	snap := mustParquet(t, db, big)
	changed := func(n int) string {
		return mustParquet(t, db, `SELECT * REPLACE (permit || 'x' AS permit), 'changed' AS _ploti_change FROM (`+big+`) WHERE CAST(substr(_ploti_record_id, 2) AS INTEGER) < `+strconv.Itoa(n))
	}
	many, few := changed(120_000), changed(10)
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	end := db.Engine().(*DB).HoldCheckpoints(256_000_000)
	defer end(ctx)
	merge := func(file string) {
		t.Helper()
		err := db.Update(ctx, func(tx *storage.Tx) error {
			tx.Engine().(storage.SmallCommitter).Small()
			_, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", testCols, file, 130_000)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	merge(few)
	if walSize(db.Path()) == 0 {
		t.Fatal("a merge of 10 rows checkpointed as it committed; it belongs in the WAL")
	}
	merge(many)
	if n := walSize(db.Path()); n != 0 {
		t.Fatalf("WAL is %d bytes after a merge of 120,000 rows while held: its rows went to the WAL", n)
	}
	var n int
	if err := db.SQL().QueryRowContext(ctx, "SELECT count(*) FROM permits WHERE permit LIKE '%x'").Scan(&n); err != nil || n != 120_000 {
		t.Fatalf("changed rows after the merges: %d (%v), want 120000", n, err)
	}
}

// A checkpoint waits for another connection's updates or deletes to be
// committed (DuckDB refuses a CHECKPOINT while they are open), and still
// gives up, with DuckDB's words, on a transaction that outlasts its wait.
func TestDB_checkpointWaitsForAnotherWriter(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t).Engine().(*DB)
	writer := func() *sql.Tx {
		tx, err := db.SQL().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// DuckDB checkpoints beside another transaction's inserts, not
		// beside its updates or deletes.
		if _, err := tx.ExecContext(ctx, "UPDATE _ploti.settings SET value = value"); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	tx := writer()
	time.AfterFunc(150*time.Millisecond, func() { tx.Commit() })
	start := time.Now()
	if err := db.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint beside a writer that commits after 150 ms: %v", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("checkpoint returned after %s, before the writer committed", waited)
	}
	tx = writer()
	defer tx.Rollback()
	if err := db.Checkpoint(ctx); err == nil || !strings.Contains(err.Error(), "other write transactions") {
		t.Fatalf("checkpoint beside a writer that stays open: %v; want DuckDB's refusal", err)
	}
}
