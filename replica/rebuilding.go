package replica

import (
	"context"
	"log/slog"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// catchUp prepares a sync that has a cursor: datasets whose files were
// being rebuilt are loaded from a fresh manifest, failed datasets are
// repaired from their current versions, and, under the rate limit,
// datasets the log has moved past are loaded from the manifest when that
// saves calls (catchUpFromManifest).
func (r *Replica) catchUp(ctx context.Context, sub *storage.Subscription, res *SyncResult) error {
	if err := r.reloadRebuilt(ctx, sub, res); err != nil {
		return err
	}
	if err := r.repair(ctx, res); err != nil {
		return err
	}
	return r.catchUpFromManifest(ctx, sub, res)
}

// reloadRebuilt asks the manifest again for the datasets a manifest listed
// as rebuilding ("Ask for the manifest again in a few minutes to load it.
// Its events after eventCursor still apply"; docs/wire.md 8.6): it loads
// those it now lists, and records why the others still wait. The stored
// cursor stays: the fresh manifest is newer, so the events up to its
// cursor name versions at or below the one loaded, which the replay rule
// skips. A manifest that cannot be had now leaves them waiting for the
// next sync.
func (r *Replica) reloadRebuilt(ctx context.Context, sub *storage.Subscription, res *SyncResult) error {
	all, err := r.db.Datasets(ctx)
	if err != nil {
		return err
	}
	waiting := map[string]*storage.Dataset{}
	for _, d := range all {
		// A held row waits for its release, not for the files (unavailable;
		// a file from before that rule may hold one).
		if d.StatusReason == storage.ReasonRebuilding && d.Status != storage.StatusRemoved && d.Status != storage.StatusHeld && !d.SkipUntilRemoved {
			waiting[d.ID] = d
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	m, err := r.api.Manifest(r.waitFree(ctx), sub.ID, "")
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("could not ask the manifest again for datasets being rebuilt; the next sync tries again",
			logs.Err(err), slog.Int("datasets", len(waiting)))
		return nil
	}
	for _, md := range m.Datasets {
		if d := waiting[md.DatasetID]; d != nil && md.DecodeErr == nil { // an entry that does not decode: the next sync asks again
			if err := r.stopped(); err != nil {
				return err
			}
			if err := r.loadRebuilt(ctx, d, md, res); err != nil {
				return err
			}
		}
	}
	return r.db.Update(ctx, func(tx *storage.Tx) error {
		for _, u := range m.Unavailable {
			if d := waiting[u.DatasetID]; d != nil && d.StatusReason != u.Reason {
				d.StatusReason = u.Reason // still rebuilding, or now building, held, failed …
				if err := tx.PutDataset(ctx, d); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// loadRebuilt loads the version a manifest lists for a dataset whose files
// were being rebuilt, keeping what it already holds when that is the
// version; a failure is the dataset's.
func (r *Replica) loadRebuilt(ctx context.Context, d *storage.Dataset, md ploti.ManifestDataset, res *SyncResult) error {
	if d.Status == storage.StatusHeld {
		return nil // held for review: Release loads it
	}
	if d.Version == md.Version && d.Status == storage.StatusCurrent {
		d.StatusReason = ""
		return r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) })
	}
	if len(md.KeyColumns) > 0 {
		d.KeyColumns = md.KeyColumns
	}
	v := &ploti.Version{DatasetID: md.DatasetID, Version: md.Version, SchemaVersion: md.SchemaVersion, RowCount: md.RowCount,
		Files: md.Files, LinksExpireAt: md.LinksExpireAt}
	r.progress(Progress{Phase: PhaseLoad, DatasetID: md.DatasetID, Version: md.Version})
	if _, err := r.exec.LoadVersion(ctx, d, v, true); err != nil {
		if ferr := r.exec.Fail(ctx, d, md.Version, err); !isDatasetError(ferr) {
			return ferr
		}
		res.Failed = appendOnce(res.Failed, d.ID)
		return nil
	}
	res.SnapshotsLoaded++
	return nil
}
