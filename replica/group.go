package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// The walk commits pages in groups: while the next page is already in
// hand (read ahead, with the transaction open: never across a long wait,
// a StopSync or a released file), the same transaction goes on with it,
// up to DefaultBatchEvents events, batchBytes of changes files merged or
// batchTime. Each commit writes the cursor after the last page it holds
// whole, so a crash replays only what the last commit did not hold; a
// load or large merge still commits on its own, after a commit of what
// the group held before it.

// DefaultBatchEvents is how many events of the log one transaction of the
// walk holds at most (Options.BatchEvents): ten pages of 500.
const DefaultBatchEvents = 5000

// batchBytes bounds the changes files merged in one transaction of the
// walk: their rows wait in DuckDB's memory until the commit, and a merge
// that fails applies them all again.
const batchBytes = 64 << 20

// batchTime bounds how long one transaction of the walk stays open: the
// rows it holds reach readers and the disk no later than this.
const batchTime = 3 * time.Second

// holdWAL is the WAL a DuckDB file gathers from the walk's commits before
// it checkpoints (storage.CheckpointHolder); the walk checkpoints once at
// its end.
const holdWAL = 512_000_000

// holdCheckpoints holds the engine's automatic checkpoints back for the
// walk's commits and returns what ends the hold, checkpointing what the
// WAL gathered (a failure is only logged: Close checkpoints too).
func (r *Replica) holdCheckpoints(ctx context.Context) func() {
	h, ok := r.db.Engine().(storage.CheckpointHolder)
	if !ok {
		return func() {}
	}
	end := h.HoldCheckpoints(holdWAL)
	return func() {
		start := time.Now()
		wal, err := end(ctx)
		if err != nil {
			r.log.Debug("checkpoint after the walk", logs.Err(err))
			return
		}
		r.log.Debug("checkpointed after the walk", slog.Int64("wal_bytes", wal), logs.Ms("ms", time.Since(start)))
	}
}

// group is the walk's open transaction over pages.
type group struct {
	b      *apply.Batch
	pages  []*ploti.EventPage // applied in b, in order
	events int                // the pages' events
	began  time.Time
	mark   groupMark
}

// groupMark is where the group stood the last time nothing of it was
// left uncommitted: the page, the index of its next event, and the result
// so far. Events before it are committed (and recorded as applied), so a
// retry starts there and keeps their counts and failures.
type groupMark struct {
	page, next int
	res        SyncResult
}

func cloneResult(r SyncResult) SyncResult {
	r.Failed = slices.Clone(r.Failed)
	return r
}

// batchEvents is Options.BatchEvents, or its default.
func (r *Replica) batchEvents() int {
	if r.opts.BatchEvents > 0 {
		return r.opts.BatchEvents
	}
	return DefaultBatchEvents
}

// room tells whether the group may take another page.
func (r *Replica) room(g *group) bool {
	return g.events < r.batchEvents() && g.b.MergedBytes() < batchBytes && time.Since(g.began) < batchTime
}

// applyPages applies page and the pages read ahead after it in one
// transaction (see group), and returns the page after the last one
// committed, when read. State-only events and small merges share the
// transaction; loads and other merges commit on their own. A merge that
// fails in the shared transaction aborts it: the group's pages, from the
// first event not committed, are then applied again a transaction a page
// with every merge on its own, so that the failure costs only its
// dataset.
func (r *Replica) applyPages(ctx context.Context, sub *storage.Subscription, page *ploti.EventPage, guard *walkGuard, res *SyncResult, end *syncEnd) (*ploti.EventPage, error) {
	g := &group{b: apply.NewBatch(r.db), began: time.Now(), mark: groupMark{res: cloneResult(*res)}}
	g.b.Share = true
	g.b.Scope(pageDatasets(page)) // the batch reads the registry rows of its pages' datasets only
	ahead, err := r.walkGroup(ctx, sub, page, g, guard, res, end)
	g.b.Abort()
	if !errors.Is(err, apply.ErrRetryPage) {
		return ahead, err
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("%w: %w", cerr, err)
	}
	r.log.Info("applying the pages again, each merge in a transaction of its own",
		logs.Err(err), slog.Int("pages", len(g.pages)-g.mark.page), slog.Int("from_event", g.mark.next))
	*res = cloneResult(g.mark.res)
	for k := g.mark.page; k < len(g.pages); k++ {
		from, next := 0, ahead // the page after the group, when read
		if k == g.mark.page {
			from = g.mark.next
		}
		if k+1 < len(g.pages) {
			next = g.pages[k+1]
		}
		if next, err = r.applyAlone(ctx, sub, g.pages[k], next, from, res, end); err != nil || end.recorded {
			return nil, err
		}
		if k+1 == len(g.pages) {
			return next, nil
		}
	}
	return ahead, nil
}

// walkGroup applies page in g, then the pages read ahead after it while
// there is room, and commits them with the cursor after the last; it
// returns the page read after that one, if any.
func (r *Replica) walkGroup(ctx context.Context, sub *storage.Subscription, page *ploti.EventPage, g *group, guard *walkGuard, res *SyncResult, end *syncEnd) (*ploti.EventPage, error) {
	for {
		if err := r.applyInGroup(ctx, g, page, res); err != nil {
			return nil, err
		}
		if c := g.b.Committed(); c != "" {
			sub.Cursor = c // a load's own commit took the group's pages before it
		}
		ahead := r.readAhead(ctx, sub.ID, page.NextCursor)
		if ahead != nil && len(ahead.Events) > 0 && r.room(g) && guard.check(sub.ID, page.NextCursor, ahead) == nil {
			g.b.SetCursor(page.NextCursor) // a commit from here on holds this page whole
			if err := g.b.Widen(ctx, pageDatasets(ahead)); err != nil {
				return nil, err
			}
			r.log.Debug("page applied; its transaction goes on with the next page",
				slog.Int("pages", len(g.pages)), slog.Int("events", g.events))
			page = ahead
			continue
		}
		if err := r.commitPage(ctx, sub, page, ahead, g.b, res, end); err != nil {
			return ahead, err
		}
		r.log.Debug("pages committed", slog.Int("pages", len(g.pages)), slog.Int("events", g.events),
			slog.Int64("merged_bytes", g.b.MergedBytes()), logs.Ms("open_ms", time.Since(g.began)))
		if end.recorded {
			return nil, nil
		}
		return ahead, nil
	}
}

// applyInGroup applies a page's events in the group's transaction,
// moving the group's mark on while nothing is left uncommitted.
func (r *Replica) applyInGroup(ctx context.Context, g *group, page *ploti.EventPage, res *SyncResult) error {
	b := g.b
	n := len(g.pages)
	g.pages, g.events = append(g.pages, page), g.events+len(page.Events)
	if !b.Pending() {
		g.mark = groupMark{page: n, res: cloneResult(*res)}
	}
	// The page's small merges are fetched while the events before them
	// apply (apply.Executor.Ahead); what no event took goes with the page.
	defer b.StopAhead()
	if err := r.exec.Ahead(ctx, b, page.Events); err != nil {
		return err
	}
	seen, err := r.seenOf(ctx, b, page)
	if err != nil {
		return err
	}
	for i, ev := range page.Events {
		if err := r.applyEvent(ctx, b, seen, i, len(page.Events), ev, res); err != nil {
			return err
		}
		if !b.Pending() {
			g.mark = groupMark{page: n, next: i + 1, res: cloneResult(*res)}
		}
	}
	return nil
}

// seenOf is which of the page's events the file records as applied.
func (r *Replica) seenOf(ctx context.Context, b *apply.Batch, page *ploti.EventPage) (map[string]bool, error) {
	tx, err := b.Tx(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(page.Events))
	for i, ev := range page.Events {
		ids[i] = ev.ID
	}
	return tx.AppliedEvents(ctx, ids)
}

// applyAlone applies a page's events from index from on in a transaction
// of its own, every merge in its own, and commits it with the cursor
// after it; ahead is the page after it when in hand (else it is read
// before the commit). It returns that page.
func (r *Replica) applyAlone(ctx context.Context, sub *storage.Subscription, page, ahead *ploti.EventPage, from int, res *SyncResult, end *syncEnd) (*ploti.EventPage, error) {
	b := apply.NewBatch(r.db)
	b.Scope(pageDatasets(page))
	defer b.Abort()
	seen, err := r.seenOf(ctx, b, page)
	if err != nil {
		return nil, err
	}
	for i, ev := range page.Events[from:] {
		if err := r.applyEvent(ctx, b, seen, from+i, len(page.Events), ev, res); err != nil {
			return nil, err
		}
	}
	if ahead == nil {
		ahead = r.readAhead(ctx, sub.ID, page.NextCursor)
	}
	if err := r.commitPage(ctx, sub, page, ahead, b, res, end); err != nil || end.recorded {
		return nil, err
	}
	return ahead, nil
}

// pageDatasets lists the datasets a page's events name, once each.
func pageDatasets(page *ploti.EventPage) []string {
	var datasets []string
	inPage := map[string]bool{}
	for _, ev := range page.Events {
		if id := ev.Data.DatasetID; id != "" && !inPage[id] {
			inPage[id] = true
			datasets = append(datasets, id)
		}
	}
	return datasets
}

// commitPage commits what b holds with the cursor after page; ahead is
// the page after it, read before the commit (nil: not read). When that
// is empty, the commit also ends the sync (finish).
func (r *Replica) commitPage(ctx context.Context, sub *storage.Subscription, page, ahead *ploti.EventPage, b *apply.Batch, res *SyncResult, end *syncEnd) error {
	r.describePending(ctx, sub.ID, b)
	b.SetCursor("") // written here, with the run's row when last
	last := ahead != nil && len(ahead.Events) == 0
	cursor := page.NextCursor
	if last && ahead.NextCursor != "" {
		cursor = ahead.NextCursor
	}
	tx, err := b.Tx(ctx)
	if err != nil {
		return err
	}
	if last {
		err = r.finish(ctx, tx, sub, cursor, res, end)
	} else {
		err = tx.SetCursor(ctx, cursor)
	}
	if err != nil {
		return err
	}
	if err := b.Flush(); err != nil {
		return err
	}
	sub.Cursor, end.recorded = cursor, last
	return nil
}
