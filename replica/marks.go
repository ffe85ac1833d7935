package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Change is the net effect on one record since a mark (storage.RecordChange:
// added, changed, removed or renamed, with its row now and, from the
// history, its row then).
type Change = storage.RecordChange

// ChangesOptions narrow Changes.
type ChangesOptions struct {
	// Datasets limits the answer to these datasets; empty: every dataset
	// the file holds a version of.
	Datasets []string
}

// ChangeSet is what changed since a mark, dataset by dataset. Its JSON is
// the CLI's `changes --json`.
type ChangeSet struct {
	Mark     string           `json:"mark"`
	Datasets []DatasetChanges `json:"datasets"`
}

// DatasetChanges is what changed in one dataset after the version a mark
// has seen, up to the version the file holds.
type DatasetChanges struct {
	DatasetID string `json:"datasetId"`
	Table     string `json:"table"`
	Source    string `json:"source"` // feed or watch: whose version numbers these are
	// FromVersion is the version the mark has seen; with NewMark, the mark
	// had no position for the dataset and starts before the oldest change
	// kept (FromVersion is then the version before it).
	FromVersion int  `json:"fromVersion"`
	NewMark     bool `json:"newMark,omitempty"`
	// ToVersion is the version held now; Advance moves the mark to it.
	ToVersion int `json:"toVersion"`
	// FromHistory tells that the changes come from the dataset's history
	// (rows before the change known); otherwise from _ploti.changes and
	// the rows now.
	FromHistory bool     `json:"fromHistory"`
	Counts      Counts   `json:"counts"`
	Changes     []Change `json:"changes"`
}

// Counts counts a dataset's changes by kind.
type Counts struct {
	Added   int `json:"added"`
	Changed int `json:"changed"`
	Removed int `json:"removed"`
	Renamed int `json:"renamed"`
}

// Changes reads what was added, changed, removed and renamed since mark
// last moved, without moving it: call Advance with the answer once it is
// used, so that a consumer that stops in between reads the same changes
// again. A mark never moved (or never moved for a dataset) starts before
// the oldest change kept. It calls no API.
func (r *Replica) Changes(ctx context.Context, mark string, opts ChangesOptions) (*ChangeSet, error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	return readChanges(ctx, r.db, mark, opts)
}

// Advance moves mark to the versions a ChangeSet read for it reached (not
// to what the file holds now: a sync since may have brought more, which
// the next Changes reports).
func (r *Replica) Advance(ctx context.Context, mark string, cs *ChangeSet) error {
	if err := r.live(); err != nil {
		return err
	}
	if err := advanceMark(ctx, r.db, mark, cs); err != nil {
		return err
	}
	r.exec.LogReloads = true
	return nil
}

// readChanges is Changes on an open storage file.
func readChanges(ctx context.Context, db *storage.DB, mark string, opts ChangesOptions) (*ChangeSet, error) {
	if mark == "" {
		return nil, errors.New("read changes: no mark name")
	}
	if _, err := storage.Can[storage.ChangeLogReader](db.Engine(), "marks are"); err != nil {
		return nil, fmt.Errorf("read changes since mark %s in %s: %w", mark, db.Path(), err)
	}
	marks, err := db.Marks(ctx, mark)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for _, m := range marks {
		seen[m.DatasetID] = m.Version
	}
	ds, err := db.Datasets(ctx)
	if err != nil {
		return nil, err
	}
	held := map[string]*storage.Dataset{}
	for _, d := range ds {
		if d.Table != "" && d.Version > 0 {
			held[d.ID] = d
		}
	}
	for _, id := range opts.Datasets {
		if held[id] == nil {
			return nil, fmt.Errorf("read changes of %s: %w", id, ErrNoDatasetHeld)
		}
	}
	cs := &ChangeSet{Mark: mark, Datasets: []DatasetChanges{}}
	for _, d := range ds {
		if held[d.ID] == nil || len(opts.Datasets) > 0 && !slices.Contains(opts.Datasets, d.ID) {
			continue
		}
		from, ok := seen[d.ID]
		dc, err := datasetChanges(ctx, db, d, from, !ok)
		if err != nil {
			return nil, err
		}
		cs.Datasets = append(cs.Datasets, *dc)
	}
	return cs, nil
}

// datasetChanges reads one dataset's changes after version from (with
// fresh, from the start of what is kept).
func datasetChanges(ctx context.Context, db *storage.DB, d *storage.Dataset, from int, fresh bool) (*DatasetChanges, error) {
	dc := &DatasetChanges{DatasetID: d.ID, Table: d.Table, Source: d.Source, FromVersion: from, NewMark: fresh,
		ToVersion: d.Version, Changes: []Change{}}
	// A history that covers the span answers with the rows before too.
	hr, err := historyReader(db)
	if err != nil {
		return nil, err
	}
	hist, err := hr.HistoryOf(ctx, d.ID, d.Table)
	if err != nil {
		return nil, err
	}
	source := d.Source
	if source == "" {
		source = storage.SourceFeed
	}
	dc.FromHistory = hist.Started && hist.Last == d.Version && hist.Source == source && (fresh || from >= hist.Oldest)
	switch {
	case fresh && dc.FromHistory:
		dc.FromVersion = hist.Oldest // the rows the history began with are not changes
	case fresh:
		span, err := db.ChangeLogSpan(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		dc.FromVersion = d.Version
		if span.Oldest > 0 && span.Oldest <= d.Version {
			dc.FromVersion = span.Oldest - 1
		}
	}
	if dc.FromVersion >= dc.ToVersion {
		return dc, nil
	}
	cs, err := changesSince(ctx, db, d, dc)
	if err != nil {
		return nil, err
	}
	dc.Changes = append(dc.Changes, cs...)
	for _, c := range dc.Changes {
		switch c.Change {
		case storage.ChangeAdded:
			dc.Counts.Added++
		case storage.ChangeChanged:
			dc.Counts.Changed++
		case storage.ChangeRemoved:
			dc.Counts.Removed++
		case storage.ChangeRenamed:
			dc.Counts.Renamed++
		}
	}
	return dc, nil
}

// changesSince reads a dataset's changes for dc: from its history, or
// from the change log and the rows now.
func changesSince(ctx context.Context, db *storage.DB, d *storage.Dataset, dc *DatasetChanges) ([]Change, error) {
	if !dc.FromHistory {
		cl, err := storage.Can[storage.ChangeLogReader](db.Engine(), "marks are")
		if err != nil {
			return nil, err
		}
		return cl.LoggedChanges(ctx, d.ID, d.Table, d.Columns, dc.FromVersion, dc.ToVersion)
	}
	hr, err := historyReader(db)
	if err != nil {
		return nil, err
	}
	diff, err := hr.HistoryDiff(ctx, d.ID, d.Table, d.Columns, dc.FromVersion, dc.ToVersion)
	if err != nil {
		return nil, err
	}
	out := make([]Change, len(diff))
	for i, r := range diff {
		out[i] = Change{Change: r.Change, RecordID: r.RecordID, PreviousRecordID: r.PreviousRecordID,
			Row: r.After, Before: r.Before, Columns: r.Columns}
	}
	return out, nil
}

// advanceMark is Advance on an open storage file.
func advanceMark(ctx context.Context, db *storage.DB, mark string, cs *ChangeSet) error {
	if cs == nil || cs.Mark != mark {
		return fmt.Errorf("advance mark %s: the changes given were read for another mark", mark)
	}
	to := make(map[string]int, len(cs.Datasets))
	for _, d := range cs.Datasets {
		to[d.DatasetID] = d.ToVersion
	}
	return db.Update(ctx, func(tx *storage.Tx) error { return tx.PutMarks(ctx, mark, to) })
}

// forgetMark deletes a mark on every dataset; it reports whether there
// was one.
func forgetMark(ctx context.Context, db *storage.DB, mark string) (bool, error) {
	var n int64
	err := db.Update(ctx, func(tx *storage.Tx) (err error) {
		n, err = tx.DeleteMark(ctx, mark)
		return err
	})
	return n > 0, err
}

// readMarks tells the executor whether the file has marks: reloads then
// log what they changed, for the marks to read.
func (r *Replica) readMarks(ctx context.Context) error {
	marks, err := r.db.Marks(ctx, "")
	if err != nil {
		return err
	}
	r.exec.LogReloads = len(marks) > 0
	return nil
}
