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
}

// startAside starts reading file's counts on a connection of its own and
// tells whether one came within asideWait; when none did, the caller
// reads them in the transaction, before any statement that could leave
// it unusable.
func (tx *Tx) startAside(ctx context.Context, file string) bool {
	tx.stopAside(file)
	cctx, stop := context.WithTimeout(ctx, asideWait)
	conn, err := tx.db.sql.Conn(cctx)
	stop()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &asideCounts{done: make(chan struct{}), cancel: cancel}
	tx.db.asides.Add(1)
	go func() {
		defer close(a.done)
		defer tx.db.asides.Add(-1)
		defer conn.Close()
		got, err := countChanges(ctx, conn, []string{file})
		a.got, a.err = got[file], err
	}()
	if tx.aside == nil {
		tx.aside = map[string]*asideCounts{}
	}
	tx.aside[file] = a
	return true
}

// takeAside waits for the counts read aside for file and forgets them; ok
// is false when none were started.
func (tx *Tx) takeAside(file string) (c changeCounts, ok bool, err error) {
	a := tx.aside[file]
	if a == nil {
		return c, false, nil
	}
	delete(tx.aside, file)
	<-a.done
	a.cancel()
	return a.got, true, a.err
}

// stopAside cancels the read aside for file, if any, and waits for it.
func (tx *Tx) stopAside(file string) {
	if a := tx.aside[file]; a != nil {
		a.cancel()
		<-a.done
		delete(tx.aside, file)
	}
}

// endAside stops the reads still under way when the transaction ends
// without their results (an error before FinishMerged), so that none
// holds a connection past it.
func (tx *Tx) endAside() {
	for f := range tx.aside {
		tx.stopAside(f)
	}
}
