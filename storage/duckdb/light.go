package duckdb

import (
	"context"
	"maps"
	"sync"
)

// A checkpoint compresses every column segment it writes, and for a
// string column DuckDB first tries FSST: it builds a symbol table from a
// sample of the segment's strings, a fixed cost of about a millisecond a
// segment whatever its rows. DuckDB only chooses FSST for a segment of
// about a thousand rows or more (the permits' record ids and
// descriptions: uncompressed at 60, 200 and 500 rows, FSST from 1,000 or
// 2,048); below that the trial is all cost. A small merge appends its
// rows as a row group of their own (DuckDB 1.5 does not append to a
// row group already in the file), so a catch-up of small merges ends in
// a checkpoint of thousands of tiny segments, each tried in vain.
// Measured (DuckDB alone: 1,800 merges of ~43 rows into 2,000 tables of
// 1k–20k rows, 180 merges a transaction, one thread, one closing
// checkpoint): the checkpoint 12.0–12.6 s with FSST tried, 5.4–5.6 s
// without, the file's used bytes the same (1,196 and 1,198 MB), every
// new segment uncompressed either way.
//
// So a checkpoint of light work leaves FSST out: when every commit since
// the last checkpoint appended at most lightRows rows to any dataset
// table and did nothing heavier (a load, a large merge, a history, a
// change of columns), the checkpoint runs with DuckDB's
// disabled_compression_methods = 'fsst', and DuckDB's own setting after
// it. The _ploti tables' rows (a version's log and bookkeeping) do not
// count: a walk logs every changed id, tens of thousands of short ids
// that DuckDB may store a little larger. Anything heavier keeps FSST for
// the checkpoint that writes it, as does DuckDB's own automatic
// checkpoint at a commit, whose setting is never changed.

// lightRows is the most rows a light transaction's merges append to one
// dataset table (all of them since the last checkpoint together): half
// the segment size at which DuckDB starts to choose FSST for the permits'
// strings, so that text longer than theirs seldom loses it.
const lightRows = 512

// pendingWrites is what the commits since the file's last checkpoint
// wrote, as far as the checkpoint's compression cares.
type pendingWrites struct {
	mu    sync.Mutex
	heavy bool             // a commit did more than append a few rows
	rows  map[string]int64 // rows appended to a dataset table, by table
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

// light tells whether the commits since the last checkpoint are light.
func (p *pendingWrites) light() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.heavy
}

// heavyWrite marks the transaction as writing more than a light merge:
// its commit makes the next checkpoint keep FSST.
func (tx *Tx) heavyWrite() { tx.heavy = true }

// appended records that the transaction appended n rows to a dataset
// table.
func (tx *Tx) appended(table string, n int64) {
	if n <= 0 {
		return
	}
	if tx.rows == nil {
		tx.rows = map[string]int64{}
	}
	tx.rows[table] += n
}

// committed hands the transaction's writes to the file's record.
func (tx *Tx) committed() {
	tx.db.pending.add(tx.heavy, maps.Clone(tx.rows))
}

// lightCheckpoint runs checkpoint with FSST left out when the writes it
// checkpoints are light, and DuckDB's own setting again after it.
func (db *DB) lightCheckpoint(ctx context.Context, checkpoint func() error) error {
	light, put := db.pending.take()
	if light {
		if _, err := db.sql.ExecContext(ctx, "SET GLOBAL disabled_compression_methods = 'fsst'"); err != nil {
			light = false
		}
	}
	err := checkpoint()
	if light {
		db.sql.ExecContext(context.WithoutCancel(ctx), "RESET GLOBAL disabled_compression_methods")
	}
	if err != nil {
		put()
	}
	return err
}
