package replica

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/storage"
)

// HistoryAll in Options.History makes every dataset keep history.
const HistoryAll = "all"

// HistoryKeep bounds a dataset's history (Options.HistoryKeep): what is
// older than both is pruned after each sync, in a transaction of its own.
// Zero fields keep everything.
type HistoryKeep struct {
	// Versions keeps the history of each dataset's latest Versions
	// versions (as of each of them the dataset can be read).
	Versions int
	// Age keeps the versions published (or, when that is not known,
	// recorded) within Age of now.
	Age time.Duration
}

// keepsHistory is the executor's test of which datasets keep history.
func keepsHistory(list []string) func(string) bool {
	if len(list) == 0 {
		return nil
	}
	if slices.Contains(list, HistoryAll) {
		return func(string) bool { return true }
	}
	set := map[string]bool{}
	for _, id := range list {
		set[id] = true
	}
	return func(id string) bool { return set[id] }
}

// startHistories makes sure each dataset held that keeps history has one
// at the version it holds, before the walk records more (a history turned
// on for a dataset already held starts at its version). Best effort: a
// history that fails to start here starts with the dataset's next merge
// or load, and the failure is logged.
func (r *Replica) startHistories(ctx context.Context) {
	keeps := keepsHistory(r.opts.History)
	if keeps == nil {
		return
	}
	ds, err := r.db.Datasets(ctx)
	if err != nil {
		r.log.Warn("could not read the registry to start histories", logs.Err(err))
		return
	}
	hr, err := storage.Can[storage.HistoryReader](r.db.Engine(), "history is")
	if err != nil {
		r.log.Warn("could not read the histories", logs.Err(err))
		return
	}
	states, err := hr.HistoryStates(ctx)
	if err != nil {
		r.log.Warn("could not read the histories", logs.Err(err))
		return
	}
	for _, d := range ds {
		if !keeps(d.ID) || d.Version == 0 || d.Table == "" {
			continue
		}
		source := d.Source
		if source == "" {
			source = storage.SourceFeed
		}
		if st, ok := states[d.ID]; ok && st.Last == d.Version && st.Source == source {
			continue
		}
		if err := r.exec.StartHistory(ctx, d); err != nil {
			r.log.Warn("could not start the dataset's history; its next merge or load starts it",
				logs.Err(err), slog.String("dataset", d.ID))
		}
	}
}

// pruneHistory applies Options.HistoryKeep after a sync, in a transaction
// of its own (housekeeping never fails or undoes a sync). A mark keeps
// the history it has not seen, as it keeps _ploti.changes, and the sync
// says so.
func (r *Replica) pruneHistory(ctx context.Context) {
	k := r.opts.HistoryKeep
	if k.Versions <= 0 && k.Age <= 0 || ctx.Err() != nil {
		return
	}
	var before time.Time
	if k.Age > 0 {
		before = r.opts.Now().Add(-k.Age)
	}
	var n int64
	var held []storage.MarkHold
	err := r.db.Update(ctx, func(tx *storage.Tx) (err error) {
		h, err := tx.History()
		if err != nil {
			return err
		}
		n, held, err = h.PruneHistory(ctx, k.Versions, before)
		return err
	})
	switch {
	case err != nil:
		r.log.Warn("could not prune the histories; the next sync tries again", logs.Err(err))
	case n > 0:
		r.log.Debug("pruned the histories", slog.Int64("rows", n))
	}
	for _, h := range held {
		r.log.Warn("the history keeps versions past --history-keep that this mark has not seen; advance it, or forget it (changes --mark NAME --forget)",
			slog.String("mark", h.Mark), slog.String("dataset", h.DatasetID),
			slog.Int("mark_version", h.Version), slog.Int("versions_kept", h.Versions))
	}
}

// Diff is what changed in a dataset between two versions of its history.
// Its JSON is the CLI's `diff --json`.
type Diff struct {
	DatasetID string    `json:"datasetId"`
	Table     string    `json:"table"`
	From      int       `json:"from"`
	To        int       `json:"to"`
	Counts    Counts    `json:"counts"`
	Changes   []DiffRow `json:"changes"`
}

// Diff compares a dataset's history as of two versions by record id: the
// records added, removed and changed, with each changed column's old and
// new value. It calls no API.
func (r *Replica) Diff(ctx context.Context, datasetID string, from, to int) (*Diff, error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	return readDiff(ctx, r.db, datasetID, from, to)
}

// Story reads a record's whole story from its dataset's history: every
// version of it, oldest first, across renames.
func (r *Replica) Story(ctx context.Context, datasetID, recordID string) ([]StoryRow, error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	return readStory(ctx, r.db, datasetID, recordID)
}

// historyOf finds a dataset's registry row and makes sure it keeps a
// history.
func historyOf(ctx context.Context, db *storage.DB, datasetID string) (*storage.Dataset, storage.HistoryState, error) {
	hr, err := historyReader(db)
	if err != nil {
		return nil, storage.HistoryState{}, fmt.Errorf("read the history of %s in %s: %w", datasetID, db.Path(), err)
	}
	d, err := db.Dataset(ctx, datasetID)
	if err != nil {
		return nil, storage.HistoryState{}, err
	}
	st, err := hr.HistoryOf(ctx, d.ID, d.Table)
	if err != nil {
		return nil, st, err
	}
	if !st.Started {
		return nil, st, fmt.Errorf("%s: %w (Options.History naming it keeps one from the version it holds)", datasetID, storage.ErrNoHistory)
	}
	return d, st, nil
}

// readDiff is Diff on an open storage file.
func readDiff(ctx context.Context, db *storage.DB, datasetID string, from, to int) (*Diff, error) {
	d, st, err := historyOf(ctx, db, datasetID)
	if err != nil {
		return nil, err
	}
	table := d.Table
	for _, v := range []int{from, to} {
		if v < st.Oldest || v > st.Last {
			return nil, fmt.Errorf("diff %s: v%d: %w (it holds v%d to v%d)", datasetID, v, ErrVersionNotKept, st.Oldest, st.Last)
		}
	}
	hr, err := historyReader(db)
	if err != nil {
		return nil, err
	}
	rows, err := hr.HistoryDiff(ctx, datasetID, table, d.Columns, from, to)
	if err != nil {
		return nil, err
	}
	df := &Diff{DatasetID: datasetID, Table: table, From: from, To: to, Changes: rows}
	for _, c := range rows {
		switch c.Change {
		case storage.ChangeAdded:
			df.Counts.Added++
		case storage.ChangeChanged:
			df.Counts.Changed++
		case storage.ChangeRemoved:
			df.Counts.Removed++
		case storage.ChangeRenamed:
			df.Counts.Renamed++
		}
	}
	return df, nil
}

// readStory is Story on an open storage file.
func readStory(ctx context.Context, db *storage.DB, datasetID, recordID string) ([]StoryRow, error) {
	d, _, err := historyOf(ctx, db, datasetID)
	if err != nil {
		return nil, err
	}
	hr, err := historyReader(db)
	if err != nil {
		return nil, err
	}
	return hr.HistoryStory(ctx, datasetID, d.Table, d.Columns, recordID)
}

// historyReader is db's engine as a storage.HistoryReader, or why not.
func historyReader(db *storage.DB) (storage.HistoryReader, error) {
	return storage.Can[storage.HistoryReader](db.Engine(), "history is")
}
