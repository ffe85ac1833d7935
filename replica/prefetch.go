package replica

import (
	"context"
	"os"
	"sync"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// sharedLoadBytes bounds the snapshots loaded in one transaction: small
// datasets share a commit (a commit each cost more than loading
// a 1,000-row table), and a failure sends at most this much to be loaded
// again, each dataset on its own.
const sharedLoadBytes = 64 << 20

// sharedLoadCount bounds the datasets loaded in one transaction.
const sharedLoadCount = 500

// loadJob is one dataset of a bootstrap to load: what Prepare needs, and
// its result once ready is closed.
type loadJob struct {
	d        *storage.Dataset
	v        *ploti.Version
	newTable bool // d.Table was chosen ahead (see apply.Prepared.NewTable)
	logDiff  bool // record how the snapshot differs from the table (apply.Prepared.LogDiff)
	// noMapsBetween: the log showed every version between the held one and
	// v as an updated event (apply.PrepareOptions.NoIDMapsBetween); or
	// chains, the log's reader, may show it by the time v is prepared.
	noMapsBetween bool
	chains        *chainBook
	size          int64 // the snapshot's declared bytes; -1 when a part does not say
	reserved      int64 // what the spool budget holds for it
	p             *apply.Prepared
	ready         chan struct{}
}

func snapshotSize(files []ploti.File) int64 {
	var n int64
	for _, f := range files {
		if f.Bytes == nil {
			return -1
		}
		n += *f.Bytes
	}
	return n
}

// spoolBudget bounds the bytes of snapshots downloaded or downloading and
// not yet loaded. A job reserves its declared size; a job of unknown size,
// or one larger than the limit, reserves the whole budget: it waits until
// the spool is empty and holds it alone. So the spool never holds more
// than max(limit, one dataset's files).
type spoolBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	used  int64
}

func newSpoolBudget(limit int64) *spoolBudget {
	b := &spoolBudget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire reserves what job needs, waiting while the spool is too full;
// it gives up (false) once ctx is done.
func (b *spoolBudget) acquire(ctx context.Context, j *loadJob) bool {
	n := j.size
	if n < 0 || n > b.limit {
		n = b.limit
	}
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.cond.Broadcast()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit {
		if ctx.Err() != nil {
			return false
		}
		b.cond.Wait()
	}
	if ctx.Err() != nil {
		return false
	}
	b.used += n
	j.reserved = n
	return true
}

func (b *spoolBudget) release(j *loadJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= j.reserved
	j.reserved = 0
	b.cond.Broadcast()
}

// prefetch prepares jobs in order, at most Options.Prefetch at once and
// within the spool budget, until ctx is done; each job's ready channel
// closes when it is prepared (or given up). Wait on the WaitGroup before
// discarding what it prepared.
func (r *Replica) prefetch(ctx context.Context, jobs []*loadJob, budget *spoolBudget, wg *sync.WaitGroup) {
	slots := make(chan struct{}, r.opts.Prefetch)
	defer wg.Done()
	for _, j := range jobs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || !budget.acquire(ctx, j) {
			close(j.ready)
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			defer close(j.ready)
			known := j.noMapsBetween || j.chains.reaches(ctx, j.d.ID, j.v.Version)
			j.p = r.exec.Prepare(ctx, j.d, j.v, apply.PrepareOptions{Review: true, NoIDMapsBetween: known})
			j.p.NewTable, j.p.LogDiff = j.newTable, j.logDiff
		})
	}
}

// loadAll loads the jobs' snapshots while the next ones download: one
// goroutine prepares them ahead (prefetch), this one loads them in order,
// the consecutive ready small ones in one transaction. A dataset that
// fails is recorded failed and the others go on; a stopped or cancelled
// sync stops it, and the files downloaded ahead are removed.
func (r *Replica) loadAll(ctx context.Context, jobs []*loadJob, res *SyncResult) error {
	pctx, cancel := context.WithCancel(ctx)
	budget := newSpoolBudget(r.opts.SpoolLimit)
	var wg sync.WaitGroup
	wg.Add(1)
	go r.prefetch(pctx, jobs, budget, &wg)
	next := 0
	defer func() {
		cancel()
		wg.Wait()
		for _, j := range jobs[next:] {
			if j.p != nil {
				r.exec.Discard(j.p)
			}
		}
	}()
	for next < len(jobs) {
		if err := r.stopped(); err != nil {
			return err
		}
		select {
		case <-jobs[next].ready:
		case <-ctx.Done():
			return ctx.Err()
		}
		if jobs[next].p == nil { // given up: ctx is done
			return ctx.Err()
		}
		group := r.readyGroup(jobs[next:])
		r.progress(Progress{Phase: "load", DatasetID: group[0].d.ID, Version: group[0].v.Version})
		ps := make([]*apply.Prepared, len(group))
		for i, j := range group {
			if j.p == nil { // given up: ctx is done
				return ctx.Err()
			}
			ps[i] = j.p
		}
		errs := r.exec.LoadPrepared(ctx, ps)
		for i, j := range group {
			budget.release(j)
			if err := r.loaded(ctx, j, errs[i], res); err != nil {
				next += i
				return err
			}
		}
		next += len(group)
		r.progress(Progress{Phase: "bootstrap", Done: next, Total: len(jobs)})
	}
	return nil
}

// readyGroup is the first job and the ready ones right after it, up to
// sharedLoadBytes and sharedLoadCount, for one transaction. Loads that
// replace tables share one only up to an eighth of the file: the blocks a
// replaced table frees are reused after the checkpoint that follows
// (apply's swapped), so a transaction that replaced every table at once
// would make the file twice its size.
func (r *Replica) readyGroup(jobs []*loadJob) []*loadJob {
	limit := int64(sharedLoadBytes)
	if st, err := os.Stat(r.db.Path()); err == nil {
		limit = min(limit, max(st.Size()/8, 4<<20))
	}
	replaces := func(j *loadJob) bool { return j.d.Version > 0 && !j.newTable }
	n, bytes, replacing := 1, jobs[0].p.Footprint(), replaces(jobs[0])
	for n < len(jobs) && n < sharedLoadCount {
		select {
		case <-jobs[n].ready:
		default:
			return jobs[:n]
		}
		p := jobs[n].p
		if p == nil {
			return jobs[:n]
		}
		replacing = replacing || replaces(jobs[n])
		if bytes+p.Footprint() > sharedLoadBytes || replacing && bytes+p.Footprint() > limit {
			return jobs[:n]
		}
		bytes += p.Footprint()
		n++
	}
	return jobs[:n]
}

// loaded counts a job's load, or records its failure on the dataset; an
// error that is not the dataset's is returned.
func (r *Replica) loaded(ctx context.Context, j *loadJob, err error, res *SyncResult) error {
	if err == nil {
		res.SnapshotsLoaded++
		return nil
	}
	if ferr := r.exec.Fail(ctx, j.d, j.v.Version, err); !isDatasetError(ferr) {
		return ferr
	}
	res.Failed = appendOnce(res.Failed, j.d.ID)
	return nil
}
