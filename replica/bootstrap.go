package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// bootstrap loads every dataset the manifest lists, registers the
// unavailable ones as pending, marks held datasets the manifest no longer
// lists as removed, and stores the manifest's eventCursor. It makes no API
// call per dataset beyond its files (a call each made a
// statewide subscription wait on the rate limit): titles, places and
// topics come from the datasets list, 200 a page, and the registry is read
// once.
func (r *Replica) bootstrap(ctx context.Context, sub *storage.Subscription, res *SyncResult) error {
	m, err := r.api.Manifest(r.waitFree(ctx), sub.ID, "")
	if err != nil {
		// The client's error names the call, the subscription and the
		// endpoint already ("get manifest sub_1: GET …").
		return subscriptionGone(sub.ID, err)
	}
	if m.EventCursor == "" {
		return fmt.Errorf("get manifest of %s: answer has no eventCursor", sub.ID)
	}
	res.Bootstrapped = true
	listed, jobs, rows, err := r.planBootstrap(ctx, m, res)
	if err != nil {
		return err
	}
	r.describeAll(ctx, sub.ID, len(m.Datasets), jobs)
	if err := r.nameTables(ctx, jobs); err != nil {
		return err
	}
	if err := r.registerPending(ctx, jobs); err != nil {
		return err
	}
	if err := r.loadAll(ctx, jobs, res); err != nil {
		return err
	}
	r.progress(Progress{Phase: PhaseBootstrap, Done: len(jobs), Total: len(jobs)})
	if err := r.finishBootstrap(ctx, m, listed, rows); err != nil {
		return err
	}
	sub.Cursor = m.EventCursor
	return nil
}

// planBootstrap reads the manifest against the registry: the datasets it
// lists, a load for each to bring (or bring again), and the registry
// rows to write with the cursor. A manifest entry that does not decode
// fails its dataset alone.
func (r *Replica) planBootstrap(ctx context.Context, m *ploti.Manifest, res *SyncResult) (map[string]bool, []*loadJob, []*storage.Dataset, error) {
	reg, err := r.registry(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	listed := map[string]bool{}
	var jobs []*loadJob
	var rows []*storage.Dataset // registry rows to write with the cursor
	for _, md := range m.Datasets {
		listed[md.DatasetID] = true
		d := reg[md.DatasetID]
		if d == nil {
			d = &storage.Dataset{ID: md.DatasetID, Status: storage.StatusPending}
		}
		if md.DecodeErr != nil {
			if err := r.badManifestEntry(ctx, d, md, res); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		if d.Source == storage.SourceWatch {
			// Kept from a watch until now: Ploti's version numbers are not
			// Data Feeds', the feed loads it whole and keeps it from now on.
			d.TakenFrom, d.Version = d.Version, 0
		}
		switch {
		case d.Version == md.Version && d.Status == storage.StatusCurrent && !r.rebootstrap:
			if d.SkipUntilRemoved { // listed: it is delivered after all
				d.SkipUntilRemoved, d.StatusReason = false, ""
				rows = append(rows, d)
			}
			continue
		case d.Status == storage.StatusHeld:
			// Held for review: a reload from the manifest must not bypass the
			// review; Release loads the current version.
			continue
		}
		if len(md.KeyColumns) > 0 {
			d.KeyColumns = md.KeyColumns
		}
		v := &ploti.Version{DatasetID: md.DatasetID, Version: md.Version, SchemaVersion: md.SchemaVersion, RowCount: md.RowCount,
			Files: md.Files, LinksExpireAt: md.LinksExpireAt}
		jobs = append(jobs, &loadJob{d: d, v: v, size: snapshotSize(md.Files.Snapshot), ready: make(chan struct{})})
	}
	return listed, jobs, rows, nil
}

// badManifestEntry fails the dataset of a manifest entry that does not
// decode (ploti.ManifestDataset.DecodeErr), as any bad input from the
// network fails its dataset alone (docs/design.md invariant 4): it keeps what
// it holds, the other datasets load, and the next sync repairs it through
// the versions API. One the file holds at that version, or holds for
// review, is left as it is.
func (r *Replica) badManifestEntry(ctx context.Context, d *storage.Dataset, md ploti.ManifestDataset, res *SyncResult) error {
	if d.Status == storage.StatusHeld || d.Status == storage.StatusCurrent && d.Version == md.Version && md.Version > 0 {
		return nil
	}
	r.log.Warn("manifest entry not applied", slog.String("dataset", md.DatasetID), logs.Err(md.DecodeErr))
	if ferr := r.exec.Fail(ctx, d, md.Version, fmt.Errorf("%w: %w", apply.ErrBadInput, md.DecodeErr)); !isDatasetError(ferr) {
		return ferr
	}
	res.Failed = appendOnce(res.Failed, d.ID)
	return nil
}

// registry reads every registry row, by dataset id.
func (r *Replica) registry(ctx context.Context) (map[string]*storage.Dataset, error) {
	all, err := r.db.Datasets(ctx)
	if err != nil {
		return nil, err
	}
	reg := make(map[string]*storage.Dataset, len(all))
	for _, d := range all {
		reg[d.ID] = d
	}
	return reg, nil
}

// describeAll gives the jobs' datasets that have no title their title,
// place and topic from the datasets list of the subscription, when that
// takes fewer calls than asking for each (the load asks for those left).
// Best effort, as a load's own: a failure leaves them to the loads.
//
// A dataset that keeps history needs its version's publishedAt, which a
// manifest does not give: its history's _at macro places the version's
// rows and ends by it (a reload at an unknown time showed a
// record's rows before and after it at once). The list gives it
// (current.publishedAt, when current is the version loaded), so it is
// read whenever such a dataset is loaded from the manifest.
func (r *Replica) describeAll(ctx context.Context, subID string, total int, jobs []*loadJob) {
	missing := map[string]*storage.Dataset{}
	timed := map[string]*ploti.Version{}
	for _, j := range jobs {
		if j.d.Title == "" {
			missing[j.d.ID] = j.d
		}
		if r.exec.History != nil && r.exec.History(j.d.ID) && j.v.PublishedAt.IsZero() {
			timed[j.d.ID] = j.v
		}
	}
	pages := (total + fetch.MaxDatasetsLimit - 1) / fetch.MaxDatasetsLimit
	if len(missing) <= pages && len(timed) == 0 {
		return
	}
	r.listDatasets(ctx, subID, func(info *ploti.Dataset) bool {
		if d := missing[info.ID]; d != nil {
			apply.Describe(d, info)
			delete(missing, d.ID)
		}
		if v := timed[info.ID]; v != nil {
			if info.Current != nil && info.Current.Version == v.Version {
				v.PublishedAt = info.Current.PublishedAt
			}
			delete(timed, info.ID)
		}
		return len(missing) > 0 || len(timed) > 0
	})
}

// nameTables chooses the table names of the jobs' new datasets, with one
// read of the catalog for all (storage.DB.FreeTableNames).
func (r *Replica) nameTables(ctx context.Context, jobs []*loadJob) error {
	var ids []string
	for _, j := range jobs {
		if j.d.Table == "" {
			ids = append(ids, j.d.ID)
		}
	}
	names, err := r.db.FreeTableNames(ctx, ids)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if name, ok := names[j.d.ID]; ok {
			j.d.Table, j.newTable = name, true
		}
	}
	return nil
}

// registerPending writes, in one transaction before any load, a pending
// row for each listed dataset the registry does not know yet, so that a
// bootstrap stopped half way (a signal, a crash, a failure of the API)
// leaves status listing what it did not load, never a silent partial set.
// The loads then write over these rows; the next sync, with no cursor
// stored, bootstraps again and loads them.
func (r *Replica) registerPending(ctx context.Context, jobs []*loadJob) error {
	var rows []*storage.Dataset
	for _, j := range jobs {
		if j.newTable {
			d := *j.d
			d.Status, d.StatusReason = storage.StatusPending, storage.ReasonNotLoadedYet
			rows = append(rows, &d)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	return r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasets(ctx, rows) })
}

// finishBootstrap writes, in one transaction with the manifest's cursor,
// the rows the bootstrap changed without a load: listed datasets no
// longer skipped, unavailable ones, and held ones the manifest no longer
// lists, marked removed.
func (r *Replica) finishBootstrap(ctx context.Context, m *ploti.Manifest, listed map[string]bool, rows []*storage.Dataset) error {
	reg, err := r.registry(ctx) // the loads and failures wrote rows
	if err != nil {
		return err
	}
	var ends []string // datasets whose holds end
	for _, u := range m.Unavailable {
		listed[u.DatasetID] = true
		if d := unavailable(reg[u.DatasetID], u); d != nil {
			rows = append(rows, d)
		}
	}
	for _, d := range reg {
		if listed[d.ID] || d.Status == storage.StatusRemoved || d.Source == storage.SourceWatch {
			continue // a watched dataset is the watch's to keep
		}
		d.Status, d.StatusReason, d.SkipUntilRemoved = storage.StatusRemoved, storage.ReasonNotInManifest, false
		ends = append(ends, d.ID)
		rows = append(rows, d)
	}
	var fresh []string
	for _, d := range rows {
		if d.Table == "" {
			fresh = append(fresh, d.ID)
		}
	}
	names, err := r.db.FreeTableNames(ctx, fresh)
	if err != nil {
		return err
	}
	for _, d := range rows {
		if d.Table == "" {
			d.Table = names[d.ID]
		}
	}
	slices.SortFunc(rows, func(a, b *storage.Dataset) int { return strings.Compare(a.ID, b.ID) })
	return r.db.Update(ctx, func(tx *storage.Tx) error {
		if err := tx.DeleteHoldsOf(ctx, ends, ""); err != nil {
			return err
		}
		if err := tx.PutDatasets(ctx, rows); err != nil {
			return err
		}
		return tx.SetCursor(ctx, m.EventCursor)
	})
}

func isDatasetError(err error) bool {
	var ae *apply.Error
	return errors.As(err, &ae)
}

// unavailable is the registry row of a dataset the manifest lists as
// unavailable (d: its row, or nil), or nil when the row stays as it is.
func unavailable(d *storage.Dataset, u ploti.Unavailable) *storage.Dataset {
	if d == nil {
		d = &storage.Dataset{ID: u.DatasetID}
	}
	if d.Status == storage.StatusCurrent && d.Version > 0 && u.Reason != storage.ReasonRebuilding {
		return nil
	}
	// Held for review here (a major schema change, decision 4): the user's
	// release loads Ploti's version then, whatever the manifest says of its
	// files now, so the row keeps its status and why; listed, it is
	// delivered again (below) if it was skipped.
	if d.Status == storage.StatusHeld && d.Version > 0 {
		if !d.SkipUntilRemoved {
			return nil
		}
		d.SkipUntilRemoved, d.StatusReason = false, storage.ReasonMajorSchemaChange
		return d
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
	return d
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
		if d.SkipUntilRemoved || d.Status == storage.StatusRemoved || d.Source == storage.SourceWatch {
			continue // a watched dataset is repaired by the watch's walk
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
		if d.Status == storage.StatusHeld {
			continue // held for review instead (a MAJOR change): nothing loaded
		}
		res.SnapshotsLoaded++
	}
	return nil
}

// reloadCurrent loads the dataset's current version (dataset → current.version
// → that version's snapshot), recording a dataset-level failure on it. With
// review, a MAJOR schema change over the held version is held instead.
// A 404 or 409 here is a failure to retry, not "the dataset has left":
// docs/wire.md 8.5 reads that only from a version an event named.
func (r *Replica) reloadCurrent(ctx context.Context, d *storage.Dataset, review bool) error {
	src := &source{api: r.api}
	cur, err := src.Current(ctx, d.ID)
	if err == nil {
		var v *ploti.Version
		if v, err = src.Version(ctx, d.ID, cur, ""); err == nil {
			r.progress(Progress{Phase: PhaseLoad, DatasetID: d.ID, Version: cur})
			_, err = r.exec.LoadVersion(ctx, d, v, review)
		}
	}
	if errors.Is(err, apply.ErrGone) {
		err = fmt.Errorf("reload %s from its current version: %s", d.ID, err.Error())
	}
	if err != nil {
		// cur is the version it loads, or 0 when the dataset's call failed:
		// the failure names it (docs/design.md, "Errors and logging").
		return r.exec.Fail(ctx, d, cur, err)
	}
	return nil
}

// describePending gives the datasets a page made pending their titles,
// places and topics before the page commits: one call each, or the
// subscription's datasets list when that takes fewer calls. Best effort.
func (r *Replica) describePending(ctx context.Context, subID string, b *apply.Batch) {
	ids, known, err := b.Undescribed(ctx)
	if len(ids) == 0 {
		return
	}
	if err != nil {
		r.log.Debug("count the registry's datasets", logs.Err(err))
		known = len(ids)
	}
	r.lookUpDatasets(ctx, subID, ids, known, b.Describe)
}

// lookUpDatasets gives fn each dataset of ids as the API describes it: a
// dataset call each, or the subscription's datasets list (200 a page) when
// its pages are fewer (known: how many datasets the subscription holds),
// read until each is found or the list ends. Best effort: a failed call
// skips its dataset, a failed page ends the list, and a dataset the list
// leaves out is not given.
func (r *Replica) lookUpDatasets(ctx context.Context, subID string, ids []string, known int, fn func(*ploti.Dataset)) {
	if pages := (known + fetch.MaxDatasetsLimit - 1) / fetch.MaxDatasetsLimit; len(ids) <= pages {
		for _, id := range ids {
			info, err := r.api.Dataset(ctx, id)
			if err != nil {
				r.log.Debug("describe dataset", slog.String("dataset", id), logs.Err(err))
				continue
			}
			fn(info)
		}
		return
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	r.listDatasets(ctx, subID, func(info *ploti.Dataset) bool {
		if want[info.ID] {
			fn(info)
			delete(want, info.ID)
		}
		return len(want) > 0
	})
}

// listDatasets reads the subscription's datasets list, 200 a page, giving
// each to fn until fn returns false or the list ends. Best effort: an
// error ends it.
func (r *Replica) listDatasets(ctx context.Context, subID string, fn func(*ploti.Dataset) bool) {
	q := fetch.DatasetsQuery{Subscription: subID, Limit: fetch.MaxDatasetsLimit}
	for {
		page, err := r.api.DatasetsPage(ctx, q)
		if err != nil {
			r.log.Debug("list the subscription's datasets", logs.Err(err))
			return
		}
		for i := range page.Datasets {
			if !fn(&page.Datasets[i]) {
				return
			}
		}
		if page.NextCursor == nil || *page.NextCursor == "" || *page.NextCursor == q.Cursor {
			return
		}
		q.Cursor = *page.NextCursor
	}
}
