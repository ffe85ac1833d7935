package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// aheadFiles bounds the merges a page fetches ahead of the one applying,
// being fetched or fetched and not taken: their changes files wait in the
// spool (each at most sharedMergeBytes) until their event takes them.
// Executor.AheadBytes bounds them further.
const aheadFiles = 8

// aheadSlots is how many merges a page fetches ahead at most: aheadFiles,
// fewer when limit (Executor.AheadBytes; 0 for no bound but aheadFiles)
// holds fewer files of sharedMergeBytes, and one at least (a merge's own
// files come to the spool anyway).
func aheadSlots(limit int64) int {
	if limit <= 0 {
		return aheadFiles
	}
	return int(max(1, min(aheadFiles, limit/sharedMergeBytes)))
}

// aheadFetchers is how many of them are fetched at once.
const aheadFetchers = 4

// ahead fetches a page's small merges (their version, their changes files,
// and the files' columns, read on a connection of their own)
// while the batch applies the events before them (the walk
// asked, downloaded and probed each merge's file in turn, one core busy
// and the wire idle between). It only reads: the batch's registry rows
// are read once, before it starts, and its results are taken, or thrown
// away, by the events they were fetched for.
type ahead struct {
	x      *Executor
	cancel context.CancelFunc
	done   chan struct{}
	slots  chan struct{} // one an item sent to a fetcher and not yet taken or dropped
	mu     sync.Mutex
	items  map[string]*aheadItem // by aheadKey
	order  []*aheadItem          // in the events' order
}

// aheadItem is one merge fetched ahead; ready closes when it is.
type aheadItem struct {
	n     int // its place in the order
	ready chan struct{}
	v     *ploti.Version
	err   error // the version's error
	asked bool  // the version was handed over (once: a fault is met once)
	paths []string
	dlErr error // the download's error
	tried bool  // the files were downloaded, or failed to
	taken bool  // taken by its event, or passed over: no event will take it
	slot  bool  // it holds one of the slots (see free)
}

func aheadKey(datasetID string, version int) string { return fmt.Sprintf("%s@%d", datasetID, version) }

// aheadJob is a merge Ahead fetches: a dataset's version, and the link
// its event gave.
type aheadJob struct {
	id, link string
	version  int
}

// Ahead starts fetching the merges that events, applied in order through b,
// will make, as far as the registry and Decide tell before any of them is
// applied (planAhead). It returns at once; Batch.StopAhead stops it and
// removes the files no event took. A merge it did not fetch is fetched by
// its event as before; one it fetched with an error fails with that error.
func (x *Executor) Ahead(ctx context.Context, b *Batch, events []ploti.Event) error {
	jobs, err := x.planAhead(ctx, b, events)
	if err != nil || len(jobs) == 0 {
		return err
	}
	actx, cancel := context.WithCancel(ctx)
	a := &ahead{x: x, cancel: cancel, done: make(chan struct{}), slots: make(chan struct{}, aheadSlots(x.AheadBytes)), items: map[string]*aheadItem{}}
	for i, j := range jobs {
		it := &aheadItem{n: i, ready: make(chan struct{})}
		a.items[aheadKey(j.id, j.version)] = it
		a.order = append(a.order, it)
	}

	b.ahead = a
	go a.run(actx, jobs)
	return nil
}

// planAhead lists the merges the events will make: from each dataset's
// registry row and holds, the events' decisions in order, a merge moving
// the held version on. A dataset whose event does anything but merge,
// skip, or record a missed check or a delay is not looked at further.
func (x *Executor) planAhead(ctx context.Context, b *Batch, events []ploti.Event) ([]aheadJob, error) {
	var jobs []aheadJob
	planned := map[string]bool{}
	states := map[string]*State{}
	unsure := map[string]bool{}
	for _, ev := range events {
		id := ev.Data.DatasetID
		if !ev.IsFeed() || id == "" || unsure[id] || ev.Validate() != nil {
			continue
		}
		st := states[id]
		if st == nil {
			d, holds, err := b.dataset(ctx, id)
			if err != nil {
				return nil, err
			}
			if d == nil || d.Table == "" {
				unsure[id] = true
				continue
			}
			s := StateOf(d, holds)
			st = &s
			states[id] = st
		}
		switch a := Decide(*st, ev, x.onMajor()); a.Kind {
		case Merge:
			link := ""
			if ev.Data.Links != nil {
				link = ev.Data.Links.Version
			}
			if k := aheadKey(id, a.Version); !planned[k] {
				planned[k] = true
				jobs = append(jobs, aheadJob{id: id, link: link, version: a.Version})
			}
			st.Version = a.Version
		case Skip, Stale, Delayed:
		default:
			unsure[id] = true
		}
	}
	return jobs, nil
}

// run hands the jobs out in the events' order, each once a slot is free,
// to a few fetchers at once: over a real link each version and download
// waits a round trip, which one fetcher would pay in turn.
func (a *ahead) run(ctx context.Context, jobs []aheadJob) {
	todo := make(chan aheadJob)
	var wg sync.WaitGroup
	for range min(aheadFetchers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range todo {
				a.fetch(ctx, a.items[aheadKey(j.id, j.version)], j.id, j.version, j.link)
			}
		}()
	}
	sent := 0
	defer func() {
		close(todo)
		wg.Wait()
		for _, it := range a.order[sent:] { // never fetched: not waited for
			close(it.ready)
		}
		close(a.done)
	}()
	for _, j := range jobs {
		select {
		case a.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		it := a.items[aheadKey(j.id, j.version)]
		a.mu.Lock()
		it.slot = true
		a.mu.Unlock()
		select {
		case todo <- j:
			sent++
		case <-ctx.Done():
			a.mu.Lock()
			a.free(it)
			a.mu.Unlock()
			return
		}
	}
}

// fetch asks for one version and, when its changes files are small enough
// to share the page's transaction, downloads them, hands them over, and
// reads their columns (storage.ChangesInspector) for the merge
// that takes them. An item passed over before or while it is fetched
// keeps nothing.
func (a *ahead) fetch(ctx context.Context, it *aheadItem, id string, version int, link string) {
	a.mu.Lock()
	skip := it.taken
	a.mu.Unlock()
	var paths []string
	if !skip {
		paths = a.download(ctx, it, id, version, link)
	}
	a.mu.Lock()
	if paths != nil && it.taken {
		a.x.Source.Discard(paths)
		paths = nil
	}
	it.paths = paths
	if paths == nil {
		a.free(it)
	}
	a.mu.Unlock()
	close(it.ready)
	if ci, ok := a.x.DB.Engine().(storage.ChangesInspector); ok && paths != nil {
		ci.InspectChanges(ctx, paths)
	}
}

// download is fetch's version and files, or nil paths. Their errors are
// the event's (a fault seen once is not asked again), but for a stopped
// fetch's, which leave the event to ask.
func (a *ahead) download(ctx context.Context, it *aheadItem, id string, version int, link string) []string {
	v, err := a.x.Source.Version(ctx, id, version, link)
	if err != nil {
		if ctx.Err() == nil {
			it.err = err
		}
		return nil
	}
	it.v = v
	var n int64
	for _, f := range v.Files.Changes {
		if f.Bytes == nil {
			return nil
		}
		n += *f.Bytes
	}
	if len(v.Files.Changes) == 0 || n > sharedMergeBytes {
		return nil
	}
	paths, err := a.x.Source.Download(ctx, v, "changes")
	if err != nil {
		if ctx.Err() == nil {
			it.dlErr, it.tried = err, true
		}
		return nil
	}
	it.tried = true
	return paths
}

// item returns the item fetched for a dataset's version, if there is one.
// With wait, it is the event's own: the events apply in order, so the
// items before it that no event took never will be, and go (their slots
// free for the next), and it waits until the item is fetched. Without,
// it returns the item only if it is fetched already, and passes over
// nothing (a reload asking for a later version than its event's).
func (a *ahead) item(ctx context.Context, datasetID string, version int, wait bool) *aheadItem {
	if a == nil {
		return nil
	}
	it := a.items[aheadKey(datasetID, version)]
	if it == nil {
		return nil
	}
	if wait {
		a.mu.Lock()
		for _, o := range a.order[:it.n] {
			a.drop(o)
		}
		a.mu.Unlock()
		select {
		case <-it.ready:
			return it
		case <-ctx.Done():
			return nil
		}
	}
	select {
	case <-it.ready:
		return it
	default:
		return nil
	}
}

// version hands over the version fetched ahead and its error, once; nil
// and nil when none was, or it was handed over already. wait is item's.
func (a *ahead) version(ctx context.Context, datasetID string, version int, wait bool) (*ploti.Version, error) {
	it := a.item(ctx, datasetID, version, wait)
	if it == nil {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if it.asked {
		return nil, nil
	}
	it.asked = true
	return it.v, it.err
}

// files takes the changes files fetched ahead for a dataset's version v
// (the taker removes them), or the error their download ended with; ok is
// false when there are none to take. Files fetched for another answer
// than v go first: the caller downloads v's under the same names.
func (a *ahead) files(ctx context.Context, datasetID string, v *ploti.Version) (paths []string, ok bool, err error) {
	it := a.item(ctx, datasetID, v.Version, true)
	if it == nil {
		return nil, false, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if it.taken || it.v != v || !it.tried {
		a.drop(it)
		return nil, false, nil
	}
	it.taken = true
	if it.dlErr != nil {
		return nil, true, it.dlErr
	}
	paths, it.paths = it.paths, nil
	a.free(it)
	return paths, true, nil
}

// drop passes over an item no event will take: its files go, and its slot
// is free (or will be, once its fetch ends). a.mu is held.
func (a *ahead) drop(it *aheadItem) {
	it.taken = true
	if it.paths != nil {
		a.x.Source.Discard(it.paths)
		it.paths = nil
		a.free(it)
	}
}

// free gives an item's slot back, if it holds one. a.mu is held.
func (a *ahead) free(it *aheadItem) {
	if it.slot {
		it.slot = false
		<-a.slots
	}
}

// stop ends the fetching and removes the files no event took.
func (a *ahead) stop() {
	if a == nil {
		return
	}
	a.cancel()
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, it := range a.order {
		a.drop(it)
	}
}
