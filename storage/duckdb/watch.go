package duckdb

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// LoadRows replaces table with the rows of NDJSON files (a whole read of a
// watched dataset's rows), each value cast to its column's DuckDB type by
// DuckDB's read_json, never row by row through Go. The old table stays
// until the transaction commits, as with a snapshot. No files makes an
// empty table. It refuses null or repeated record ids and rows that do not
// fit the columns (a DataError), and returns the row count.
func (tx *Tx) LoadRows(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error) {
	tx.heavyWrite()
	if err := tx.fitThreads(ctx, false); err != nil {
		return 0, err
	}
	t := "main." + storage.Ident(table)
	if len(files) == 0 {
		ddl, err := tx.db.emptyTableSQL(t, cols)
		if err != nil {
			return 0, err
		}
		if _, err := tx.tx.ExecContext(ctx, ddl); err != nil {
			return 0, fmt.Errorf("create empty %s: %w", table, err)
		}
		return 0, tx.commentGeometry(ctx, table, cols)
	}
	q, err := duckread.JSONRowsQuery(files, cols, "")
	if err != nil {
		return 0, err
	}
	if _, err := tx.tx.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TABLE %s AS %s", t, tx.db.stored(q, cols))); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
		return 0, duckread.JSONError(duckread.BaseNames(files), err)
	}
	// The JSON is read once: its ids are checked in the loaded table,
	// which the caller's rollback drops again when they do not hold.
	n, nulls, dups, err := tx.checkRecordIDs(ctx, t)
	if err != nil {
		return 0, err
	}
	if nulls > 0 || dups > 0 {
		return 0, &storage.DataError{File: duckread.BaseNames(files), Detail: fmt.Sprintf("rows have %d null and %d repeated _ploti_record_id values", nulls, dups)}
	}
	return n, tx.commentGeometry(ctx, table, cols)
}

// emptyTableSQL creates a dataset table with no rows.
func (db *DB) emptyTableSQL(t string, cols []ploti.Column) (string, error) {
	defs := []string{storage.Ident(storage.ColRecordID) + " VARCHAR", storage.Ident(storage.ColPlaceID) + " VARCHAR"}
	for _, c := range cols {
		d, err := db.storedType(c.Type)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", c.Name, err)
		}
		defs = append(defs, storage.Ident(c.Name)+" "+d)
	}
	return fmt.Sprintf("CREATE OR REPLACE TABLE %s (%s)", t, strings.Join(defs, ", ")), nil
}

// MergeWatch applies a WatchMerge to its table in the transaction. Rows
// that do not fit the columns, an added id the table holds, a changed,
// removed or renamed id it does not hold, or a row missing from its file
// are refused with a DataError, and the caller's rollback leaves the held
// version as it was.
func (tx *Tx) MergeWatch(ctx context.Context, m storage.WatchMerge) (storage.MergeStats, error) {
	var st storage.MergeStats
	if err := tx.fitThreads(ctx, false); err != nil {
		return st, err
	}
	t := "main." + storage.Ident(m.Table)
	id := storage.Ident(storage.ColRecordID)
	if len(m.Held)+len(m.New) > 0 {
		// One pass over the table's ids deletes the held ids the versions
		// touched and refuses an added id it holds (the MERGE's error
		// clause), as a feed merge does (mergeDeleteSQL): a check of its
		// own was a second scan of every id.
		ids, kinds := make([]string, 0, len(m.Held)+len(m.New)), make([]string, 0, len(m.Held)+len(m.New))
		for _, t := range m.Held {
			ids, kinds = append(ids, t.ID), append(kinds, "held")
		}
		for _, t := range m.New {
			ids, kinds = append(ids, t.ID), append(kinds, "new")
		}
		res, err := tx.tx.ExecContext(ctx, fmt.Sprintf(`MERGE INTO %[1]s t
			USING (SELECT * FROM (SELECT unnest(?::VARCHAR[]) AS id, unnest(?::VARCHAR[]) AS k) WHERE k IN ('held', 'new')) m ON t.%[2]s = m.id
			WHEN MATCHED AND m.k = 'new' THEN ERROR concat('%[3]snew id ', m.id)
			WHEN MATCHED THEN DELETE`, t, id, duckread.FitMark), ids, kinds)
		if err != nil {
			if _, held, ok := strings.Cut(err.Error(), duckread.FitMark+"new id "); ok {
				held, _, _ = strings.Cut(held, "\n")
				return st, &storage.DataError{Detail: "changes do not fit the held version: " + describeTouch(m.New, strings.TrimSpace(held)) + " is already held"}
			}
			return st, fmt.Errorf("merge %s: delete: %w", m.DatasetID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return st, err
		}
		if n != int64(len(m.Held)) {
			return st, &storage.DataError{Detail: "changes do not fit the held version: " + tx.notHeld(ctx, t, m.Held, n)}
		}
		st.Removed = n
	}
	for _, src := range m.Rows {
		n, err := tx.insertRows(ctx, t, m.Columns, src)
		if err != nil {
			return st, err
		}
		st.Added += n
	}
	tx.touched(m.Table, st.Removed+st.Added)
	if err := tx.logWatch(ctx, m); err != nil {
		return st, err
	}
	st.Rows = -1
	if m.RowsBefore >= 0 {
		st.Rows = m.RowsBefore - st.Removed + st.Added
	} else if err := tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&st.Rows); err != nil {
		return st, err
	}
	// The stats count rows, not records: a changed record is one row out
	// and one in.
	return st, nil
}

// insertRows inserts the rows of src's ids from its file, and makes sure
// each id came exactly once.
func (tx *Tx) insertRows(ctx context.Context, t string, cols []ploti.Column, src storage.RowSource) (int64, error) {
	if len(src.IDs) == 0 {
		return 0, nil
	}
	name := filepath.Base(src.Path)
	q, err := duckread.JSONRowsQuery([]string{src.Path}, cols, storage.Ident(storage.ColRecordID)+" IN (SELECT unnest(?::VARCHAR[]))")
	if err != nil {
		return 0, err
	}
	res, err := tx.tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (%s) %s", t, duckread.ColumnNames(cols), tx.db.stored(q, cols)), src.IDs)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
		return 0, duckread.JSONError(name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if n != int64(len(src.IDs)) {
		return 0, &storage.DataError{File: name, Detail: fmt.Sprintf("has %d rows for the %d ids it should give once each (a row missing or repeated)", n, len(src.IDs))}
	}
	return n, nil
}

// logWatch records the versions' changes, their renames in the id map,
// and rewrites the renamed ids in the IDRefs columns, oldest version first.
func (tx *Tx) logWatch(ctx context.Context, m storage.WatchMerge) error {
	if len(m.Log) > 0 {
		versions, ids, kinds := make([]int32, len(m.Log)), make([]string, len(m.Log)), make([]string, len(m.Log))
		for i, l := range m.Log {
			versions[i], ids[i], kinds[i] = int32(l.Version), l.ID, l.Change
		}
		log := `(SELECT ?::VARCHAR AS dataset_id, unnest(?::INTEGER[]) AS version, unnest(?::VARCHAR[]) AS id, unnest(?::VARCHAR[]) AS change) l`
		if _, err := tx.tx.ExecContext(ctx, storage.VersionSetsSQL(m.DatasetID, versions)); err != nil {
			return fmt.Errorf("log changes of %s: %w", m.DatasetID, err)
		}
		if _, err := tx.tx.ExecContext(ctx, storage.LogRowsSQL(log, "l.change"), m.DatasetID, versions, ids, kinds); err != nil {
			return fmt.Errorf("log changes of %s: %w", m.DatasetID, err)
		}
	}
	if len(m.Renames) == 0 {
		return nil
	}
	versions, from, to := make([]int32, len(m.Renames)), make([]string, len(m.Renames)), make([]string, len(m.Renames))
	var order []int
	for i, r := range m.Renames {
		versions[i], from[i], to[i] = int32(r.Version), r.From, r.To
		if len(order) == 0 || order[len(order)-1] != r.Version {
			order = append(order, r.Version)
		}
	}
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.id_map (dataset_id, version, from_id, to_id)
		SELECT ?, unnest(?::INTEGER[]), unnest(?::VARCHAR[]), unnest(?::VARCHAR[])`, m.DatasetID, versions, from, to)
	if err != nil {
		return fmt.Errorf("record renamed ids of %s: %w", m.DatasetID, err)
	}
	for _, v := range order {
		if err := tx.rewriteIDRefs(ctx, m.DatasetID, v, m.IDRefs); err != nil {
			return err
		}
	}
	return nil
}

// rewriteIDRefs rewrites the ids a version's id map replaced in the user
// columns that reference the dataset.
func (tx *Tx) rewriteIDRefs(ctx context.Context, datasetID string, version int, refs []storage.IDRef) error {
	tx.heavyWrite()
	for _, r := range refs {
		if r.DatasetID != datasetID {
			continue
		}
		q := fmt.Sprintf(`UPDATE %[1]s SET %[2]s = m.to_id FROM _ploti.id_map m
			WHERE m.dataset_id = ? AND m.version = ? AND %[1]s.%[2]s = m.from_id`, qualified(r.Table), storage.Ident(r.Column))
		if _, err := tx.tx.ExecContext(ctx, q, datasetID, version); err != nil {
			return fmt.Errorf("rewrite ids in %s.%s for %s v%d: %w", r.Table, r.Column, datasetID, version, err)
		}
	}
	return nil
}

func touchIDs(ts []storage.Touch) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// describeTouch names what a version did to id: "id r7 that version 13
// renamed".
func describeTouch(ts []storage.Touch, id string) string {
	for _, t := range ts {
		if t.ID == id {
			return fmt.Sprintf("id %s that version %d %s", id, t.Version, t.Change)
		}
	}
	return "id " + id
}

// notHeld names one of held that the table did not hold before the
// transaction (n of them were), asking the committed table on another
// connection, as MergeChanges does; without a spare connection it says
// how many.
func (tx *Tx) notHeld(ctx context.Context, t string, held []storage.Touch, n int64) string {
	detail := fmt.Sprintf("%d of the %d ids the changes touch are held", n, len(held))
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var first string
	err := tx.db.sql.QueryRowContext(qctx, fmt.Sprintf(`SELECT x FROM (SELECT unnest(?::VARCHAR[]) AS x)
		WHERE x NOT IN (SELECT %s FROM %s) ORDER BY x LIMIT 1`, storage.Ident(storage.ColRecordID), t), touchIDs(held)).Scan(&first)
	if err == nil {
		return describeTouch(held, first) + " is not held"
	}
	return detail
}
