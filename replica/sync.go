package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Sync brings the file up to date: bootstrap from the manifest when there
// is no cursor (or the cursor expired), repair failed datasets, then walk
// the log a page at a time, committing the cursor with the effects of the
// pages it covers (a transaction holds the pages read ahead: group.go).
// A dataset that fails does not stop the others; Sync then returns
// ErrPartial with the result. StopSync ends it early, between
// transactions, with ErrStopped. With Options.Publish set, a sync that ran
// to its end (nil or ErrPartial) then publishes the file's copy there
// (Publish); an error of the publish is joined to the sync's.
//
// With Options.Watch, the watched datasets are kept current after the
// feed (watch.go), and the run is recorded once more with their counts.
//
// Syncs of one Replica run one at a time: a Sync called while another (or
// Rebootstrap, Release, Verify) runs waits for it to end, or for ctx.
func (r *Replica) Sync(ctx context.Context) (SyncResult, error) {
	done, err := r.exclusive(ctx)
	if err != nil {
		return SyncResult{}, err
	}
	defer done()
	return r.syncExclusive(ctx)
}

// syncExclusive is Sync, called with r.exclusive held.
func (r *Replica) syncExclusive(ctx context.Context) (SyncResult, error) {
	start := time.Now()
	ctx = fetch.WithWaitBudget(ctx) // the sync's calls share one Retry-After budget
	// The registry's list is read once between the sync's commits.
	defer r.db.Memo()()
	var res SyncResult
	before := r.heldVersions(ctx)
	r.memo.forget()
	sub, err := r.subscription(ctx)
	if err != nil {
		return res, err
	}
	name, cursor := "watches", ""
	if sub != nil {
		name, cursor = sub.ID, sub.Cursor
	}
	// The sync's transactions carry its run: the first to commit writes
	// the run's row (storage.DB.StartRun).
	ctx = r.db.StartRun(ctx, cursor)
	if err := r.readMarks(ctx); err != nil {
		r.db.FinishRun(context.WithoutCancel(ctx), runRow(res, err))
		return res, err
	}
	r.startHistories(ctx)
	end := &syncEnd{}
	if sub != nil {
		r.forgetKept()
		err = r.sync(ctx, sub, &res, end)
		r.forgetKept()
		if err == nil {
			r.recheckStale(ctx, sub)
		}
		res.Cursor = sub.Cursor // the walk moves it only once a commit stored it
	}
	if err == nil && r.opts.Watch {
		err = r.syncWatches(ctx, &res)
		end.recorded = false
	}
	r.outcomes(ctx, before, &res)
	if err == nil {
		heldForReview(&res)
	}
	res.Duration = time.Since(start)
	err = outcome(name, res, stoppedBy(ctx, err))
	return r.wrapUp(ctx, name, &res, end, err)
}

// wrapUp ends a sync whose outcome is err: it records the run's end (when
// the walk's last commit did not), then keeps the attachments, prunes the
// change log, the histories and the applied events' ids, and publishes
// the file, each after the sync's own commits.
func (r *Replica) wrapUp(ctx context.Context, name string, res *SyncResult, end *syncEnd, err error) (SyncResult, error) {
	if df := storage.AsDiskFull(err, r.db.Path()); df != nil {
		err = fmt.Errorf("sync %s: %w", name, df)
	}
	if !end.recorded {
		if ferr := r.db.FinishRun(context.WithoutCancel(ctx), runRow(*res, err)); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err == nil || errors.Is(err, ErrPartial) {
		r.keepAttachments(ctx, res)
	}
	r.pruneChanges(ctx)
	r.pruneHistory(ctx)
	r.pruneApplied(ctx)
	if r.opts.Publish != "" && (err == nil || errors.Is(err, ErrPartial)) && ctx.Err() == nil {
		pub, perr := r.Publish(ctx, r.opts.Publish)
		if perr != nil {
			return *res, errors.Join(err, perr)
		}
		res.Published = &pub
	}
	return *res, err
}

// pruneChanges keeps Options.KeepChanges versions a dataset in
// _ploti.changes, in a transaction of its own after the sync's: it is
// housekeeping, and its failure must not undo or fail a sync (review
// finding). Each sync prunes, merges or not, so a setting given to an old
// file, or a sync that failed after merging, is caught up by the next.
func (r *Replica) pruneChanges(ctx context.Context) {
	if r.opts.KeepChanges <= 0 || ctx.Err() != nil {
		return
	}
	var n int64
	var held []storage.MarkHold
	err := r.db.Update(ctx, func(tx *storage.Tx) (err error) {
		n, held, err = tx.PruneChanges(ctx, r.opts.KeepChanges)
		return err
	})
	switch {
	case err != nil:
		r.log.Warn("could not prune _ploti.changes; the next sync tries again", logs.Err(err))
	case n > 0:
		r.log.Debug("pruned _ploti.changes", slog.Int64("rows", n), slog.Int("keep_versions", r.opts.KeepChanges))
	}
	// A mark keeps what its consumer has not seen, whatever the count
	// says, and says so: a mark nobody reads any more would
	// otherwise keep the log growing without a word.
	for _, h := range held {
		r.log.Warn("_ploti.changes keeps versions past --keep-changes that this mark has not seen; advance it, or forget it (changes --mark NAME --forget)",
			slog.String("mark", h.Mark), slog.String("dataset", h.DatasetID), slog.Int("mark_version", h.Version),
			slog.Int("versions_kept", h.Versions), slog.Int("keep_versions", r.opts.KeepChanges))
	}
}

// heldForReview names in res the datasets held for review after a MAJOR
// schema change: schemas-and-holds.txt's "hold the dataset at its current
// version until someone on your side has reviewed it" needs that someone
// told, by every sync until the review, or the table is silently stale.
// It reads the holds outcomes read (res.Holds).
func heldForReview(res *SyncResult) {
	for _, h := range res.Holds {
		if h.Kind == storage.HoldLocal {
			res.HeldForReview = appendOnce(res.HeldForReview, h.DatasetID)
		}
	}
}

// syncEnd says whether the walk's last commit recorded the sync's end in
// its run's row.
type syncEnd struct {
	recorded bool
}

// outcome is the error a sync ends with: err, or ErrPartial when it ran to
// the end but some datasets failed.
func outcome(subID string, res SyncResult, err error) error {
	if err == nil && len(res.Failed) > 0 {
		return fmt.Errorf("sync %s: %d dataset(s) failed (%v); their last good versions stay: %w", subID, len(res.Failed), res.Failed, ErrPartial)
	}
	return err
}

// stoppedBy says why a sync whose context ended failed: a statement the
// cancel interrupted fails with DuckDB's bare "Interrupted!" (or the
// driver's own words), which neither errors.Is(context.Canceled) nor the
// run's row would read as a stop.
func stoppedBy(ctx context.Context, err error) error {
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// runRow is the _ploti.sync_runs row of a sync that ended with err.
func runRow(res SyncResult, err error) storage.Run {
	// A watched dataset read whole counts as a snapshot loaded, one merged
	// as a changes file merged: the run's row has no columns of its own
	// for them.
	run := storage.Run{Result: "ok", CursorTo: res.Cursor, EventsSeen: int64(res.EventsSeen),
		EventsApplied: int64(res.EventsApplied), EventsSkipped: int64(res.EventsSkipped),
		SnapshotsLoaded: int64(res.SnapshotsLoaded + res.WatchReloads), ChangesMerged: int64(res.ChangesMerged + res.WatchMerges)}
	if err != nil {
		run.Result, run.Error = "failed", err.Error()
		switch {
		case errors.Is(err, ErrPartial):
			run.Result = "partial"
		case errors.Is(err, ErrStopped), errors.Is(err, context.Canceled):
			// Stopped at a commit point (StopSync), or cancelled (the
			// CLI's SIGINT or SIGTERM, a caller's ctx): what was committed
			// stays either way, and nothing failed.
			run.Result = "stopped"
		}
	}
	return run
}

// subscription reads the file's subscription row, creating it on first use
// and refusing a file that replicates another subscription. Without a
// subscription id or a row (watches only), it is nil.
func (r *Replica) subscription(ctx context.Context) (*storage.Subscription, error) {
	sub, err := r.db.Subscription(ctx)
	if err != nil {
		return nil, err
	}
	if sub != nil && sub.Cursor == "" && r.opts.SubscriptionID != "" && sub.ID != r.opts.SubscriptionID {
		// Never bootstrapped (a mistyped id whose manifest failed): the file
		// holds nothing of it yet, so it may take the new one.
		if ds, err := r.db.Datasets(ctx); err == nil && len(ds) == 0 {
			sub = nil
		}
	}
	if sub != nil {
		if r.opts.SubscriptionID != "" && sub.ID != r.opts.SubscriptionID {
			return nil, fmt.Errorf("sync %s: %s already replicates %s; use another file: %w", r.opts.SubscriptionID, r.db.Path(), sub.ID, ErrWrongSubscription)
		}
		return sub, nil
	}
	if r.opts.SubscriptionID == "" {
		return nil, nil
	}
	sub = &storage.Subscription{ID: r.opts.SubscriptionID, APIURL: r.opts.APIURL}
	if err := r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutSubscription(ctx, sub) }); err != nil {
		return nil, err
	}
	return sub, nil
}

func (r *Replica) sync(ctx context.Context, sub *storage.Subscription, res *SyncResult, end *syncEnd) error {
	if sub.Cursor == "" || r.rebootstrap {
		if err := r.bootstrap(ctx, sub, res); err != nil {
			return err
		}
	} else if err := r.catchUp(ctx, sub, res); err != nil {
		return err
	}
	defer r.holdCheckpoints(ctx)()
	reloads := 0
	var ahead *ploti.EventPage // the page after the last one applied, read before its commit
	var guard walkGuard
	for {
		if err := r.stopped(); err != nil {
			return err
		}
		page, err := r.nextPage(ctx, sub, res, ahead, &reloads)
		ahead = nil
		if err != nil {
			return err
		}
		if page == nil {
			guard.reset()
			continue // reloaded from a fresh manifest
		}
		if len(page.Events) == 0 {
			cursor := sub.Cursor
			if page.NextCursor != "" {
				cursor = page.NextCursor
			}
			err := r.db.Update(ctx, func(tx *storage.Tx) error { return r.finish(ctx, tx, sub, cursor, res, end) })
			if err != nil {
				return err
			}
			sub.Cursor, end.recorded = cursor, true
			return nil
		}
		if err := guard.check(sub.ID, sub.Cursor, page); err != nil {
			return err
		}
		if ahead, err = r.applyPages(ctx, sub, page, &guard, res, end); err != nil || end.recorded {
			return err
		}
	}
}

// nextPage is the walk's next page of events: the one read ahead, else
// one read after the cursor. An expired cursor reloads every dataset from
// a fresh manifest, and gives no page: the walk reads again after the
// manifest's cursor (reloads counts them, to stop at the third).
func (r *Replica) nextPage(ctx context.Context, sub *storage.Subscription, res *SyncResult, ahead *ploti.EventPage, reloads *int) (*ploti.EventPage, error) {
	if ahead != nil {
		return ahead, nil
	}
	page, err := r.page(r.waitFree(ctx), sub.ID, sub.Cursor)
	switch {
	case errors.Is(err, fetch.ErrExpired):
		// feed-events.txt: "A cursor older than retention … returns 410
		// expired … Reload from the subscription's manifest".
		if *reloads++; *reloads > 2 {
			return nil, fmt.Errorf("read events of %s: the cursor of a fresh manifest expired again (%d reloads in one sync): %w", sub.ID, *reloads-1, err)
		}
		r.log.Info("cursor expired: reloading from the manifest", slog.String("subscription", sub.ID))
		r.forgetKept()
		return nil, r.bootstrap(ctx, sub, res)
	case errors.Is(err, fetch.ErrInvalidInput) && sub.Cursor != "":
		return nil, fmt.Errorf("read events of %s after cursor %q: %w: "+
			"Replica.Rebootstrap reloads every dataset from a fresh manifest into this file: %w",
			sub.ID, sub.Cursor, ErrForeignCursor, withoutCall(err))
	case err != nil:
		// The client's error names the call, the subscription and
		// the cursor already ("read events sub_1 after …").
		return nil, subscriptionGone(sub.ID, err)
	}
	return page, nil
}

// readAheadTimeout bounds the read ahead, which holds the page's
// transaction open: a slow API (a Retry-After, backoff) waits for the
// walk's own read, after the commit. A wait between tries of
// fetch.Options.LongWait or more gives the read ahead up at once.
const readAheadTimeout = 10 * time.Second

// readAhead reads the events page after cursor while a page's transaction
// is open, or gives nil: when the walk is stopped (StopSync) (before or during the
// read, so that a shutdown commits the page at once), and when the read
// fails or takes longer than readAheadTimeout. The walk then reads the
// page itself after the commit, with the client's retries.
func (r *Replica) readAhead(ctx context.Context, subID, cursor string) *ploti.EventPage {
	if r.stopped() != nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(fetch.WithLongWait(ctx, refuseLongWait), readAheadTimeout)
	defer cancel()
	go func() {
		select {
		case <-r.stopCh():
			cancel()
		case <-rctx.Done():
		}
	}()
	page, err := r.page(rctx, subID, cursor)
	if err != nil || r.stopped() != nil {
		return nil
	}
	return page
}

// finish records, in tx, that the sync has read the log to its end: the
// cursor, the time of the last sync and the run's row, so that a sync's
// last commit is its only one after its data (three commits and a
// second checkpoint at the close cost 0.04–0.05 s of a 1% merge at 10M
// rows). Sync sets res.Cursor from sub once the walk is done.
func (r *Replica) finish(ctx context.Context, tx *storage.Tx, sub *storage.Subscription, cursor string, res *SyncResult, end *syncEnd) error {
	if cursor != sub.Cursor {
		if err := tx.SetCursor(ctx, cursor); err != nil {
			return err
		}
	}
	if err := tx.SetLastSync(ctx, r.db.Now()); err != nil {
		return err
	}
	if r.opts.APIURL != "" && r.opts.APIURL != sub.APIURL {
		// The URL of the last successful run is the one to keep
		// (a first sync against a wrong --api-url stored it for good).
		if err := tx.SetAPIURL(ctx, r.opts.APIURL); err != nil {
			return err
		}
		sub.APIURL = r.opts.APIURL
	}
	done := *res
	done.Cursor = cursor
	return tx.FinishRun(ctx, runRow(done, outcome(sub.ID, done, nil)))
}

// applyEvent applies one event of a page through the batch.
func (r *Replica) applyEvent(ctx context.Context, b *apply.Batch, seen map[string]bool, i, n int, ev ploti.Event, res *SyncResult) error {
	res.EventsSeen++
	if seen[ev.ID] || !ev.IsFeed() {
		res.EventsSkipped++
		return nil
	}
	if verr := ev.Validate(); verr != nil {
		err := r.exec.Unreadable(ctx, b, ev, verr)
		var ae *apply.Error
		if !errors.As(err, &ae) {
			return err
		}
		name := ae.DatasetID
		if name == "" {
			name = "event " + ev.ID
		}
		res.Failed = appendOnce(res.Failed, name)
		res.EventsFailed++
		r.log.Warn("event not applied", slog.String("event", ev.ID), logs.Err(verr))
		return nil
	}
	seen[ev.ID] = true
	r.progress(Progress{Phase: PhaseEvents, DatasetID: ev.Data.DatasetID, Done: i + 1, Total: n})
	out, err := r.exec.Apply(ctx, b, ev)
	var ae *apply.Error
	switch {
	case errors.As(err, &ae):
		res.Failed = appendOnce(res.Failed, ae.DatasetID)
		res.EventsFailed++
		r.log.Debug("event failed",
			slog.String("event", ev.ID), slog.String("type", ev.Type), slog.String("dataset", ev.Data.DatasetID))
		return nil
	case err != nil:
		return fmt.Errorf("apply %s (%s, %s): %w", ev.ID, ev.Type, ev.Data.DatasetID, err)
	case out.Action.Kind == apply.Removed, out.Applied && out.Action.Kind.Heavy():
		// Left the subscription, or brought to a version by a later event
		// (a reload after a bad changes file): a failure of its earlier in
		// this sync (its repair, an event before) no longer makes the sync
		// partial; the event that failed is still counted (EventsFailed).
		res.Failed = slices.DeleteFunc(res.Failed, func(id string) bool { return id == ev.Data.DatasetID })
	}
	r.count(out, res)
	r.log.Debug("event",
		slog.String("event", ev.ID), slog.String("type", ev.Type), slog.String("dataset", ev.Data.DatasetID),
		slog.String("action", out.Action.Kind.String()), slog.String("why", out.Action.Why))
	return nil
}

func (r *Replica) count(out apply.Result, res *SyncResult) {
	if !out.Applied {
		res.EventsSkipped++
		return
	}
	res.EventsApplied++
	switch out.Action.Kind {
	case apply.Load, apply.ReloadCurrent:
		res.SnapshotsLoaded++
	case apply.Merge:
		res.ChangesMerged++
	}
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func (r *Replica) progress(p Progress) {
	if r.opts.Progress != nil {
		r.opts.Progress(p)
	}
}
