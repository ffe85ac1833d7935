package duckdb

import (
	"context"
	"fmt"
	"os"
)

// DuckDB checkpoints a commit that takes its WAL past checkpoint_threshold,
// and a checkpoint rewrites every table a commit touched since the last
// one. The walk of a statewide log commits batches of small merges into
// hundreds of tables: checkpointed as the WAL reached 16MB, each table
// was rewritten several times in one catch-up, and the checkpoints were
// 40–55% of its time. So while the walk holds checkpoints
// (HoldCheckpoints), the commits of its batches (transactions marked
// Small) gather in the WAL up to the hold's bound, and the walk
// checkpoints once at its end; a load or large merge committing on its
// own is still checkpointed as it commits when it brings more than
// BulkCommit (decision 52), taking the gathered commits with it.

// commitThreshold is the checkpoint_threshold a commit of the file's runs
// with: the hold's bound for a small transaction while checkpoints are
// held, else the WAL's size now plus BulkCommit, at most
// CheckpointThreshold (or the hold's bound, when larger).
func (db *DB) commitThreshold(small bool) string {
	held := db.held.Load()
	if small && held > 0 {
		return kb(held)
	}
	return kb(min(walSize(db.path)+BulkCommit, max(held, checkpointBytes)))
}

// betweenThreshold is the checkpoint_threshold between commits: DuckDB's
// 16MB, or the hold's bound while checkpoints are held (a statement on
// its own, as the commit log's prune, would otherwise checkpoint what
// the hold gathers).
func (db *DB) betweenThreshold() string {
	if held := db.held.Load(); held > 0 {
		return kb(max(held, checkpointBytes))
	}
	return CheckpointThreshold
}

func kb(n int64) string { return fmt.Sprintf("%dKB", n/1000) }

// walSize is the size of the WAL beside path; 0 when there is none.
func walSize(path string) int64 {
	if fi, err := os.Stat(path + ".wal"); err == nil {
		return fi.Size()
	}
	return 0
}

// HoldCheckpoints holds the file's automatic checkpoints back for its
// small transactions' commits until the WAL holds bound bytes; end ends
// the hold and checkpoints when the WAL holds anything, so that a sync
// leaves no WAL growing behind it (Replica.Run keeps the file open), and
// returns the WAL's bytes it checkpointed.
func (db *DB) HoldCheckpoints(bound int64) (end func(context.Context) (int64, error)) {
	db.held.Store(bound)
	return func(ctx context.Context) (int64, error) {
		if db.held.Swap(0) == 0 {
			return 0, nil
		}
		db.sql.ExecContext(ctx, "SET GLOBAL checkpoint_threshold = '"+CheckpointThreshold+"'")
		wal := walSize(db.path)
		if wal == 0 {
			return 0, nil
		}
		return wal, db.Checkpoint(ctx)
	}
}

// Small marks the transaction as holding bookkeeping and small merges
// only: while checkpoints are held, its commit gathers in the WAL.
func (tx *Tx) Small() { tx.small = true }

// fitMerge readies the transaction for a merge of file into a table of
// rowsBefore rows: one DuckDB thread for a small merge (fitThreads), and
// a large one unmarks Small, because its rows would go to the WAL at the
// commit and be written again by the checkpoint that ends the walk,
// where a commit past BulkCommit checkpointed as it commits writes them
// once (decision 52). Measured on the 1% merge of 10M rows (75,000 rows
// in): a commit of 50 ms to the WAL and a closing checkpoint of 198 ms
// (409 ms with --history all, which doubles the rows). Unmarked, its
// commit's threshold is the WAL's size plus BulkCommit: a large merge
// checkpoints as it commits, with what the walk gathered before; a few
// rows into a large table still go to the WAL. The statewide walk's
// merges of small files into tables of one row group stay Small.
func (tx *Tx) fitMerge(ctx context.Context, file string, rowsBefore int64) (small bool, err error) {
	small = smallMerge(file, rowsBefore)
	if !small {
		tx.small = false
	}
	return small, tx.fitThreads(ctx, small)
}
