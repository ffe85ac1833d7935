package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// WatchAPI is what the replica needs from the API client for watched
// datasets (*fetch.Client has it).
type WatchAPI interface {
	Watches(ctx context.Context) ([]ploti.Watch, error)
	DatasetInfo(ctx context.Context, datasetID string) (*ploti.DatasetInfo, error)
	SpoolChanges(ctx context.Context, datasetID string, version int, name string) (*fetch.ChangesSpool, error)
	SpoolRows(ctx context.Context, datasetID string, ids []string, name string) (*fetch.RowSet, error)
}

// watchSource adapts the WatchAPI to apply.WatchSource: it names the spool
// files and maps the API's errors to apply's.
type watchSource struct {
	api WatchAPI
	src *source // for Discard
}

func classifyWatch(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fetch.ErrMalformed):
		return fmt.Errorf("%w: %w", apply.ErrBadInput, err)
	case errors.Is(err, fetch.ErrOutsideCoverage):
		return fmt.Errorf("%w: %w", apply.ErrLeftCoverage, err)
	case errors.Is(err, fetch.ErrNotDeliverable):
		return fmt.Errorf("%w: %w", apply.ErrPlanClosed, err)
	}
	return err
}

func (s *watchSource) Info(ctx context.Context, datasetID string) (*ploti.DatasetInfo, error) {
	info, err := s.api.DatasetInfo(ctx, datasetID)
	return info, classifyWatch(withoutCall(err))
}

func (s *watchSource) Changes(ctx context.Context, datasetID string, version int) (*apply.VersionChanges, error) {
	cs, err := s.api.SpoolChanges(ctx, datasetID, version, fileName(datasetID, version, "changes", 0, ".ndjson"))
	if errors.Is(err, fetch.ErrExpired) {
		return nil, fmt.Errorf("%w: %w", apply.ErrVersionGone, err)
	}
	if err != nil {
		return nil, classifyWatch(err)
	}
	return &apply.VersionChanges{ChangesPage: cs.ChangesPage, Path: cs.Path}, nil
}

func (s *watchSource) Rows(ctx context.Context, datasetID string, ids []string) (*apply.RowSet, error) {
	kind := "rows"
	if ids != nil {
		kind = "ids"
	}
	rs, err := s.api.SpoolRows(ctx, datasetID, ids, fileName(datasetID, 0, kind, 0, ".ndjson"))
	err = withoutCall(err) // apply's error names the dataset
	if ids != nil && (errors.Is(err, fetch.ErrUnnamableID) || errors.Is(err, fetch.ErrRowsMoved)) {
		return nil, fmt.Errorf("%w: %w", apply.ErrReadWhole, err)
	}
	if err != nil {
		return nil, classifyWatch(err)
	}
	return &apply.RowSet{Version: rs.Version, Columns: rs.Columns, Path: rs.Path, Rows: rs.Rows}, nil
}

func (s *watchSource) Discard(paths []string) { s.src.Discard(paths) }

// syncWatches keeps each watched dataset current: one call
// lists every watch with its dataset's version now, and each dataset that
// moved is caught up (apply.Executor.SyncWatched). A dataset the feed
// keeps is left to it: the watch is only a signal for it. A watched
// dataset no longer watched stays, marked removed (unwatched).
func (r *Replica) syncWatches(ctx context.Context, res *SyncResult) error {
	if r.exec.Watch == nil {
		return errors.New("sync watches: the API client has no watch calls")
	}
	ws, err := r.watchAPI.Watches(ctx)
	if err != nil {
		return err // the client's error names the call: "list watches: GET …"
	}
	all, err := r.db.Datasets(ctx)
	if err != nil {
		return err
	}
	byID := map[string]*storage.Dataset{}
	for _, d := range all {
		byID[d.ID] = d
	}
	watched := map[string]bool{}
	for i, w := range ws {
		if err := r.stopped(); err != nil {
			return err
		}
		watched[w.DatasetID] = true
		res.WatchesSeen++
		d := byID[w.DatasetID]
		if d != nil && d.Source != storage.SourceWatch && d.Status != storage.StatusRemoved {
			continue // kept from the feed
		}
		if d == nil {
			d = &storage.Dataset{ID: w.DatasetID, Title: w.Title, Status: storage.StatusPending, Source: storage.SourceWatch}
		}
		r.progress(Progress{Phase: PhaseWatch, DatasetID: w.DatasetID, Done: i, Total: len(ws)})
		out, err := r.exec.SyncWatched(ctx, d, w.Version)
		var ae *apply.Error
		switch {
		case errors.As(err, &ae):
			res.Failed = appendOnce(res.Failed, ae.DatasetID)
		case err != nil:
			return fmt.Errorf("sync watched %s: %w", w.DatasetID, err)
		}
		r.countWatch(out, res)
		r.log.Debug("watch",
			slog.String("dataset", w.DatasetID), slog.String("action", out.Kind.String()),
			slog.String("why", out.Why), slog.Int("version", out.Version))
	}
	r.progress(Progress{Phase: PhaseWatch, Done: len(ws), Total: len(ws)})
	return r.markUnwatched(ctx, all, watched)
}

func (r *Replica) countWatch(out apply.WatchResult, res *SyncResult) {
	switch out.Kind {
	case apply.WatchMerge:
		res.WatchMerges++
	case apply.WatchReload:
		res.WatchReloads++
	}
}

// markUnwatched marks the watched datasets the member no longer watches
// as removed: their rows stay and stop updating.
func (r *Replica) markUnwatched(ctx context.Context, all []*storage.Dataset, watched map[string]bool) error {
	var gone []*storage.Dataset
	for _, d := range all {
		if d.Source == storage.SourceWatch && !watched[d.ID] && (d.Status != storage.StatusRemoved || d.StatusReason != storage.ReasonUnwatched) {
			d.Status, d.StatusReason = storage.StatusRemoved, storage.ReasonUnwatched
			gone = append(gone, d)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return r.db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasets(ctx, gone) })
}
