package apply

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// History and the reload log hook into loads and merges here: each writes
// in the transaction of the table it follows (invariant 1).

// keeps reports whether a dataset keeps history.
func (x *Executor) keeps(datasetID string) bool { return x.History != nil && x.History(datasetID) }

// historyVersion describes a version of d for the history; at is its
// publishedAt (promotedAt), nil or zero when not known.
func historyVersion(d *storage.Dataset, source string, version int, at *time.Time) storage.HistoryVersion {
	hv := storage.HistoryVersion{DatasetID: d.ID, Table: d.Table, Source: source, Version: version}
	if at != nil && !at.IsZero() {
		hv.PublishedAt = at
	}
	return hv
}

// reloadLog is what a reload keeps of the held table, before the swap, to
// record what it changed: in the history (which holds the held rows), or,
// without history, in _ploti.changes when the file has marks (a digest of
// the held rows). nil when nothing needs it.
type reloadLog struct {
	history bool
	logged  bool // the load logs its changes itself (Prepared.LogDiff)
	digest  storage.Digest
}

// beforeReload gets ready to record a reload of d to version, of the
// columns next; logged says the load logs its changes in _ploti.changes
// itself. A reload that takes d over from the other source (d.TakenFrom)
// first renumbers what the log keeps of it, and logs what it changes as a
// reload of the held version would.
func (x *Executor) beforeReload(ctx context.Context, tx *storage.Tx, d *storage.Dataset, version int, next []ploti.Column, logged bool) (*reloadLog, error) {
	held := d.Version
	if d.TakenFrom > 0 && version > 0 {
		if err := tx.RebaseLog(ctx, d.ID, d.TakenFrom, version); err != nil {
			return nil, err
		}
		held = d.TakenFrom // cleared once the takeover commits (tookOver)
	}
	if x.keeps(d.ID) {
		return &reloadLog{history: true, logged: logged}, nil
	}
	if logged || !x.LogReloads || held == 0 || d.Table == "" {
		return nil, nil
	}
	ok, err := tx.Tables().TableExists(ctx, d.Table)
	if err != nil || !ok {
		return nil, err
	}
	rlog, err := tx.ReloadLog()
	if err != nil {
		return nil, err
	}
	dg, err := rlog.DigestTable(ctx, d.Table, d.Columns, next)
	if err != nil {
		return nil, err
	}
	return &reloadLog{digest: dg}, nil
}

// tookOver forgets the takeover of the datasets a committed reload took
// over: their log is in their new source's numbers now.
func tookOver(ds ...*storage.Dataset) {
	for _, d := range ds {
		d.TakenFrom = 0
	}
}

// afterReload records, as version's (published at at), what the reload
// of d (its registry row as it was before; table its table) to the
// columns cols changed; maps are the id maps the reload applied.
func (x *Executor) afterReload(ctx context.Context, tx *storage.Tx, rl *reloadLog, d *storage.Dataset, source string, version int, at *time.Time, cols []ploti.Column, maps []idMapFile) error {
	switch {
	case rl == nil:
		return nil
	case rl.history:
		hv := historyVersion(d, source, version, at)
		return x.recordReload(ctx, tx, hv, cols, mapVersions(maps), x.LogReloads && d.Version > 0 && !rl.logged)
	default:
		rlog, err := tx.ReloadLog()
		if err != nil {
			return err
		}
		_, err = rlog.LogReload(ctx, rl.digest, d.ID, version, d.Table, mapVersions(maps))
		return err
	}
}

// recordReload records a reload to hv in a history, starting the history
// when it has none (a dataset's first load with history on) or when its
// versions were another source's (the feed took over a watched dataset,
// or the other way round: the numbers are not comparable, and the old
// history is set aside).
func (x *Executor) recordReload(ctx context.Context, tx *storage.Tx, hv storage.HistoryVersion, cols []ploti.Column, maps []int, logChanges bool) error {
	h, err := tx.History()
	if err != nil {
		return err
	}
	st, err := h.HistoryOf(ctx, hv.DatasetID, hv.Table)
	if err != nil {
		return err
	}
	if st.Started && st.Source != "" && st.Source != hv.Source {
		aside, err := h.SetHistoryAside(ctx, hv.DatasetID, hv.Table, st.Source)
		if err != nil {
			return err
		}
		x.log().Info("history of the other source's versions set aside; a new one starts",
			slog.String("dataset", hv.DatasetID), slog.String("history", aside))
		st.Started = false
	}
	if !st.Started {
		return h.StartHistory(ctx, hv)
	}
	_, err = h.ReloadHistory(ctx, hv, cols, maps, logChanges)
	return err
}

// afterMerge records a feed version's merge (its changes files paths, of
// the version's schema) in the history of a dataset that keeps one; d is
// its registry row before the merge.
func (x *Executor) afterMerge(ctx context.Context, tx *storage.Tx, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, paths []string) error {
	if !x.keeps(d.ID) {
		return nil
	}
	h, err := tx.History()
	if err != nil {
		return err
	}
	hv := historyVersion(d, storage.SourceFeed, v.Version, &v.PublishedAt)
	st, err := h.HistoryOf(ctx, d.ID, d.Table)
	if err != nil {
		return err
	}
	if !st.Started { // not started at the sync's start (a history turned on since): begin here
		return h.StartHistory(ctx, hv)
	}
	if len(schema.Columns) > len(d.Columns) {
		if err := h.WidenHistory(ctx, d.ID, d.Table, schema.Columns); err != nil {
			return err
		}
	}
	return h.MergeHistory(ctx, hv, schema.Columns, paths)
}

// afterWatchMerge records a watched catch-up (m, merged into the table:
// versions oldest first) in the history of a dataset that keeps one; d is
// its registry row before the merge. A history not started yet starts at
// the version reached.
func (x *Executor) afterWatchMerge(ctx context.Context, tx *storage.Tx, d *storage.Dataset, versions []*VersionChanges, m storage.WatchMerge) error {
	if !x.keeps(d.ID) || len(versions) == 0 {
		return nil
	}
	h, err := tx.History()
	if err != nil {
		return err
	}
	last := versions[len(versions)-1]
	hv := historyVersion(d, storage.SourceWatch, last.Version, last.PromotedAt)
	st, err := h.HistoryOf(ctx, d.ID, d.Table)
	if err != nil {
		return err
	}
	if !st.Started || st.Source != storage.SourceWatch {
		return x.recordReload(ctx, tx, hv, m.Columns, nil, false)
	}
	at := map[int]*time.Time{}
	for _, vc := range versions {
		at[vc.Version] = vc.PromotedAt
	}
	return h.WatchHistory(ctx, hv, m, at)
}

// widenHistory adds the columns a MINOR schema change adds to a dataset's
// history, with the table's.
func (x *Executor) widenHistory(ctx context.Context, tx *storage.Tx, d *storage.Dataset, cols []ploti.Column) error {
	if !x.keeps(d.ID) || d.Table == "" {
		return nil
	}
	h, err := tx.History()
	if err != nil {
		return err
	}
	st, err := h.HistoryOf(ctx, d.ID, d.Table)
	if err != nil || !st.Started {
		return err
	}
	return h.WidenHistory(ctx, d.ID, d.Table, cols)
}

// StartHistory makes sure a dataset that keeps history has one at the
// version it holds, in a transaction of its own: one turned on for a
// dataset already held starts at that version (every row "first", its
// publishedAt unknown); one that stopped recording while it was off, or
// whose last version is not the one held, records what differs at the
// held version. It does nothing for a dataset that holds no version.
func (x *Executor) StartHistory(ctx context.Context, d *storage.Dataset) error {
	if !x.keeps(d.ID) || d.Version == 0 || d.Table == "" {
		return nil
	}
	source := d.Source
	if source == "" {
		source = storage.SourceFeed
	}
	at := x.resumedAt(ctx, d, source)
	err := x.DB.Update(ctx, func(tx *storage.Tx) error {
		ok, err := tx.Tables().TableExists(ctx, d.Table)
		if err != nil || !ok {
			return err
		}
		h, err := tx.History()
		if err != nil {
			return err
		}
		st, err := h.HistoryOf(ctx, d.ID, d.Table)
		if err != nil {
			return err
		}
		if st.Started && st.Last == d.Version && st.Source == source {
			return nil
		}
		hv := storage.HistoryVersion{DatasetID: d.ID, Table: d.Table, Source: source, Version: d.Version}
		if st.Started {
			hv.PublishedAt = at
		}
		return x.recordReload(ctx, tx, hv, d.Columns, nil, false)
	})
	if err != nil {
		return fmt.Errorf("start the history of %s at v%d: %w", d.ID, d.Version, err)
	}
	return nil
}

// resumedAt is the publishedAt of the version d holds when its history
// recorded an older one of the same source (it was off meanwhile): what
// differs is recorded at that version, and the _at macro places its rows
// and ends by that time (unknown, the rows it opened would count as
// always there next to the ones it ended). Asked of the API (one call);
// nil when not needed, for a watched dataset, or when the call fails.
func (x *Executor) resumedAt(ctx context.Context, d *storage.Dataset, source string) *time.Time {
	if source != storage.SourceFeed {
		return nil
	}
	h, ok := x.DB.Engine().(storage.HistoryReader)
	if !ok {
		return nil
	}
	st, err := h.HistoryOf(ctx, d.ID, d.Table)
	if err != nil || !st.Started || st.Last == d.Version || st.Source != source {
		return nil
	}
	v, err := x.Source.Version(ctx, d.ID, d.Version, "")
	if err != nil || v.PublishedAt.IsZero() {
		x.log().Debug("the history goes on at a version whose publishedAt is unknown",
			logs.Err(err), slog.String("dataset", d.ID), slog.Int("version", d.Version))
		return nil
	}
	return &v.PublishedAt
}

func mapVersions(maps []idMapFile) []int {
	var out []int
	for _, m := range maps {
		out = append(out, m.version)
	}
	return out
}
