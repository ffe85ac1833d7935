package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Kinds of change a mark reports (RecordChange.Change): the net effect on
// a record between the mark's version and the version held now.
const (
	ChangeAdded   = "added"
	ChangeChanged = "changed"
	ChangeRemoved = "removed"
	ChangeRenamed = "renamed"
)

// Mark is a row of _ploti.marks: the version of a dataset a named
// consumer has seen.
type Mark struct {
	Name      string
	DatasetID string
	Version   int
	At        time.Time
}

// Marks lists the rows of mark name (every mark's when name is empty), by
// name and dataset.
func (db *DB) Marks(ctx context.Context, name string) ([]Mark, error) {
	return listMarks(ctx, db.sql, name)
}

func listMarks(ctx context.Context, q Querier, name string) ([]Mark, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, dataset_id, version, "at" FROM _ploti.marks
		WHERE ? = '' OR name = ? ORDER BY name, dataset_id`, name, name)
	if err != nil {
		return nil, fmt.Errorf("list marks: %w", err)
	}
	defer rows.Close()
	var out []Mark
	for rows.Next() {
		var m Mark
		if err := rows.Scan(&m.Name, &m.DatasetID, &m.Version, &m.At); err != nil {
			return nil, fmt.Errorf("list marks: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// HasMarks reports whether the file has any mark: a reload then logs what
// it changed (see LogReload), so that marks see it.
func (tx *Tx) HasMarks(ctx context.Context) (bool, error) {
	var n int
	err := tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM _ploti.marks LIMIT 1)").Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read marks: %w", err)
	}
	return n > 0, nil
}

// PutMarks moves mark name to the given version of each dataset, at the
// transaction's now.
func (tx *Tx) PutMarks(ctx context.Context, name string, versions map[string]int) error {
	if name == "" {
		return fmt.Errorf("put mark: no name")
	}
	ids := make([]string, 0, len(versions))
	for id := range versions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	vs := make([]int32, len(ids))
	for i, id := range ids {
		vs[i] = int32(versions[id])
	}
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM _ploti.marks WHERE name = ? AND dataset_id IN (SELECT unnest(?::VARCHAR[]))`, name, ids); err != nil {
		return fmt.Errorf("move mark %s: %w", name, err)
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.marks (name, dataset_id, version, "at")
		SELECT ?, unnest(?::VARCHAR[]), unnest(?::INTEGER[]), ?`, name, ids, vs, tx.Now); err != nil {
		return fmt.Errorf("move mark %s: %w", name, err)
	}
	return nil
}

// DeleteMark forgets mark name, on every dataset; it returns how many rows
// it had.
func (tx *Tx) DeleteMark(ctx context.Context, name string) (int64, error) {
	res, err := tx.tx.ExecContext(ctx, "DELETE FROM _ploti.marks WHERE name = ?", name)
	if err != nil {
		return 0, fmt.Errorf("delete mark %s: %w", name, err)
	}
	return res.RowsAffected()
}

// RecordChange is the net effect on one record between two versions.
type RecordChange struct {
	// Change is ChangeAdded, ChangeChanged, ChangeRemoved or ChangeRenamed
	// (a record that now carries another id: PreviousRecordID is the id it
	// had at the older version).
	Change           string `json:"change"`
	RecordID         string `json:"recordId"`
	PreviousRecordID string `json:"previousRecordId,omitempty"`
	// Row is the record's row now, as a JSON object (geometry as WKT);
	// nil for a removed record.
	Row json.RawMessage `json:"row,omitempty"`
	// Before is its row at the older version, when the dataset's history
	// knows it (nil otherwise, and for an added record).
	Before json.RawMessage `json:"before,omitempty"`
	// Columns are the columns that changed and their values before and
	// now, when the history knows them.
	Columns []ColumnChange `json:"columns,omitempty"`
}

// LogSpan is what the change log keeps of a dataset: its oldest and
// newest logged versions (0 when it keeps none).
type LogSpan struct{ Oldest, Newest int }

// ChangeLogSpan reads a dataset's span in _ploti.changes.
func (db *DB) ChangeLogSpan(ctx context.Context, datasetID string) (LogSpan, error) {
	var s LogSpan
	err := db.sql.QueryRowContext(ctx, `SELECT coalesce(min(version), 0), coalesce(max(version), 0) FROM _ploti.changes WHERE dataset_id = ?`,
		datasetID).Scan(&s.Oldest, &s.Newest)
	if err != nil {
		return s, fmt.Errorf("read the change log of %s: %w", datasetID, err)
	}
	return s, nil
}

// NetChanges turns each logged record's first change and its row now
// (c.Change holds the first change logged, c.Row the row or nil) into its
// net change; prev links a renamed id to the one it replaced.
func NetChanges(logged []RecordChange, prev map[string]string) []RecordChange {
	first := map[string]string{}
	for _, c := range logged {
		first[c.RecordID] = c.Change
	}
	// The id a renamed record had at the older version: back along the
	// links while the id before was itself renamed into being.
	origin := func(id string) string {
		seen := map[string]bool{}
		for {
			p, ok := prev[id]
			if !ok || seen[p] {
				return id
			}
			seen[id] = true
			id = p
			if first[id] != ChangeRenamed {
				return id
			}
		}
	}
	renamedAway := map[string]bool{} // ids that went on under another id
	for to, from := range prev {
		if to != from {
			renamedAway[from] = true
		}
	}
	out := make([]RecordChange, 0, len(logged))
	renamedFrom := map[string]bool{}
	for _, c := range logged {
		present := c.Row != nil
		switch {
		case !present && c.Change == ChangeAdded:
			continue // came and went after the older version
		case !present && c.Change == ChangeRenamed:
			// Renamed, then gone: removed, under the id the older version
			// held it by, unless it came after that version, or the old
			// id's own entry says what became of it.
			o := origin(c.RecordID)
			if _, logged := first[o]; o == c.RecordID || logged || renamedAway[c.RecordID] {
				continue
			}
			c.RecordID, c.Change = o, ChangeRemoved
		case !present:
			c.Change = ChangeRemoved
		case c.Change == ChangeAdded:
		case c.Change == ChangeRenamed:
			if o := origin(c.RecordID); o != c.RecordID {
				c.PreviousRecordID = o
				renamedFrom[o] = true
			}
		default:
			c.Change = ChangeChanged
		}
		out = append(out, c)
	}
	out = slices.DeleteFunc(out, func(c RecordChange) bool { return c.Change == ChangeRemoved && renamedFrom[c.RecordID] })
	sortChanges(out)
	return out
}

var changeOrder = map[string]int{ChangeAdded: 0, ChangeChanged: 1, ChangeRenamed: 2, ChangeRemoved: 3}

// sortChanges orders changes by kind (added, changed, renamed, removed),
// then record id.
func sortChanges(cs []RecordChange) {
	slices.SortStableFunc(cs, func(a, b RecordChange) int {
		if d := changeOrder[a.Change] - changeOrder[b.Change]; d != 0 {
			return d
		}
		switch {
		case a.RecordID < b.RecordID:
			return -1
		case a.RecordID > b.RecordID:
			return 1
		}
		return 0
	})
}

// MarkHold is a mark that kept versions in _ploti.changes that
// PruneChanges' count alone would have deleted.
type MarkHold struct {
	Mark      string // the dataset's oldest mark
	DatasetID string
	Version   int // the version it has seen
	Versions  int // logged versions kept past the count for it
}

// PruneChanges keeps the rows of each dataset's keep latest versions in
// _ploti.changes and deletes the rest; keep <= 0 keeps everything. A
// version after the version a mark of its dataset has seen is kept
// whatever keep says (that consumer has not seen it yet), and returned in
// the holds, so that the caller says so. It returns how many rows it
// deleted.
func (tx *Tx) PruneChanges(ctx context.Context, keep int) (int64, []MarkHold, error) {
	if keep <= 0 {
		return 0, nil, nil
	}
	// SQL that both engines take (a PostgreSQL database keeps
	// _ploti.changes too): DISTINCT ON for the oldest mark's name.
	const ranked = `WITH ranked AS (
			SELECT dataset_id, version, row_number() OVER (PARTITION BY dataset_id ORDER BY version DESC) AS rank
			FROM (SELECT DISTINCT dataset_id, version FROM _ploti.changes) dv),
		oldest AS (SELECT DISTINCT ON (dataset_id) dataset_id, name, version FROM _ploti.marks ORDER BY dataset_id, version, name)`
	rows, err := tx.tx.QueryContext(ctx, ranked+`
		SELECT o.name, r.dataset_id, o.version, count(*) FROM ranked r JOIN oldest o USING (dataset_id)
		WHERE r.rank > ? AND r.version > o.version GROUP BY o.name, r.dataset_id, o.version ORDER BY r.dataset_id`, keep)
	if err != nil {
		return 0, nil, fmt.Errorf("prune _ploti.changes: read marks: %w", err)
	}
	var holds []MarkHold
	for rows.Next() {
		var h MarkHold
		if err := rows.Scan(&h.Mark, &h.DatasetID, &h.Version, &h.Versions); err != nil {
			rows.Close()
			return 0, nil, err
		}
		holds = append(holds, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	// The rows of the old versions' sets, then every set left without
	// rows (storage.ChangeSetsSQL).
	res, err := tx.tx.ExecContext(ctx, `DELETE FROM _ploti.change_rows WHERE set_id IN (
		SELECT s.set_id FROM _ploti.change_sets s JOIN (`+ranked+`
			SELECT r.dataset_id, r.version FROM ranked r LEFT JOIN oldest o USING (dataset_id)
			WHERE r.rank > ? AND (o.version IS NULL OR r.version <= o.version)) old
		ON s.dataset_id = old.dataset_id AND s.version = old.version)`, keep)
	if err != nil {
		return 0, nil, fmt.Errorf("prune _ploti.changes to %d versions a dataset: %w", keep, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, nil, err
	}
	if _, err := tx.tx.ExecContext(ctx, `DELETE FROM _ploti.change_sets s
		WHERE NOT EXISTS (SELECT 1 FROM _ploti.change_rows r WHERE r.set_id = s.set_id)`); err != nil {
		return 0, nil, fmt.Errorf("prune _ploti.changes: empty sets: %w", err)
	}
	return n, holds, nil
}

// RebaseLog renumbers what the file keeps of a dataset in another source's
// version numbers (the watch's, when the feed takes it over, or the other
// way round: README, the two numberings "are never compared") into the
// numbering of the source taking over, whose first version held is first:
// _ploti.changes and _ploti.id_map rows move so that last, the version the
// other source held, becomes first-1, in order; rows that would fall below
// version 1 are dropped; each mark on the dataset moves as they do (to 0 at
// least: it has then seen none of the new source's versions). So a mark
// set under the other source still reads the changes it had not seen, the
// takeover's own (logged at first) and the new source's after it. Called
// in the takeover's transaction, before anything is logged at first.
func (tx *Tx) RebaseLog(ctx context.Context, datasetID string, last, first int) error {
	off := first - 1 - last
	if off == 0 {
		return nil
	}
	// The change log's rows name their version through their set
	// (storage.ChangeSetsSQL): the rows of the sets that fall below 1
	// go, and the sets move.
	for _, s := range []struct{ what, q string }{
		{"_ploti.changes", "DELETE FROM _ploti.change_rows WHERE set_id IN (SELECT set_id FROM _ploti.change_sets WHERE dataset_id = ? AND version + ? < 1)"},
		{"_ploti.changes", "DELETE FROM _ploti.change_sets WHERE dataset_id = ? AND version + ? < 1"},
		{"_ploti.id_map", "DELETE FROM _ploti.id_map WHERE dataset_id = ? AND version + ? < 1"},
	} {
		if _, err := tx.tx.ExecContext(ctx, s.q, datasetID, off); err != nil {
			return fmt.Errorf("renumber %s of %s: %w", s.what, datasetID, err)
		}
	}
	for _, t := range []string{"_ploti.change_sets", "_ploti.id_map"} {
		if _, err := tx.tx.ExecContext(ctx, "UPDATE "+t+" SET version = version + ? WHERE dataset_id = ?", off, datasetID); err != nil {
			return fmt.Errorf("renumber %s of %s: %w", t, datasetID, err)
		}
	}
	if _, err := tx.tx.ExecContext(ctx, "UPDATE _ploti.marks SET version = greatest(version + ?, 0) WHERE dataset_id = ?", off, datasetID); err != nil {
		return fmt.Errorf("renumber the marks of %s: %w", datasetID, err)
	}
	return nil
}
