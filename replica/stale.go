package replica

import (
	"context"
	"log/slog"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// staleRecheckEvery is how long a stale dataset's registry row stays
// unchanged before a sync asks Ploti about it (again): Ploti checks a
// source on a schedule of hours to a day, so asking more often spends
// calls (and a sync of state-only events would make some) to learn
// little. The row's updated_at keeps the time across processes: each
// CLI sync is one.
const staleRecheckEvery = time.Hour

// recheckStale clears the staleness a feed.dataset.stale recorded once
// Ploti has checked the source since (subscriptions-manifest-files.txt: "A
// check that finds nothing new publishes no version but still moves
// lastCheckedAt"): no event tells of such a check, so without asking, a
// dataset whose source came back would show stale until its next version.
// It asks the dataset's refresh only for the datasets recorded stale whose
// registry rows no write has touched for staleRecheckEvery (never in the
// sync that recorded the staleness), one call each, or the subscription's
// datasets list (200 a page) when that is fewer calls (lookUpDatasets, as
// a page's new datasets are described). A dataset is no longer stale when
// its refresh.lastCheckedAt is after the one its stale event carried (the
// last good check before the miss); another missed check after that one
// sends another event, which records it again. Every
// row asked about is written back (cleared, or only its updated_at moved),
// so the next ask waits its hour. Best effort: it never fails a sync.
func (r *Replica) recheckStale(ctx context.Context, sub *storage.Subscription) {
	all, err := r.db.Datasets(ctx)
	if err != nil {
		r.log.Warn("could not read the datasets to recheck the stale ones", logs.Err(err))
		return
	}
	feed, stale, ids := 0, []*storage.Dataset{}, []string{}
	now := r.opts.Now()
	for _, d := range all {
		if d.Source == storage.SourceWatch || d.Status == storage.StatusRemoved {
			continue
		}
		feed++
		if d.SkipUntilRemoved {
			continue // left the subscription: no longer checked for it
		}
		if (d.StaleLastCheckedAt != nil || d.StaleNextCheckBy != nil) && now.Sub(d.UpdatedAt) >= staleRecheckEvery {
			stale, ids = append(stale, d), append(ids, d.ID)
		}
	}
	if len(stale) == 0 {
		return
	}
	refresh := map[string]*ploti.Refresh{}
	r.lookUpDatasets(ctx, sub.ID, ids, feed, func(info *ploti.Dataset) { refresh[info.ID] = info.Refresh })
	if ctx.Err() != nil {
		return
	}
	// Asked, answered or not: a dataset the list leaves out (no longer
	// deliverable) or whose call failed waits its hour too, as after a
	// failed list page (lookUpDatasets is best effort).
	var cleared []*storage.Dataset
	for _, d := range stale {
		if checkedSince(d, refresh[d.ID]) {
			d.StaleLastCheckedAt, d.StaleNextCheckBy = nil, nil
			if d.StatusReason == storage.ReasonStale {
				d.StatusReason = ""
			}
			cleared = append(cleared, d)
		}
	}
	err = r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasets(ctx, stale) })
	if err != nil {
		r.log.Warn("could not record what Ploti said of the stale datasets", logs.Err(err))
		return
	}
	for _, d := range cleared {
		r.log.Info("Ploti checked the source since it was stale: no longer stale", slog.String("dataset", d.ID))
	}
}

// checkedSince reports whether a refresh shows a source check after the
// last good one a stale dataset's event carried.
func checkedSince(d *storage.Dataset, ref *ploti.Refresh) bool {
	if ref == nil || ref.LastCheckedAt == nil {
		return false
	}
	return d.StaleLastCheckedAt == nil || ref.LastCheckedAt.After(*d.StaleLastCheckedAt)
}
