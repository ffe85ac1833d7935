package duckdb

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// A watched dataset's catch-up (WatchMerge) may merge several recorded
// versions at once, with the rows of the records they touched read as
// they are now: the values a record had at a version between is not
// known. Its history records each record's changes at the last version of
// the catch-up that touched it (its lineage: a rename goes on from the id
// renamed); a record touched by one version only is exact, and one
// touched by several keeps its held row until the last of them.

// watchTouch is what a catch-up does to one record's lineage.
type watchTouch struct {
	held    string // the id the table held it under ("" for a record the catch-up added)
	last    int    // the last version that touched it
	current string // the id it carries after the catch-up ("" when removed)
}

// watchLineages works out each record's lineage in a WatchMerge: the id
// it was held under, the last version that touched it, and the id it
// carries after.
func watchLineages(m storage.WatchMerge, present map[string]bool) []watchTouch {
	root := map[string]string{} // an id to the first id of its lineage
	rootOf := func(id string) string {
		if r, ok := root[id]; ok {
			return r
		}
		return id
	}
	for _, r := range m.Renames {
		root[r.To] = rootOf(r.From)
	}
	held := map[string]bool{}
	for _, t := range m.Held {
		held[t.ID] = true
	}
	byRoot := map[string]*watchTouch{}
	var order []string
	touch := func(id string, v int) *watchTouch {
		r := rootOf(id)
		t := byRoot[r]
		if t == nil {
			t = &watchTouch{}
			if held[r] {
				t.held = r
			}
			byRoot[r] = t
			order = append(order, r)
		}
		t.last = max(t.last, v)
		return t
	}
	for _, l := range m.Log {
		touch(l.ID, l.Version)
	}
	for _, t := range m.Held {
		touch(t.ID, t.Version)
	}
	for _, src := range m.Rows {
		for _, id := range src.IDs {
			if present[id] {
				touch(id, 0).current = id
			}
		}
	}
	out := make([]watchTouch, 0, len(order))
	for _, r := range order {
		out = append(out, *byRoot[r])
	}
	return out
}

// WatchHistory records a watched catch-up (m, already merged into the
// table) in the dataset's history, in the merge's transaction. hv names
// the version the catch-up reached; at gives the promotedAt of each
// version it merged, when known. The history must exist.
func (tx *Tx) WatchHistory(ctx context.Context, hv storage.HistoryVersion, m storage.WatchMerge, at map[int]*time.Time) error {
	if err := tx.WidenHistory(ctx, hv.DatasetID, hv.Table, m.Columns); err != nil {
		return err
	}
	e := watchHistoryEdits(m, at)
	if len(e.endIDs) > 0 {
		if _, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.history_ends (dataset_id, record_id, valid_to, valid_to_at)
			SELECT ?, id, v, CAST(nullif(at_s, '') AS TIMESTAMPTZ) FROM (SELECT unnest(?::VARCHAR[]) AS id, unnest(?::INTEGER[]) AS v, unnest(?::VARCHAR[]) AS at_s)`,
			hv.DatasetID, e.endIDs, e.endV, timesOf(e.endAt)); err != nil {
			return fmt.Errorf("record %s v%d in its history: ends: %w", hv.DatasetID, hv.Version, err)
		}
	}
	if len(e.openIDs) > 0 {
		if err := tx.openWatchHistoryRows(ctx, hv, m, e); err != nil {
			return err
		}
	}
	// Each version merged is listed, for the versions a history keeps.
	versions := []int{hv.Version}
	for _, l := range m.Log {
		if !slices.Contains(versions, l.Version) {
			versions = append(versions, l.Version)
		}
	}
	slices.Sort(versions)
	for _, v := range versions {
		vhv := hv
		vhv.Version, vhv.PublishedAt = v, at[v]
		if err := tx.recordVersion(ctx, vhv, storage.VersionMerge); err != nil {
			return err
		}
	}
	return nil
}

// watchEdits is what a watch merge does to a history: the rows it ends
// (the ids held before, at the version they were last seen) and the rows
// it opens (the ids current now, added, changed or renamed from the id
// held before).
type watchEdits struct {
	endIDs, openIDs, openHeld, openChange []string
	endV, openV                           []int32
	endAt, openAt                         []*time.Time
}

func watchHistoryEdits(m storage.WatchMerge, at map[int]*time.Time) *watchEdits {
	present := map[string]bool{}
	for _, src := range m.Rows {
		for _, id := range src.IDs {
			present[id] = true
		}
	}
	e := &watchEdits{}
	for _, t := range watchLineages(m, present) {
		if t.held != "" {
			e.endIDs, e.endV, e.endAt = append(e.endIDs, t.held), append(e.endV, int32(t.last)), append(e.endAt, at[t.last])
		}
		if t.current == "" {
			continue
		}
		change := storage.HistoryAdded
		switch {
		case t.held != "" && t.held != t.current:
			change = storage.HistoryRenamed
		case t.held != "":
			change = storage.HistoryChanged
		}
		e.openIDs, e.openHeld, e.openChange = append(e.openIDs, t.current), append(e.openHeld, t.held), append(e.openChange, change)
		e.openV, e.openAt = append(e.openV, int32(t.last)), append(e.openAt, at[t.last])
	}
	return e
}

// openWatchHistoryRows copies the opened ids' rows from the table into
// the history, each with its version, time, change and lineage's origin.
func (tx *Tx) openWatchHistoryRows(ctx context.Context, hv storage.HistoryVersion, m storage.WatchMerge, e *watchEdits) error {
	casts, err := tx.historyCasts(ctx, hv.Table, m.Columns)
	if err != nil {
		return err
	}
	rowsT := rowsTable(hv)
	q := fmt.Sprintf(`INSERT INTO %[1]s (%[2]s)
		SELECT %[3]s, u.v, CAST(nullif(u.at_s, '') AS TIMESTAMPTZ), u.change, CASE u.change WHEN 'changed' THEN o.origin WHEN 'renamed' THEN coalesce(o.origin, u.held) END
		FROM main.%[4]s n JOIN (SELECT unnest(?::VARCHAR[]) AS id, unnest(?::VARCHAR[]) AS held, unnest(?::VARCHAR[]) AS change,
			unnest(?::INTEGER[]) AS v, unnest(?::VARCHAR[]) AS at_s) u ON u.id = n.%[5]s
		LEFT JOIN %[6]s o ON o.id = nullif(u.held, '')`,
		rowsT, historyInsertColumns(m.Columns), castedColumns("n.", m.Columns, casts), storage.Ident(hv.Table), storage.Ident(storage.ColRecordID), originsSQL(rowsT))
	if _, err := tx.tx.ExecContext(ctx, q, e.openIDs, e.openHeld, e.openChange, e.openV, timesOf(e.openAt)); err != nil {
		return fmt.Errorf("record %s v%d in its history: rows: %w", hv.DatasetID, hv.Version, err)
	}
	tx.touched(rowsT, int64(len(e.openIDs)))
	return nil
}

// timesOf turns optional times into RFC 3339 text ("" for none), which
// the statements cast back.
func timesOf(ts []*time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		if t != nil {
			out[i] = t.UTC().Format(time.RFC3339Nano)
		}
	}
	return out
}
