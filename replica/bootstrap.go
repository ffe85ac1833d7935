package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// bootstrap loads every dataset the manifest lists, registers the
// unavailable ones as pending, marks held datasets the manifest no longer
// lists as removed, and stores the manifest's eventCursor.
func (r *Replica) bootstrap(ctx context.Context, sub *storage.Subscription, res *SyncResult) error {
	m, err := r.api.Manifest(ctx, sub.ID, "")
	if err != nil {
		return fmt.Errorf("get manifest of %s: %w", sub.ID, err)
	}
	if m.EventCursor == "" {
		return fmt.Errorf("get manifest of %s: answer has no eventCursor", sub.ID)
	}
	res.Bootstrapped = true
	listed := map[string]bool{}
	for i, md := range m.Datasets {
		if err := r.stopped(); err != nil {
			return err
		}
		listed[md.DatasetID] = true
		r.progress(Progress{Phase: "bootstrap", DatasetID: md.DatasetID, Version: md.Version, Done: i, Total: len(m.Datasets)})
		if err := r.loadListed(ctx, md, res); err != nil {
			return err
		}
	}
	r.progress(Progress{Phase: "bootstrap", Done: len(m.Datasets), Total: len(m.Datasets)})
	err = r.db.Update(ctx, func(tx *storage.Tx) error {
		for _, u := range m.Unavailable {
			listed[u.DatasetID] = true
			if err := markUnavailable(ctx, tx, u); err != nil {
				return err
			}
		}
		all, err := tx.Datasets(ctx)
		if err != nil {
			return err
		}
		for _, d := range all {
			if listed[d.ID] || d.Status == storage.StatusRemoved {
				continue
			}
			d.Status, d.StatusReason, d.SkipUntilRemoved = storage.StatusRemoved, storage.ReasonNotInManifest, false
			if err := tx.DeleteHolds(ctx, d.ID, ""); err != nil {
				return err
			}
			if err := tx.PutDataset(ctx, d); err != nil {
				return err
			}
		}
		return tx.SetCursor(ctx, m.EventCursor)
	})
	if err != nil {
		return err
	}
	sub.Cursor = m.EventCursor
	return nil
}

// loadListed loads one manifest dataset unless that version is already held.
func (r *Replica) loadListed(ctx context.Context, md ploti.ManifestDataset, res *SyncResult) error {
	d, err := r.db.Dataset(ctx, md.DatasetID)
	if errors.Is(err, storage.ErrNoDataset) {
		d, err = &storage.Dataset{ID: md.DatasetID, Status: storage.StatusPending}, nil
	}
	if err != nil {
		return err
	}
	if d.Version == md.Version && d.Status == storage.StatusCurrent && !r.rebootstrap {
		if d.SkipUntilRemoved { // listed: it is delivered after all
			d.SkipUntilRemoved, d.StatusReason = false, ""
			return r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) })
		}
		return nil
	}
	if d.Status == storage.StatusHeld {
		// Held for review: a reload from the manifest must not bypass the
		// review; Release loads the current version.
		return nil
	}
	v := &ploti.Version{DatasetID: md.DatasetID, Version: md.Version, SchemaVersion: md.SchemaVersion, RowCount: md.RowCount,
		Files: md.Files, LinksExpireAt: md.LinksExpireAt}
	if len(md.KeyColumns) > 0 {
		d.KeyColumns = md.KeyColumns
	}
	r.progress(Progress{Phase: "load", DatasetID: md.DatasetID, Version: md.Version})
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

func isDatasetError(err error) bool {
	var ae *apply.Error
	return errors.As(err, &ae)
}

func markUnavailable(ctx context.Context, tx *storage.Tx, u ploti.Unavailable) error {
	d, err := tx.Dataset(ctx, u.DatasetID)
	if errors.Is(err, storage.ErrNoDataset) {
		d, err = &storage.Dataset{ID: u.DatasetID}, nil
	}
	if err != nil {
		return err
	}
	if d.Status == storage.StatusCurrent && d.Version > 0 && u.Reason != storage.ReasonRebuilding {
		return nil
	}
	// A dataset listed again is delivered again: it is no longer removed.
	d.SkipUntilRemoved = false
	switch {
	case d.Version == 0:
		d.Status = storage.StatusPending
	case d.Status == storage.StatusRemoved:
		d.Status = storage.StatusCurrent // its rows stay until the repair loads the rebuilt files
	}
	d.StatusReason = u.Reason // rebuilding, or the dataset's status: building, held, failed, awaiting_release
	return tx.PutDataset(ctx, d)
}

// repair reloads failed datasets from their current versions before the
// walk goes on.
func (r *Replica) repair(ctx context.Context, res *SyncResult) error {
	all, err := r.db.Datasets(ctx)
	if err != nil {
		return err
	}
	for _, d := range all {
		if d.Status != storage.StatusFailed { // rebuilding ones: reloadRebuilt
			continue
		}
		if d.SkipUntilRemoved || d.Status == storage.StatusRemoved {
			continue
		}
		if err := r.stopped(); err != nil {
			return err
		}
		if err := r.reloadCurrent(ctx, d, true); err != nil {
			if !isDatasetError(err) {
				return err
			}
			res.Failed = appendOnce(res.Failed, d.ID)
			continue
		}
		res.SnapshotsLoaded++
	}
	return nil
}

// reloadCurrent loads the dataset's current version (dataset → current.version
// → that version's snapshot), recording a dataset-level failure on it. With
// review, a MAJOR schema change over the held version is held instead.
// A 404 or 409 here is a failure to retry, not "the dataset has left":
// CONTRACT.md 8.5 reads that only from a version an event named.
func (r *Replica) reloadCurrent(ctx context.Context, d *storage.Dataset, review bool) error {
	src := &source{api: r.api}
	cur, err := src.Current(ctx, d.ID)
	if err == nil {
		var v *ploti.Version
		if v, err = src.Version(ctx, d.ID, cur, ""); err == nil {
			r.progress(Progress{Phase: "load", DatasetID: d.ID, Version: cur})
			_, err = r.exec.LoadVersion(ctx, d, v, review)
		}
	}
	if errors.Is(err, apply.ErrGone) {
		err = fmt.Errorf("reload %s from its current version: %s", d.ID, err.Error())
	}
	if err != nil {
		return r.exec.Fail(ctx, d, 0, err)
	}
	return nil
}
