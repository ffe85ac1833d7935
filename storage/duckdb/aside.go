package duckdb

import (
	"context"
	"time"
)

// asideWait bounds how long a large merge's checks wait for a connection
// of their own. The pool is the caller's too (Replica.DB): with
// SetMaxOpenConns(1) none ever comes while the transaction holds the
// only one, and the checks then read the file in the transaction.
const asideWait = 50 * time.Millisecond

// asideCounts is a changes file's counts (countChanges) read on a
// connection of their own while the transaction's MERGE and INSERT run.
// A large merge's statements read the table and leave one of the two
// cores idle much of the time; the file's checks read only the file. On
// the 1% merge of 10M rows the checks took 26 ms in the transaction,
// after the INSERT.
type asideCounts struct {
	done   chan struct{}
	cancel context.CancelFunc
	got    changeCounts
	err    error
	ran    bool // false: no connection came in time, or the query never ran
}

// countAside starts reading file's counts on another connection.
func (db *DB) countAside(ctx context.Context, file string) *asideCounts {
	ctx, cancel := context.WithCancel(ctx)
	a := &asideCounts{done: make(chan struct{}), cancel: cancel}
	db.asides.Add(1)
	go func() {
		defer close(a.done)
		defer db.asides.Add(-1)
		cctx, stop := context.WithTimeout(ctx, asideWait)
		conn, err := db.sql.Conn(cctx)
		stop()
		if err != nil {
			return
		}
		defer conn.Close()
		got, err := countChanges(ctx, conn, []string{file})
		a.got, a.err, a.ran = got[file], err, true
	}()
	return a
}

// wait waits for the counts; ok is false when they were never read, and
// the caller reads them in the transaction.
func (a *asideCounts) wait() (c changeCounts, ok bool, err error) {
	<-a.done
	a.cancel()
	return a.got, a.ran, a.err
}

// startAside reads a large merge's file counts beside its statements.
func (tx *Tx) startAside(ctx context.Context, file string) {
	if tx.aside == nil {
		tx.aside = map[string]*asideCounts{}
	}
	if old := tx.aside[file]; old != nil {
		old.cancel()
		<-old.done
	}
	tx.aside[file] = tx.db.countAside(ctx, file)
}

// takeAside gives the counts read aside for file, if any, and forgets
// them.
func (tx *Tx) takeAside(file string) (c changeCounts, ok bool, err error) {
	a := tx.aside[file]
	if a == nil {
		return c, false, nil
	}
	delete(tx.aside, file)
	return a.wait()
}

// endAside stops the reads still under way when the transaction ends
// without their results (an error before FinishMerged), so that none
// holds a connection past it.
func (tx *Tx) endAside() {
	for f, a := range tx.aside {
		a.cancel()
		<-a.done
		delete(tx.aside, f)
	}
}
