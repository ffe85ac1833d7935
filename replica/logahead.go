package replica

import (
	"context"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// lookAheadEvents bounds the events a catch-up reads ahead of the walk and
// keeps in memory, about 700 bytes each decoded (140 MB at most): a day
// of a national subscription is about 100,000. Past it the walk reads the
// log itself.
const lookAheadEvents = 200_000

// logAhead reads the events pages after a cursor in the background, in
// the log's order, while the catch-up loads datasets from the manifest:
// under the rate limit each read waits on the limiter (two pages a second
// at 120 calls a minute), and that wait is spent loading instead of
// before or after it. The walk takes the pages from it (page); a page it
// did not read yet is waited for, never read twice.
type logAhead struct {
	cancel context.CancelFunc
	done   chan struct{}
	reads  chan keptRead // in the log's order; closed when the reader ends
	next   string        // the cursor the next read on reads follows; the walk's only
}

// keptRead is one events read made ahead: the cursor it follows, and the
// answer.
type keptRead struct {
	cursor string
	page   *ploti.EventPage
	err    error
}

// readLogAhead starts reading the log after cursor in the background, up
// to budget events, for the walk to take (page), showing each page to
// chains (nil: none) as it comes. It stops at the log's end, at a failed
// read (which the walk meets as its own), and when the sync ends
// (forgetKept).
func (r *Replica) readLogAhead(ctx context.Context, subID, cursor string, budget int, chains *chainBook) {
	r.forgetAhead()
	if budget <= 0 {
		chains.finish()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	a := &logAhead{cancel: cancel, done: make(chan struct{}), reads: make(chan keptRead, budget/r.opts.PageSize+1), next: cursor}
	r.ahead = a
	go func() {
		defer close(a.done)
		defer close(a.reads)
		defer chains.finish()
		// A log that goes round (a cursor read before) or makes no
		// progress (the same events under new cursors) ends the reader
		// as it ends the walk, which then stops on it, in words; a load
		// waiting for the reader (chainBook) waits no longer.
		var guard walkGuard
		for events := 0; events < budget; {
			p, err := r.api.Events(ctx, subID, cursor, r.opts.PageSize, nil)
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				chains.observe(p)
			}
			a.reads <- keptRead{cursor: cursor, page: p, err: err} // never blocks: it holds budget's pages
			if err != nil || len(p.Events) < r.opts.PageSize || p.NextCursor == "" || guard.check(subID, cursor, p) != nil {
				return // the walk reads the log's end, or meets the error
			}
			events += len(p.Events)
			cursor = p.NextCursor
		}
	}()
}

// takeAhead is the page after cursor read in the background, waiting for
// it while the reader is on its way to it; false when the reader has
// nothing for cursor (it ended, or the walk moved elsewhere), and the
// walk reads it itself.
func (r *Replica) takeAhead(ctx context.Context, cursor string) (keptRead, bool) {
	a := r.ahead
	if a == nil {
		return keptRead{}, false
	}
	if cursor != a.next {
		r.forgetAhead()
		return keptRead{}, false
	}
	select {
	case k, ok := <-a.reads:
		if !ok {
			r.forgetAhead()
			return keptRead{}, false
		}
		if k.err == nil && k.page != nil {
			a.next = k.page.NextCursor
		} else {
			a.next = ""
		}
		return k, true
	case <-ctx.Done(): // the read ahead's own bound: the walk asks again
		return keptRead{err: ctx.Err()}, true
	}
}

// forgetAhead stops the background reader, if any, and drops what it read.
func (r *Replica) forgetAhead() {
	if a := r.ahead; a != nil {
		a.cancel()
		<-a.done
		r.ahead = nil
	}
}

// forgetKept drops every page read ahead of the walk.
func (r *Replica) forgetKept() {
	r.forgetAhead()
	clear(r.kept)
}
