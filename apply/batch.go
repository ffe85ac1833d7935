package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// pageCache is what a batch has read of the registry and the holds, and
// the bookkeeping it holds back until Flush: a page of state-only events
// then costs a handful of statements in all, not several per event. (A
// DuckDB statement costs a few hundred microseconds even on a table of
// fifty rows; a measurement found 150 events a second with one read and one
// write per statement.) Every write still lands in the batch's open
// transaction, before its commit. The cache outlives a commit: the walk
// is the file's one writer, and a heavy action, which writes a dataset's
// row and holds in a transaction of its own, makes the batch forget that
// dataset.
type pageCache struct {
	rows       map[string]*storage.Dataset // registry rows, by dataset id
	stored     map[string]*storage.Dataset // the rows as the registry holds them (read, or written by this transaction or a committed one)
	holds      map[string][]storage.Hold   // holds, by dataset id
	stale      map[string]bool             // ids to read again (see forget)
	known      map[string]bool             // with a scope: the ids read (rows holds them, or they have none)
	dirtyRows  []string                    // ids whose row Flush writes, in first-write order
	dirtyHolds []string                    // ids whose holds Flush rewrites
	applied    []string                    // event ids Flush records as applied
	// undescribed are datasets the batch made pending with no title yet
	// (see Undescribed).
	undescribed []string
}

// cached returns the batch's cache, loading the registry rows and holds
// the first time (the scope's, or else all of them), and makes sure a
// transaction is open for the writes the cache will hold back.
func (b *Batch) cached(ctx context.Context) (*pageCache, error) {
	tx, err := b.Tx(ctx)
	if err != nil {
		return nil, err
	}
	if b.cache != nil {
		return b.cache, nil
	}
	var all []*storage.Dataset
	var holds []storage.Hold
	if b.scope != nil {
		all, holds, err = tx.DatasetsOf(ctx, b.scope)
	} else if all, err = tx.Datasets(ctx); err == nil {
		holds, err = tx.Holds(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	c := &pageCache{rows: make(map[string]*storage.Dataset, len(all)), stored: make(map[string]*storage.Dataset, len(all)),
		holds: map[string][]storage.Hold{}, stale: map[string]bool{}}
	if b.scope != nil {
		c.known = map[string]bool{}
		for _, id := range b.scope {
			c.known[id] = true
		}
	}
	for _, d := range all {
		c.rows[d.ID], c.stored[d.ID] = d, cloneDataset(d)
	}
	for _, h := range holds {
		c.holds[h.DatasetID] = append(c.holds[h.DatasetID], h)
	}
	b.cache = c
	return c, nil
}

// dataset returns a copy of a registry row (nil when there is none) and of
// its holds.
// A warm cache answers without opening a transaction (in a run
// of updates, each merge's Flush committed an empty one).
func (b *Batch) dataset(ctx context.Context, id string) (*storage.Dataset, []storage.Hold, error) {
	c := b.cache
	if c == nil || c.stale[id] || c.known != nil && !c.known[id] {
		var err error
		if c, err = b.cached(ctx); err != nil {
			return nil, nil, err
		}
		if c.stale[id] || c.known != nil && !c.known[id] {
			if err := b.reload(ctx, id); err != nil {
				return nil, nil, err
			}
		}
	}
	d := c.rows[id]
	if d == nil {
		return nil, slices.Clone(c.holds[id]), nil
	}
	return cloneDataset(d), slices.Clone(c.holds[id]), nil
}

// cloneDataset copies a registry row and its slices. A column's pointers
// (an array's items, a number's precision, a geometry's type) stay
// shared with the cache's rows, so they are replaced, never edited in
// place: an edit in place would change the row remembered as stored too,
// and a schema change would be seen as no change (PutDatasetStates).
func cloneDataset(d *storage.Dataset) *storage.Dataset {
	cp := *d
	cp.KeyColumns = slices.Clone(d.KeyColumns)
	cp.Columns = slices.Clone(d.Columns)
	return &cp
}

// forget makes the batch read a dataset's row and holds again, after
// something wrote them outside it.
func (b *Batch) forget(id string) {
	if c := b.cache; c != nil {
		delete(c.rows, id)
		delete(c.stored, id)
		delete(c.holds, id)
		c.stale[id] = true
	}
}

// remember puts a dataset's row, as a transaction of its own committed it
// with no holds, into the cache (reading it back cost two
// statements per update in a catch-up of small updates).
func (b *Batch) remember(d *storage.Dataset) {
	if c := b.cache; c != nil {
		c.rows[d.ID], c.stored[d.ID] = cloneDataset(d), cloneDataset(d)
		c.holds[d.ID] = nil
		delete(c.stale, d.ID)
		if c.known != nil {
			c.known[d.ID] = true
		}
	}
}

// reload reads one dataset's row and holds into the cache.
func (b *Batch) reload(ctx context.Context, id string) error {
	tx, err := b.Tx(ctx)
	if err != nil {
		return err
	}
	c := b.cache
	d, err := tx.Dataset(ctx, id)
	switch {
	case errors.Is(err, storage.ErrNoDataset):
		delete(c.rows, id)
		delete(c.stored, id)
	case err != nil:
		return err
	default:
		c.rows[id], c.stored[id] = d, cloneDataset(d)
	}
	holds, err := tx.Holds(ctx, id)
	if err != nil {
		return err
	}
	c.holds[id] = holds
	delete(c.stale, id)
	if c.known != nil {
		c.known[id] = true
	}
	return nil
}

// putDataset replaces a registry row; Flush writes it.
func (b *Batch) putDataset(d *storage.Dataset) {
	c := b.cache
	if !slices.Contains(c.dirtyRows, d.ID) {
		c.dirtyRows = append(c.dirtyRows, d.ID)
	}
	c.rows[d.ID] = cloneDataset(d)
}

// putHold replaces the dataset's hold of the same kind; Flush writes it.
func (b *Batch) putHold(h storage.Hold) {
	b.deleteHolds(h.DatasetID, h.Kind)
	b.cache.holds[h.DatasetID] = append(b.cache.holds[h.DatasetID], h)
}

// deleteHolds removes a dataset's holds of one kind, or of every kind ("").
func (b *Batch) deleteHolds(id, kind string) {
	c := b.cache
	c.holds[id] = slices.DeleteFunc(c.holds[id], func(h storage.Hold) bool { return kind == "" || h.Kind == kind })
	if !slices.Contains(c.dirtyHolds, id) {
		c.dirtyHolds = append(c.dirtyHolds, id)
	}
}

// markApplied records an event id as applied when the batch commits.
func (b *Batch) markApplied(ctx context.Context, id string) error {
	c, err := b.cached(ctx)
	if err != nil {
		return err
	}
	c.applied = append(c.applied, id)
	return nil
}

// writeBack writes what the cache holds back into the open transaction.
func (b *Batch) writeBack(ctx context.Context) error {
	c := b.cache
	if c == nil {
		return nil
	}
	if b.tx == nil {
		if len(c.dirtyRows)+len(c.dirtyHolds)+len(c.applied) > 0 {
			return errors.New("batch: bookkeeping held back without a transaction")
		}
		return nil
	}
	tx := b.tx
	// Rows whose title, schema and the like are as the registry holds
	// them (a page of stale events: all of them) have their states
	// written alone; the others are written whole.
	var states, whole []*storage.Dataset
	for _, id := range c.dirtyRows {
		d := c.rows[id]
		if was := c.stored[id]; was != nil && storage.SameDescription(d, was) {
			states = append(states, d)
		} else {
			whole = append(whole, d)
		}
	}
	if err := tx.PutDatasetStates(ctx, states); err != nil {
		return err
	}
	if err := tx.PutDatasets(ctx, whole); err != nil {
		return err
	}
	for _, id := range c.dirtyRows {
		c.stored[id] = cloneDataset(c.rows[id])
	}
	// One statement releases the holds of every dataset the page touched
	// (a page of merges released each one's in a statement of its own:
	// 0.5–1 ms each), then the holds they keep go back in.
	if err := tx.DeleteHoldsOf(ctx, c.dirtyHolds, ""); err != nil {
		return err
	}
	for _, id := range c.dirtyHolds {
		for _, h := range c.holds[id] {
			if err := tx.InsertHold(ctx, h); err != nil {
				return err
			}
		}
	}
	if err := tx.MarkApplied(ctx, c.applied...); err != nil {
		return err
	}
	c.dirtyRows, c.dirtyHolds, c.applied = nil, nil, nil
	return nil
}

// Undescribed returns, and forgets, the datasets the batch made pending
// that have no title yet. A state-only event makes no API call (issue
// 18): the walk describes them all before the page commits, in as few
// calls as it can (Describe); one it could not is described by its first
// load. Known is how many datasets the registry holds, these included
// (the walk weighs one call each against the datasets list's pages): a
// scoped batch counts them in its transaction, the others hold them all.
func (b *Batch) Undescribed(ctx context.Context) (ids []string, known int, err error) {
	if b.cache == nil || len(b.cache.undescribed) == 0 {
		return nil, 0, nil
	}
	ids, b.cache.undescribed = b.cache.undescribed, nil
	if b.scope == nil {
		return ids, len(b.cache.rows), nil
	}
	tx, err := b.Tx(ctx)
	if err != nil {
		return ids, 0, err
	}
	known, err = tx.CountDatasets(ctx)
	return ids, known, err
}

// Describe gives a dataset the batch holds its title, place and topic
// from the API's dataset object; Flush writes the row.
func (b *Batch) Describe(info *ploti.Dataset) {
	c := b.cache
	if c == nil || c.rows[info.ID] == nil {
		return
	}
	d := cloneDataset(c.rows[info.ID])
	Describe(d, info)
	b.putDataset(d)
}

// Scope makes the batch read the registry rows and holds of these
// datasets only (a page's), with one query each, when it first needs
// them, and any other one when asked for it: a page costs the same
// however many datasets the file holds (the whole registry,
// read for each page, was 2,000 rows and their columns' JSON). Call it
// before the batch reads anything.
func (b *Batch) Scope(ids []string) {
	b.scope = slices.Clone(ids)
	if b.scope == nil {
		b.scope = []string{}
	}
	b.scoped = make(map[string]bool, len(ids))
	for _, id := range ids {
		b.scoped[id] = true
	}
}

// Batch holds the page's open transaction for state-only actions, so that
// a page's bookkeeping commits together (and with the cursor).
type Batch struct {
	// Share lets small merges join the batch's transaction (see
	// sharedMerge); the walk sets it, and applies a page again without it
	// when Apply returns ErrRetryPage.
	Share bool
	db    *storage.DB
	tx    *storage.Tx
	ctx   context.Context // the context of the transaction, for Flush's writes
	cache *pageCache      // registry rows read, and writes held back (batch.go)
	scope []string        // the datasets the batch reads (Scope); nil: all
	// scoped holds scope's ids, so that Widen, which each page of a
	// group's walk calls, costs a page's datasets and not the scope's
	// times them (10,000 at a national subscription).
	scoped map[string]bool
	// deferred are the shared merges whose checks and log Flush makes at
	// once (storage.Tables' FinishMerged); files are theirs, removed after.
	deferred []storage.Merged
	files    []keptFiles
	// ahead fetches the page's next merges (Executor.Ahead); StopAhead
	// ends it.
	ahead *ahead
	// cursor is what the next commit writes as the subscription's cursor
	// (SetCursor); committed is the last one a commit wrote.
	cursor, committed string
	bytes             int64 // bytes of the changes files merged in the batch's transactions (MergedBytes)
}

// SetCursor makes the batch's next commit write cursor as the
// subscription's cursor, with the rows it covers: the walk, keeping a
// transaction open over several pages, sets the cursor after the last
// page it holds whole, so that a commit made in the middle of the next
// page (before a load of its own) holds it. "" writes none.
func (b *Batch) SetCursor(cursor string) { b.cursor = cursor }

// Committed is the cursor the batch's last commit wrote, "" for none.
func (b *Batch) Committed() string { return b.committed }

// MergedBytes is the size of the changes files merged in the batch's
// transactions so far (small merges, sharing them).
func (b *Batch) MergedBytes() int64 { return b.bytes }

// Widen adds datasets to the batch's scope (Scope), reading the rows and
// holds of those it has not read in one query when it has read any.
func (b *Batch) Widen(ctx context.Context, ids []string) error {
	if b.scope == nil {
		return nil // it reads every row
	}
	var more []string
	for _, id := range ids {
		if !b.scoped[id] {
			b.scoped[id] = true
			b.scope = append(b.scope, id)
			more = append(more, id)
		}
	}
	c := b.cache
	if c == nil || len(more) == 0 {
		return nil
	}
	tx, err := b.Tx(ctx)
	if err != nil {
		return err
	}
	rows, holds, err := tx.DatasetsOf(ctx, more)
	if err != nil {
		return err
	}
	for _, id := range more {
		delete(c.stale, id)
		c.known[id] = true
	}
	for _, d := range rows {
		c.rows[d.ID], c.stored[d.ID] = d, cloneDataset(d)
	}
	for _, h := range holds {
		c.holds[h.DatasetID] = append(c.holds[h.DatasetID], h)
	}
	return nil
}

// StopAhead stops fetching merges ahead (Executor.Ahead) and removes the
// files no event took. The walk calls it when it leaves a page.
func (b *Batch) StopAhead() {
	b.ahead.stop()
	b.ahead = nil
}

// keptFiles are downloaded files a batch removes once it commits or aborts.
type keptFiles struct {
	src   Source
	paths []string
}

// keep removes paths once the batch commits or aborts.
func (b *Batch) keep(src Source, paths []string) { b.files = append(b.files, keptFiles{src, paths}) }

// merged defers a shared merge's checks and log to Flush.
func (b *Batch) merged(m storage.Merged) { b.deferred = append(b.deferred, m) }

// release removes the batch's files and forgets its deferred merges.
func (b *Batch) release() {
	for _, k := range b.files {
		k.src.Discard(k.paths)
	}
	b.files, b.deferred = nil, nil
}

// NewBatch starts an empty batch.
func NewBatch(db *storage.DB) *Batch { return &Batch{db: db} }

// Tx returns the open transaction, beginning one if needed.
func (b *Batch) Tx(ctx context.Context) (*storage.Tx, error) {
	if b.tx == nil {
		tx, err := b.db.Begin(ctx)
		if err != nil {
			return nil, err
		}
		// Bookkeeping and small merges only: while the engine holds its
		// checkpoints back (the walk), the commit gathers in its log.
		if sc, ok := tx.Engine().(storage.SmallCommitter); ok {
			sc.Small()
		}
		b.tx, b.ctx = tx, ctx
	}
	return b.tx, nil
}

// Pending reports whether the batch holds anything uncommitted: its
// transaction is open. When it is not, every event the batch was given is
// committed.
func (b *Batch) Pending() bool { return b.tx != nil }

// Flush writes the bookkeeping held back and commits the open
// transaction, if any.
func (b *Batch) Flush() error {
	if b.tx == nil {
		return nil
	}
	if err := b.tx.Tables().FinishMerged(b.ctx, b.deferred); err != nil {
		// A merge of the page does not fit: its transaction goes, and the
		// walk applies the page again with each merge checked on its own.
		b.Abort()
		if cerr := b.ctx.Err(); cerr != nil {
			return fmt.Errorf("commit batch: %w: %w", cerr, err)
		}
		return fmt.Errorf("commit batch: %w: %w", ErrRetryPage, err)
	}
	if err := b.writeBack(b.ctx); err != nil {
		b.Abort()
		return fmt.Errorf("commit batch: %w", err)
	}
	if b.cursor != "" {
		if err := b.tx.SetCursor(b.ctx, b.cursor); err != nil {
			b.Abort()
			return fmt.Errorf("commit batch: %w", err)
		}
	}
	tx := b.tx
	b.tx = nil
	defer b.release()
	if err := tx.Commit(); err != nil {
		b.cache = nil // it holds what did not commit
		return fmt.Errorf("commit batch: %w", err)
	}
	if b.cursor != "" {
		b.committed, b.cursor = b.cursor, ""
	}
	return nil
}

// Abort rolls the open transaction back, and with it the cursor it was to
// write (SetCursor): the rows that cursor covered did not commit.
func (b *Batch) Abort() {
	b.cache, b.cursor = nil, ""
	if b.tx != nil {
		b.tx.Rollback()
		b.tx = nil
	}
	b.release()
}
