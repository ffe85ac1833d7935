package duckdb

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
)

// DuckDB runs a statement's pipelines on its worker threads, a row group
// (122,880 rows) of a table or a Parquet file a task. A small merge (a
// changes file of a few rows into a table of one row group) has nothing
// for a second thread to do, but DuckDB still wakes and schedules its
// workers for each of the page's statements, and on a machine of few
// cores they take the core that the page's downloads, the changes files'
// column reads on the side connection and the server's answers need.
// The catch-up of 1,800 merges of ~46 rows over 2,000 tables of
// 1k–20k rows, its engine in a process of its own, took 84.2 s and 106 s
// of CPU on two cores with DuckDB's default of two threads, and 65.4 s
// and 73.2 s with one (DuckDB alone, two threads, 63.0 s and 74.6 s);
// DuckDB's worker threads outside any of the engine's calls had used 27 s
// of CPU against DuckDB alone's 11.
//
// So a transaction that merges a small changes file into a small table,
// or loads (or diffs, catching up from the manifest) a small snapshot,
// runs with one DuckDB thread from there on, and goes back to the file's
// own count (Options.Threads, or DuckDB's default: the cores) for
// anything large in it (a larger load or merge, a watched dataset's rows,
// a history version) and when it ends. DuckDB's threads
// setting belongs to the open file, not to a connection: a reader on
// another connection meanwhile runs with one thread too.

// smallTableRows is the largest table a small merge goes into: one of
// DuckDB's row groups, which one thread scans.
const smallTableRows = 122_880

// smallChangesBytes is the largest changes file of a small merge: well
// inside one Parquet row group of the size DuckDB writes.
const smallChangesBytes = 4 << 20

// threadCount is the file's DuckDB thread count as configured, and the
// count its statements run with now.
type threadCount struct {
	all int          // as opened: Options.Threads, or DuckDB's default
	now atomic.Int64 // what SET threads last asked for
}

// readThreads learns the thread count the file was opened with.
func (db *DB) readThreads(ctx context.Context) error {
	var s string
	if err := db.sql.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&s); err != nil {
		return fmt.Errorf("read threads setting: %w", err)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		n = 1
	}
	db.threads.all = n
	db.threads.now.Store(int64(n))
	return nil
}

// smallMerge tells whether a merge of file into a table of rowsBefore rows
// (negative: unknown) is small.
func smallMerge(file string, rowsBefore int64) bool {
	if rowsBefore < 0 || rowsBefore > smallTableRows {
		return false
	}
	return smallFiles([]string{file})
}

// smallFiles tells whether files are small enough for one thread: at most
// smallChangesBytes in all. A small snapshot's load (a table of one row
// group) is small work too: a statewide bootstrap loads thousands of them
// while the next ones download.
func smallFiles(files []string) bool {
	var n int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return false
		}
		n += st.Size()
	}
	return n <= smallChangesBytes
}

// fitThreads sets the file's thread count for the work the transaction
// does next: one for a small merge, all of them otherwise.
func (tx *Tx) fitThreads(ctx context.Context, small bool) error {
	db := tx.db
	if db.threads.all <= 1 {
		return nil
	}
	want := int64(db.threads.all)
	if small {
		want = 1
	}
	if db.threads.now.Load() == want {
		return nil
	}
	if _, err := tx.tx.ExecContext(ctx, "SET GLOBAL threads = "+strconv.FormatInt(want, 10)); err != nil {
		return fmt.Errorf("set threads to %d: %w", want, err)
	}
	db.threads.now.Store(want)
	return nil
}

// allThreads gives the file back its own thread count once a transaction
// has ended. A failure leaves one thread, which the next transaction's
// large work asks back.
func (db *DB) allThreads() {
	if db.threads.now.Load() == int64(db.threads.all) {
		return
	}
	if _, err := db.sql.Exec("SET GLOBAL threads = " + strconv.Itoa(db.threads.all)); err == nil {
		db.threads.now.Store(int64(db.threads.all))
	}
}
