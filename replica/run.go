package replica

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Defaults for RunOptions.
const (
	// DefaultRunInterval is how long after a sync the next one starts
	// when nothing signals one sooner.
	DefaultRunInterval = 5 * time.Minute
	// DefaultRetryMin and DefaultRetryMax bound the wait before the next
	// sync after a failed one: it doubles from the first to the second,
	// and is never longer than the interval.
	DefaultRetryMin = 5 * time.Second
	DefaultRetryMax = 5 * time.Minute
)

// What started a sync under Run (SyncResult.Trigger).
const (
	TriggerStart    = "start"    // Run's first sync
	TriggerSignal   = "signal"   // RunOptions.Signal (a webhook)
	TriggerInterval = "interval" // RunOptions.Interval after the last sync
	TriggerRetry    = "retry"    // the wait after a failed sync
	TriggerBehind   = "behind"   // events came during the last sync
)

// behindLimit is how many events after the cursor Run counts at the end
// of a sync (SyncResult.Behind); more are reported as this many.
const behindLimit = 1000

// logKeyRetryWait is the log key of the wait after a failed sync.
const logKeyRetryWait = "retry_in_ms"

// subscriptionGoneSyncs is how many syncs in a row must find the
// subscription gone before Run returns.
const subscriptionGoneSyncs = 2

// RunOptions configure Run and RunFile.
type RunOptions struct {
	// Interval is how long after the end of a sync the next one starts;
	// 0: DefaultRunInterval; negative: only when Signal delivers.
	Interval time.Duration
	// Signal, when set, starts a sync at once on each receive: a
	// webhook.Trigger's C(), whose signals coalesce (any number sent
	// during a sync cause one more).
	Signal <-chan struct{}
	// OnSync, when set, is called after each sync with its result and
	// error (nil, ErrPartial, a failure), on Run's goroutine: the next
	// sync waits for it.
	OnSync func(SyncResult, error)
	// BeforeSync and AfterSync, when set, are called around each sync with
	// the replica open (RunFile opens it only for the sync): to record
	// what the sync should carry, to read what it left.
	BeforeSync func(ctx context.Context, r *Replica)
	AfterSync  func(ctx context.Context, r *Replica, res SyncResult, err error)
	// RetryMin and RetryMax bound the wait before the next sync after a
	// failed one; 0: DefaultRetryMin and DefaultRetryMax.
	RetryMin, RetryMax time.Duration
	// StopTimeout is how long the sync under way when Run's ctx ends may
	// take to reach its next commit point (StopSync) before it is
	// cancelled, rolling back its open transaction; 0: cancelled at once.
	StopTimeout time.Duration
}

func (ro RunOptions) withDefaults() RunOptions {
	if ro.Interval == 0 {
		ro.Interval = DefaultRunInterval
	}
	if ro.RetryMin <= 0 {
		ro.RetryMin = DefaultRetryMin
	}
	if ro.RetryMax <= 0 {
		ro.RetryMax = DefaultRetryMax
	}
	return ro
}

// Run keeps the replica current until ctx ends: it syncs at once, then
// Interval after each sync, at once whenever Signal delivers, and, after
// a failed sync, after a wait that doubles from RetryMin to RetryMax.
// When a sync ends with events already waiting after the cursor, the next
// one starts at once. OnSync is told of each sync.
//
// When ctx ends, the sync under way stops at its next commit point
// (within StopTimeout, then it is cancelled) and Run returns nil. It
// returns an error, without retrying, when a sync meets one that no retry
// can mend: ErrWrongSubscription, ErrForeignCursor, ErrSubscriptionGone
// twice in a row (one 404 may be a proxy's), ErrClosed, and RunFile's
// ErrFileReplaced.
//
// Run holds the replica open throughout; r.DB() and r.ReadOnly() serve
// reads meanwhile. To leave the file free between syncs for other
// processes, use RunFile.
func (r *Replica) Run(ctx context.Context, ro RunOptions) error {
	if err := r.live(); err != nil {
		return err
	}
	rn := &runner{ro: ro.withDefaults(), log: r.log, once: func(c syncCall) (SyncResult, error) {
		return r.runSync(c, c.ro)
	}}
	return rn.loop(ctx)
}

// RunFile is Run for a file that other processes read between syncs: it
// opens the replica at path with opts for each sync and closes it after,
// so that the file is free between syncs (a DuckDB file open for writing
// cannot be opened by another process, even to read). A file deleted or
// replaced between two syncs (or during one) ends the run with
// ErrFileReplaced: no new file is made in its place. An Open that waits
// for another process to let go of the file is cancelled at once when ctx
// ends.
func RunFile(ctx context.Context, path string, opts Options, ro RunOptions) error {
	if _, err := opts.withDefaults(); err != nil {
		return err
	}
	onLocked := opts.OnLocked
	same := newSameFile(path)
	rn := &runner{ro: ro.withDefaults(), log: logs.OrDiscard(opts.Logger), once: func(c syncCall) (SyncResult, error) {
		o := same.options(opts)
		o.OnLocked = func(msg string) {
			c.waiting.Store(true)
			if c.parent.Err() != nil {
				c.cancel()
			}
			if onLocked != nil {
				onLocked(msg)
			}
		}
		r, err := Open(c.ctx, path, o)
		c.waiting.Store(false)
		if err != nil {
			return SyncResult{}, same.openFailed(err)
		}
		if err := same.opened(c.ctx, r); err != nil {
			return SyncResult{}, errors.Join(err, r.Close())
		}
		res, err := r.runSync(c, c.ro)
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
		return res, err
	}}
	return rn.loop(ctx)
}

// syncCall is one sync of Run's.
type syncCall struct {
	ro      RunOptions
	parent  context.Context    // Run's
	ctx     context.Context    // the sync's: cancelled StopTimeout after parent
	cancel  context.CancelFunc // the sync's ctx's
	stop    <-chan struct{}    // closed when parent ends
	waiting *atomic.Bool       // set while Open waits for the file: an end of parent then cancels at once
	trigger string
}

// runSync is one sync of Run's on an open replica: BeforeSync, Sync
// (stopped by c.stop), the events waiting after it, AfterSync.
func (r *Replica) runSync(c syncCall, ro RunOptions) (SyncResult, error) {
	if ro.BeforeSync != nil {
		ro.BeforeSync(c.ctx, r)
	}
	res, err := r.syncUntil(c.ctx, c.stop)
	res.Trigger = c.trigger
	select {
	case <-c.stop: // shutting down: no more calls
		return res, err
	default:
	}
	if err == nil || errors.Is(err, ErrPartial) {
		if n, berr := r.Behind(c.ctx, behindLimit); berr == nil && n >= 0 {
			res.Behind = &n
		}
	}
	if ro.AfterSync != nil {
		ro.AfterSync(c.ctx, r, res, err)
	}
	return res, err
}

// syncUntil is Sync, stopped at its next commit point when stop closes.
func (r *Replica) syncUntil(ctx context.Context, stop <-chan struct{}) (SyncResult, error) {
	done, err := r.exclusive(ctx)
	if err != nil {
		return SyncResult{}, err
	}
	defer done()
	defer r.stopOn(stop)()
	return r.syncExclusive(ctx)
}

// runner is Run's loop around one sync (once).
type runner struct {
	ro   RunOptions
	log  *slog.Logger
	once func(syncCall) (SyncResult, error)
}

// loop syncs until ctx ends (nil) or a sync meets an error no retry can
// mend.
func (rn *runner) loop(ctx context.Context) error {
	next := time.NewTimer(0) // the first sync, at start
	defer next.Stop()
	failures, gone, trigger := 0, 0, TriggerStart
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-rn.ro.Signal:
			trigger = TriggerSignal
		case <-next.C:
		}
		res, err := rn.syncOnce(ctx, trigger)
		if rn.ro.OnSync != nil {
			rn.ro.OnSync(res, err)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrWrongSubscription), errors.Is(err, ErrForeignCursor), errors.Is(err, ErrClosed), errors.Is(err, ErrFileReplaced):
			return err // nothing a later sync can change
		case errors.Is(err, ErrSubscriptionGone):
			// A deleted subscription never comes back; one 404 (a proxy's,
			// a deploy's) could, so the retry must meet it again.
			if gone++; gone >= subscriptionGoneSyncs {
				return err
			}
		default:
			gone = 0
		}
		wait, why := rn.wait(res, err, &failures)
		if err != nil {
			rn.log.Info("sync again after the failure", logs.Ms(logKeyRetryWait, wait))
		}
		trigger = why
		next.Stop()
		if wait >= 0 {
			next.Reset(wait)
		}
	}
}

// wait is how long until the next sync after one that ended with res and
// err, and why it will start; negative: only when signalled.
func (rn *runner) wait(res SyncResult, err error, failures *int) (time.Duration, string) {
	if err == nil {
		*failures = 0
		if res.Behind != nil && *res.Behind > 0 {
			return 0, TriggerBehind
		}
		return rn.ro.Interval, TriggerInterval
	}
	*failures++
	retry := min(rn.ro.RetryMin<<min(*failures-1, 16), rn.ro.RetryMax)
	if rn.ro.Interval > 0 && rn.ro.Interval < retry {
		return rn.ro.Interval, TriggerInterval
	}
	return retry, TriggerRetry
}

// syncOnce runs one sync. When ctx ends meanwhile, the sync is asked to
// stop at its next commit point and is cancelled StopTimeout later, or at
// once while Open waits for the file.
func (rn *runner) syncOnce(ctx context.Context, trigger string) (SyncResult, error) {
	if err := ctx.Err(); err != nil {
		return SyncResult{Trigger: trigger}, err
	}
	stop := make(chan struct{})
	syncCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	c := syncCall{ro: rn.ro, parent: ctx, ctx: syncCtx, cancel: cancel, stop: stop, waiting: new(atomic.Bool), trigger: trigger}
	release := context.AfterFunc(ctx, func() {
		close(stop)
		if c.waiting.Load() || rn.ro.StopTimeout <= 0 {
			cancel()
			return
		}
		time.AfterFunc(rn.ro.StopTimeout, cancel)
	})
	defer release()
	return rn.once(c)
}

// Wants reports whether the replica's syncs keep datasetID: every dataset
// when Options.Watch is on (a member's dataset.changed is about a dataset
// it watches, which the next sync lists), else the datasets the file holds
// from the feed. It is webhook.HandlerOptions.Wants for a member webhook
// whose dataset.changed events should start a sync; false after Close.
func (r *Replica) Wants(datasetID string) bool {
	if r.live() != nil {
		return false
	}
	if r.opts.Watch {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := r.db.Dataset(ctx, datasetID)
	return err == nil && d != nil && d.Status != storage.StatusRemoved
}
