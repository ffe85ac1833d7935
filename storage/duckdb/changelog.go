package duckdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// LoggedChanges is what _ploti.changes says happened to the records of a
// dataset (table its table) after version from, up to version to, net of
// each other and read against the rows the table holds now: a record added
// then removed is left out; one that existed at from and is gone is
// removed, whatever happened in between; a record renamed (a watched
// dataset's, or a replaced id logged by a reload) gives its id at from as
// PreviousRecordID, and its old id is not reported removed. Ordered by
// kind, then record id.
func (db *DB) LoggedChanges(ctx context.Context, datasetID, table string, cols []ploti.Column, from, to int) ([]storage.RecordChange, error) {
	rows, err := db.sql.QueryContext(ctx, fmt.Sprintf(`WITH log AS (
			SELECT record_id, arg_min(change, version) AS first FROM _ploti.changes
			WHERE dataset_id = $1 AND version > $2 AND version <= $3 GROUP BY record_id)
		SELECT log.record_id, log.first, CASE WHEN t.%[2]s IS NOT NULL THEN CAST(to_json(t) AS VARCHAR) END FROM log
		LEFT JOIN %[1]s t ON t.%[2]s = log.record_id
		ORDER BY log.record_id`, storage.AsGeometry(db.Geometry(), table, cols), storage.Ident(storage.ColRecordID)), datasetID, from, to)
	if err != nil {
		return nil, fmt.Errorf("read changes of %s after v%d: %w", datasetID, from, err)
	}
	defer rows.Close()
	var out []storage.RecordChange
	for rows.Next() {
		var c storage.RecordChange
		var row sql.NullString
		if err := rows.Scan(&c.RecordID, &c.Change, &row); err != nil {
			return nil, fmt.Errorf("read changes of %s: %w", datasetID, err)
		}
		if row.Valid {
			c.Row = json.RawMessage(row.String)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read changes of %s: %w", datasetID, err)
	}
	renames, err := db.renamesBetween(ctx, datasetID, from, to)
	if err != nil {
		return nil, err
	}
	return storage.NetChanges(out, renames), nil
}

// renamesBetween reads the id map's links of versions after from, up to
// to: each new id to the id it replaced, the newest link of an id first.
func (db *DB) renamesBetween(ctx context.Context, datasetID string, from, to int) (map[string]string, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT to_id, from_id FROM _ploti.id_map
		WHERE dataset_id = ? AND version > ? AND version <= ? ORDER BY version`, datasetID, from, to)
	if err != nil {
		return nil, fmt.Errorf("read the id map of %s: %w", datasetID, err)
	}
	defer rows.Close()
	prev := map[string]string{}
	for rows.Next() {
		var to, from string
		if err := rows.Scan(&to, &from); err != nil {
			return nil, err
		}
		if _, ok := prev[to]; !ok { // an id given twice keeps its first link back
			prev[to] = from
		}
	}
	return prev, rows.Err()
}

// logSet logs datasetID's version in the change log: its set, then its
// rows, "SELECT <set_id>, " + rows (storage.LogOneSetSQL). It returns how
// many rows it logged.
func (tx *Tx) logSet(ctx context.Context, datasetID string, version int, rows string) (int64, error) {
	stmts := storage.LogOneSetSQL(datasetID, version, rows)
	if _, err := tx.tx.ExecContext(ctx, stmts[0]); err != nil {
		return 0, err
	}
	res, err := tx.tx.ExecContext(ctx, stmts[1])
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
