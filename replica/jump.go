package replica

import (
	"context"
	"log/slog"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// lookAheadPages bounds the events pages a catch-up reads before it
// decides whether to load datasets from the manifest (20,000 events), and
// the limiter's burst bounds them further (lookAheadWindow): the pages
// past them are read while the datasets load.
const lookAheadPages = 40

// lookAheadWindow is how many pages a catch-up reads before it decides:
// lookAheadPages, or the limiter's burst when smaller, so that the
// decision waits on no token (at Ploti's 120 calls a minute, 20 pages;
// the 20 more took 10 s before any load began).
func (r *Replica) lookAheadWindow() int { return max(1, min(lookAheadPages, r.burst)) }

// jumpRowsPerCall is how many rows a dataset may hold for its reload from
// a snapshot to cost less than one API call under the rate limit: half a
// second buys about 50,000 rows at 10 µs a row (the download at 10 MB/s
// of about 100 bytes a row, and DuckDB's load), a conservative guess.
const jumpRowsPerCall = 50000

// rateLimited is an API client with a client-side rate limiter
// (*fetch.Client): its rate a minute and its burst, zero when off. Open
// reads it from Options.API or the client it makes.
type rateLimited interface {
	CallsPerMinute() (rate, burst int)
}

// behind is what the events after the cursor bring one dataset.
type behind struct {
	versions int  // updated events past the held version
	other    bool // an event that needs the walk: resync, schema change, added, removed
	// chain is the version the updated events reach from the held one,
	// each naming the one before as its previousVersion; -1 once one does
	// not. A load of that version from the manifest passes only versions
	// that replaced no ids: such a version comes as a resync_required.
	chain int
}

// catchUpFromManifest loads datasets that the log has moved past their
// held version from the subscription's manifest, when that costs fewer API
// calls than walking to their versions one by one (under the
// rate limit of 120 calls a minute, one version call for each of 2,000
// updated datasets is 17 minutes; the manifest is one call). It reads the
// log ahead first, up to lookAheadWindow, and keeps the pages for the walk;
// when the log goes on past them, the rest is read in the background
// while the datasets load (readLogAhead), so the limiter's wait on the
// pages, which the walk needs anyway, is spent loading.
//
// It acts only while the client's rate limiter is on and the walk would
// need more calls than the limiter's burst. The manifest says which
// datasets are behind: it loads those that are current, whose events in
// the pages read ahead are updates and state-only ones (no resync, schema
// change, addition or removal, which the walk applies), whose reload
// costs less than the calls it saves (a version call at least, the
// versions those pages bring when more), and that it lists at a later
// version of the schema version they hold, with no column referencing
// them (Options.IDReferences). A dataset the manifest shows behind whose
// events lie past the pages read ahead is loaded too: the docs allow
// it, "Skip an updated, resync_required or schema_changed for a version
// at or below the one you hold, including after you reload a dataset
// part way through the log", and the events the walk then meets for it
// are at or below the version loaded. Each load records how the snapshot
// differs from the table in _ploti.changes, under the version loaded
// (docs/decisions.md 34). A failure leaves the dataset to the walk.
func (r *Replica) catchUpFromManifest(ctx context.Context, sub *storage.Subscription, res *SyncResult) error {
	if r.rate <= 0 {
		return nil
	}
	pages, more, err := r.lookAhead(ctx, sub)
	if err != nil || len(pages) == 0 {
		return err
	}
	reg, err := r.registry(ctx)
	if err != nil {
		return err
	}
	ahead, calls := r.behindOf(pages, reg)
	if more {
		calls++ // the page after them, at least
	}
	if calls <= r.burst || !more && r.saves(ahead, reg) < 2 {
		return nil
	}
	var book *chainBook
	if more {
		book = newChainBook(reg, ahead)
		r.readLogAhead(ctx, sub.ID, pages[len(pages)-1].NextCursor, lookAheadEvents-len(pages)*r.opts.PageSize, book)
	}
	m, err := r.api.Manifest(r.waitFree(ctx), sub.ID, "")
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("could not get the manifest to catch up from; walking the log instead", logs.Err(err))
		return nil
	}
	jobs := r.manifestJobs(m, reg, ahead, book)
	// A manifest's versions carry no publishedAt, which a history places
	// them by (decision 47): the datasets list gives it.
	r.describeAll(ctx, sub.ID, len(m.Datasets), jobs)
	r.log.Info("catching up datasets from the manifest instead of one version call each",
		slog.Int("datasets", len(jobs)), slog.Int("calls_ahead", calls), slog.Bool("log_goes_on", more))
	return r.loadAll(ctx, jobs, res)
}

// saves counts the version calls that loading the datasets behind in the
// pages read ahead would save.
func (r *Replica) saves(ahead map[string]*behind, reg map[string]*storage.Dataset) int {
	saved := 0
	for id, b := range ahead {
		if b.versions > 0 && r.worthLoading(reg[id], b) {
			saved += b.versions
		}
	}
	return saved
}

// worthLoading reports whether a dataset behind (b: what the pages read
// ahead bring it, or nil) is caught up from the manifest: one the walk
// need not apply, whose reload costs less than the calls it saves, a
// version call at least.
func (r *Replica) worthLoading(d *storage.Dataset, b *behind) bool {
	versions := 1
	if b != nil {
		if b.other {
			return false
		}
		versions = max(1, b.versions)
	}
	return r.jumpable(d) && d.RowCount <= int64(versions)*jumpRowsPerCall
}

// manifestJobs are the loads of the datasets the manifest lists past the
// version held, at the schema version held, that are worth loading: first
// those the pages read ahead chained to the manifest's version, then the
// others, whose chains the log's reader (book) may reach meanwhile.
func (r *Replica) manifestJobs(m *ploti.Manifest, reg map[string]*storage.Dataset, ahead map[string]*behind, book *chainBook) []*loadJob {
	var jobs, later []*loadJob
	for _, md := range m.Datasets {
		d := reg[md.DatasetID]
		if d == nil || md.DecodeErr != nil || md.Version <= d.Version || md.SchemaVersion != d.SchemaVersion || !r.worthLoading(d, ahead[md.DatasetID]) {
			continue
		}
		v := &ploti.Version{DatasetID: md.DatasetID, Version: md.Version, SchemaVersion: md.SchemaVersion, RowCount: md.RowCount,
			Files: md.Files, LinksExpireAt: md.LinksExpireAt}
		j := &loadJob{d: d, v: v, size: snapshotSize(md.Files.Snapshot), ready: make(chan struct{}), logDiff: true}
		if b := ahead[md.DatasetID]; b != nil && b.chain == md.Version {
			j.noMapsBetween = true
			jobs = append(jobs, j)
			continue
		}
		j.chains = book
		later = append(later, j)
	}
	return append(jobs, later...)
}

// jumpable reports whether a dataset can be caught up from a snapshot.
func (r *Replica) jumpable(d *storage.Dataset) bool {
	// A database walks: the snapshot's difference from the table, which a
	// catch-up logs, is worked out inside the DuckDB file (decision 48).
	if d == nil || !storage.TxCan[storage.ReloadLogger](r.db) || d.Status != storage.StatusCurrent || d.Version == 0 || d.SkipUntilRemoved || d.Table == "" ||
		d.Source != "" && d.Source != storage.SourceFeed {
		return false
	}
	for _, ref := range r.opts.IDReferences {
		if ref.DatasetID == d.ID {
			return false
		}
	}
	return true
}

// behindOf counts, for each dataset, the versions the pages bring past the
// one it holds, and the API calls walking them would make: the pages and
// a version call for each event that names a version to load or merge.
func (r *Replica) behindOf(pages []*ploti.EventPage, reg map[string]*storage.Dataset) (map[string]*behind, int) {
	out := map[string]*behind{}
	calls := len(pages)
	for _, p := range pages {
		for _, ev := range p.Events {
			if !ev.IsFeed() || ev.Validate() != nil {
				continue
			}
			id := ev.Data.DatasetID
			held := 0
			if d := reg[id]; d != nil {
				held = d.Version
			}
			b := out[id]
			if b == nil {
				b = &behind{chain: held}
				out[id] = b
			}
			newer := ev.Data.Version != nil && *ev.Data.Version > held
			switch ev.Type {
			case ploti.EventUpdated:
				if newer {
					b.versions++
					calls++
					b.follow(ev.Data.PreviousVersion, *ev.Data.Version)
				}
			case ploti.EventResyncRequired, ploti.EventAdded:
				b.other = true
				if newer {
					calls++
				}
			case ploti.EventSchemaChanged, ploti.EventRemoved:
				b.other = true
			}
		}
	}
	return out, calls
}

// follow moves the chain on to version when the updated event's
// previousVersion is where it stands, and breaks it otherwise.
func (b *behind) follow(previous *int, version int) {
	if b.chain >= 0 && previous != nil && *previous == b.chain {
		b.chain = version
		return
	}
	b.chain = -1
}

// lookAhead reads the events pages after the cursor and keeps them, and
// the answer to each read, for the walk (page): up to lookAheadWindow while
// they are full, and the page that shows the log's end when it comes
// within them. A read that fails ends it; the walk meets the same answer.
// more is whether the log goes on past them.
func (r *Replica) lookAhead(ctx context.Context, sub *storage.Subscription) (pages []*ploti.EventPage, more bool, err error) {
	cursor := sub.Cursor
	read := map[string]bool{} // a cursor read before: the walk stops on it, in words
	for !read[cursor] {
		if len(pages) == r.lookAheadWindow() {
			return pages, true, nil
		}
		read[cursor] = true
		if err := r.stopped(); err != nil {
			return nil, false, err
		}
		p, err := r.api.Events(r.waitFree(ctx), sub.ID, cursor, r.opts.PageSize, nil)
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		r.kept[cursor] = keptPage{p, err}
		if err != nil || len(p.Events) == 0 || p.NextCursor == "" || p.NextCursor == cursor {
			break
		}
		pages = append(pages, p)
		if len(p.Events) < r.opts.PageSize { // the log's last page: the walk reads its end
			break
		}
		cursor = p.NextCursor
	}
	return pages, false, nil
}

// keptPage is an events read the catch-up made ahead of the walk.
type keptPage struct {
	page *ploti.EventPage
	err  error
}

// page reads the events page after cursor, or takes the answer the
// catch-up read ahead, or waits for the one it is reading (takeAhead).
func (r *Replica) page(ctx context.Context, subID, cursor string) (*ploti.EventPage, error) {
	if k, ok := r.kept[cursor]; ok {
		delete(r.kept, cursor)
		return k.page, k.err
	}
	if k, ok := r.takeAhead(ctx, cursor); ok {
		return k.page, k.err
	}
	return r.api.Events(ctx, subID, cursor, r.opts.PageSize, nil)
}
