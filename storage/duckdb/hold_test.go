package duckdb

import (
	"context"
	"testing"
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
