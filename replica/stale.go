package replica

import (
	"context"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
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
// datasets list (200 a page) when that is fewer calls. A dataset is no
// longer stale when its refresh.lastCheckedAt is after the one its stale
// event carried (the last good check before the miss); another missed
// check after that one sends another event, which records it again. Every
// row asked about is written back (cleared, or only its updated_at moved),
// so the next ask waits its hour. Best effort: a failure is logged and a
// later sync asks again; it never fails a sync.
func (r *Replica) recheckStale(ctx context.Context, sub *storage.Subscription) {
	all, err := r.db.Datasets(ctx)
	if err != nil {
		r.log.Warn().Err(err).Msg("could not read the datasets to recheck the stale ones")
		return
	}
	feed, stale := 0, map[string]*storage.Dataset{}
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
			stale[d.ID] = d
		}
	}
	if len(stale) == 0 {
		return
	}
	refresh, err := r.refreshOf(ctx, sub.ID, stale, feed)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn().Err(err).Int("datasets", len(stale)).Msg("could not ask Ploti whether the stale datasets were checked since; a later sync asks again")
		}
		return
	}
	// Asked, answered or not: a dataset the list leaves out (no longer
	// deliverable) or whose call failed waits its hour too.
	var asked, cleared []*storage.Dataset
	for id, d := range stale {
		if checkedSince(d, refresh[id]) {
			d.StaleLastCheckedAt, d.StaleNextCheckBy = nil, nil
			if d.StatusReason == storage.ReasonStale {
				d.StatusReason = ""
			}
			cleared = append(cleared, d)
		}
		asked = append(asked, d)
	}
	err = r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasets(ctx, asked) })
	if err != nil {
		r.log.Warn().Err(err).Msg("could not record what Ploti said of the stale datasets")
		return
	}
	for _, d := range cleared {
		r.log.Info().Str("dataset", d.ID).Msg("Ploti checked the source since it was stale: no longer stale")
	}
}

// refreshOf reads the refresh of the datasets in stale: a dataset call
// each, or the subscription's datasets list when its pages are fewer.
func (r *Replica) refreshOf(ctx context.Context, subID string, stale map[string]*storage.Dataset, feed int) (map[string]*ploti.Refresh, error) {
	out := make(map[string]*ploti.Refresh, len(stale))
	if pages := (feed + fetch.MaxDatasetsLimit - 1) / fetch.MaxDatasetsLimit; len(stale) <= pages {
		var failed error // one dataset's failure leaves the others' answers
		for id := range stale {
			d, err := r.api.Dataset(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				failed = err
				continue
			}
			out[id] = d.Refresh
		}
		if failed != nil {
			r.log.Warn().Err(failed).Msg("could not ask Ploti whether a stale dataset was checked since; a later sync asks again")
		}
		return out, nil
	}
	q := fetch.DatasetsQuery{Subscription: subID, Limit: fetch.MaxDatasetsLimit}
	for {
		p, err := r.api.DatasetsPage(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, d := range p.Datasets {
			if stale[d.ID] != nil {
				out[d.ID] = d.Refresh
			}
		}
		if p.NextCursor == nil || *p.NextCursor == "" || *p.NextCursor == q.Cursor {
			return out, nil
		}
		q.Cursor = *p.NextCursor
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
