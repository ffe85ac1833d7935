package duckdb

import (
	"context"
	"sync"
	"sync/atomic"
)

// A checkpoint compresses every column segment it writes, and for a
// string column DuckDB first tries FSST: it builds a symbol table from a
// sample of the segment's strings, a fixed cost of about a millisecond a
// segment whatever its rows. DuckDB only chooses FSST for a segment of
// about a thousand rows or more (the permits' record ids and
// descriptions: uncompressed at 60, 200 and 500 rows, FSST for some
// columns at 1,000 and 2,048, all from 4,096); below that the trial is
// all cost. A small merge's rows go to a row group of their own when the
// table's last row group already holds a couple of thousand rows (DuckDB
// 1.5), so a catch-up of small merges ends in a checkpoint of thousands
// of tiny segments, each tried in vain. Measured (DuckDB alone: 1,800
// merges of ~43 rows into 2,000 tables of 1k–20k rows, 180 merges a
// transaction, one thread, one closing checkpoint): the checkpoint
// 12.0–12.6 s with FSST tried, 5.4–6.3 s without, the file's used bytes
// 1,196 MB and 1,195–1,198 MB.
//
// So a checkpoint of light work leaves FSST out: when every commit since
// the last checkpoint touched (deleted or inserted) at most lightRows
// rows of any dataset table or of any dataset's history rows (a merge's
// or a watched version's rows appended to it), and did nothing heavier
// (a load, a history started, reloaded, pruned or set aside, a history
// column's type changed, a snapshot diff's or a reload's log, an id map, a
// geometry conversion), the engine's own checkpoint runs with DuckDB's
// disabled_compression_methods = 'fsst', and DuckDB's own setting after
// it. What that leaves without FSST: the touched tables' and histories'
// new row groups (uncompressed either way), a table of under about 2,000
// rows that DuckDB rewrites whole with its new rows, a row group DuckDB's
// checkpoint rewrites because enough of its rows were deleted over
// time, and the _ploti tables' rows (a walk's change log and history
// ends: tens of thousands of short ids), none of which the file's bytes
// showed in the bench's catch-up.

// lightRows is the most rows a light transaction's merges touch in one
// dataset table or append to one history (all of them since the last
// checkpoint together; a watched version's history counts the ids it
// opens): half
// the segment size at which DuckDB starts to choose FSST for the permits'
// strings, so that text longer than theirs seldom loses it.
const lightRows = 512

// pendingWrites is what the commits since the file's last checkpoint
// wrote, as far as the checkpoint's compression cares.
type pendingWrites struct {
	mu    sync.Mutex
	heavy bool             // a commit did more than touch a few rows
	rows  map[string]int64 // rows deleted or inserted in a dataset table or a history, by table
	// fsstOff: the setting is left on after a checkpoint whose RESET
	// failed; the next checkpoint resets it first.
	fsstOff atomic.Bool
}

// add records a committed transaction's writes.
func (p *pendingWrites) add(heavy bool, rows map[string]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heavy = p.heavy || heavy
	for t, n := range rows {
		if p.rows == nil {
			p.rows = map[string]int64{}
		}
		p.rows[t] += n
		if p.rows[t] > lightRows {
			p.heavy = true
		}
	}
}

// take empties the record for a checkpoint about to run, and tells
// whether what it holds is light; put gives it back when the checkpoint
// fails.
func (p *pendingWrites) take() (light bool, put func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	heavy, rows := p.heavy, p.rows
	p.heavy, p.rows = false, nil
	return !heavy, func() { p.add(heavy, rows) }
}

// heavyWrite marks the transaction as writing more than a light merge:
// its commit makes the next checkpoint keep FSST.
func (tx *Tx) heavyWrite() { tx.heavy = true }

// touched records that the transaction deleted or inserted n rows of a
// dataset table, or appended n rows to a dataset's history (table names
// a table by its name in the file).
func (tx *Tx) touched(table string, n int64) {
	if n <= 0 {
		return
	}
	if tx.rows == nil {
		tx.rows = map[string]int64{}
	}
	tx.rows[table] += n
}

// lightCheckpoint runs checkpoint with FSST left out when the writes it
// checkpoints are light, and DuckDB's own setting again after it. The
// setting is the open file's: DuckDB's automatic checkpoint at a commit
// of another connection landing meanwhile would run with it too (the
// engine's own transactions do not overlap its checkpoints).
func (db *DB) lightCheckpoint(ctx context.Context, checkpoint func() error) error {
	light, put := db.pending.take()
	if light {
		if _, err := db.sql.ExecContext(ctx, "SET GLOBAL disabled_compression_methods = 'fsst'"); err == nil {
			db.pending.fsstOff.Store(true)
			defer db.resetCompression(ctx)
		}
	} else if db.pending.fsstOff.Load() {
		db.resetCompression(ctx)
	}
	err := checkpoint()
	if err != nil {
		put()
	}
	return err
}

// resetCompression gives DuckDB its own compression setting back; a
// failure leaves fsstOff set, for the next checkpoint to try again.
func (db *DB) resetCompression(ctx context.Context) {
	if _, err := db.sql.ExecContext(context.WithoutCancel(ctx), "RESET GLOBAL disabled_compression_methods"); err == nil {
		db.pending.fsstOff.Store(false)
	}
}
