package duckdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// HistoryDiff compares a dataset's history as of two versions, record by
// record (a record followed across renames by its lineage), over every
// column the history has: each record added, removed, renamed or changed,
// ordered by kind and id.
func (db *DB) HistoryDiff(ctx context.Context, datasetID, table string, dataCols []ploti.Column, from, to int) ([]storage.DiffRow, error) {
	cols, exprA, err := db.historyDataColumns(ctx, table, dataCols, "a.")
	if err != nil {
		return nil, err
	}
	_, exprB, err := db.historyDataColumns(ctx, table, dataCols, "b.")
	if err != nil {
		return nil, err
	}
	rowsT := historyRows + "." + storage.Ident(table)
	var data, pairs, differs, packA, packB []string
	for _, c := range cols {
		data = append(data, "r."+storage.Ident(c))
		pairs = append(pairs, fmt.Sprintf("CAST(%s AS VARCHAR), CAST(%s AS VARCHAR)", exprA[c], exprB[c]))
		packA = append(packA, fmt.Sprintf("%s := %s", storage.Ident(c), exprA[c]))
		packB = append(packB, fmt.Sprintf("%s := %s", storage.Ident(c), exprB[c]))
		if c != storage.ColRecordID {
			differs = append(differs, fmt.Sprintf("a.%[1]s IS DISTINCT FROM b.%[1]s", storage.Ident(c)))
		}
	}
	side := func(v string) string {
		return fmt.Sprintf("SELECT %s, coalesce(r.%s, r.%s) AS __lineage FROM %s", strings.Join(data, ", "), storage.Ident(storage.ColOriginID), storage.Ident(storage.ColRecordID), asOfSQL(datasetID, rowsT, v))
	}
	id := storage.Ident(storage.ColRecordID)
	q := fmt.Sprintf(`WITH a AS (%[1]s), b AS (%[2]s)
		SELECT CASE WHEN a.%[3]s IS NULL THEN 'added' WHEN b.%[3]s IS NULL THEN 'removed' WHEN a.%[3]s <> b.%[3]s THEN 'renamed' ELSE 'changed' END AS change,
			coalesce(b.%[3]s, a.%[3]s) AS id, CASE WHEN a.%[3]s <> b.%[3]s THEN a.%[3]s END,
			CASE WHEN a.%[3]s IS NOT NULL THEN CAST(to_json(struct_pack(%[4]s)) AS VARCHAR) END,
			CASE WHEN b.%[3]s IS NOT NULL THEN CAST(to_json(struct_pack(%[5]s)) AS VARCHAR) END,
			%[6]s
		FROM a FULL JOIN b ON a.__lineage = b.__lineage
		WHERE a.%[3]s IS NULL OR b.%[3]s IS NULL OR a.%[3]s <> b.%[3]s OR %[7]s
		ORDER BY CASE change WHEN 'added' THEN 0 WHEN 'changed' THEN 1 WHEN 'renamed' THEN 2 ELSE 3 END, id`,
		side("$1"), side("$2"), id, strings.Join(packA, ", "), strings.Join(packB, ", "), strings.Join(pairs, ", "), strings.Join(append(differs, "false"), " OR "))
	rows, err := db.sql.QueryContext(ctx, q, from, to)
	if err != nil {
		return nil, fmt.Errorf("diff %s v%d v%d: %w", datasetID, from, to, err)
	}
	defer rows.Close()
	out := []storage.DiffRow{}
	for rows.Next() {
		r, err := scanDiffRow(rows, cols)
		if err != nil {
			return nil, fmt.Errorf("diff %s v%d v%d: %w", datasetID, from, to, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// scanDiffRow reads one row of HistoryDiff's query: the change, the ids,
// both sides as JSON, then each column's text on either side, from which
// a changed or renamed row's changed columns are listed.
func scanDiffRow(rows *sql.Rows, cols []string) (storage.DiffRow, error) {
	var r storage.DiffRow
	var prev, before, after sql.NullString
	vals := make([]sql.NullString, 2*len(cols))
	dest := []any{&r.Change, &r.RecordID, &prev, &before, &after}
	for i := range vals {
		dest = append(dest, &vals[i])
	}
	if err := rows.Scan(dest...); err != nil {
		return r, err
	}
	r.PreviousRecordID = prev.String
	if before.Valid {
		r.Before = json.RawMessage(before.String)
	}
	if after.Valid {
		r.After = json.RawMessage(after.String)
	}
	if r.Change == storage.ChangeChanged || r.Change == storage.ChangeRenamed {
		for i, c := range cols {
			if o, n := vals[2*i], vals[2*i+1]; o != n && c != storage.ColRecordID {
				r.Columns = append(r.Columns, storage.ColumnChange{Name: c, Old: nullText(o), New: nullText(n)})
			}
		}
	}
	return r, nil
}

func nullText(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// historyDataColumns lists the dataset columns of a history (system
// columns first), without the meta ones, and the SQL of each one's value
// with geometry as GEOMETRY (a history of a file that stores WKB keeps
// it as a BLOB; cols, the dataset's columns, tell which those are) under
// the alias alias.
func (db *DB) historyDataColumns(ctx context.Context, table string, cols []ploti.Column, alias string) ([]string, map[string]string, error) {
	geo := map[string]ploti.Type{}
	for _, c := range cols {
		if storage.HasGeometry(c.Type) {
			geo[c.Name] = c.Type
		}
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT column_name, data_type FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = ? AND table_name = ? ORDER BY column_index`, historyRows, table)
	if err != nil {
		return nil, nil, fmt.Errorf("read the history columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	expr := map[string]string{}
	for rows.Next() {
		var c, typ string
		if err := rows.Scan(&c, &typ); err != nil {
			return nil, nil, err
		}
		if metaColumns[c] {
			continue
		}
		out = append(out, c)
		expr[c] = alias + storage.Ident(c)
		if t, ok := geo[c]; ok && strings.Contains(typ, "BLOB") {
			expr[c] = storage.ConvertGeometry(t, alias+storage.Ident(c), "ST_GeomFromWKB")
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("read the history of %s: %w", table, storage.ErrNoHistory)
	}
	return out, expr, rows.Err()
}

// HistoryStory reads a record's whole story: every row its lineage held
// (the ids a rename or an id map gave it), oldest first. No rows: the
// history never held the record.
func (db *DB) HistoryStory(ctx context.Context, datasetID, table string, dataCols []ploti.Column, recordID string) ([]storage.StoryRow, error) {
	cols, expr, err := db.historyDataColumns(ctx, table, dataCols, "")
	if err != nil {
		return nil, err
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = fmt.Sprintf("CAST(%s AS VARCHAR)", expr[c])
	}
	q := fmt.Sprintf(`SELECT %s, %s, %s, %s, %s, %s, coalesce(%s, ''), %s FROM %s.%s(?)`,
		storage.Ident(storage.ColRecordID), storage.Ident(storage.ColValidFrom), storage.Ident(storage.ColValidTo), storage.Ident(storage.ColValidFromAt), storage.Ident(storage.ColValidToAt), storage.Ident(storage.ColHistChange), storage.Ident(storage.ColOriginID),
		strings.Join(sel, ", "), storage.HistorySchema, storage.Ident(table+"_story"))
	rows, err := db.sql.QueryContext(ctx, q, recordID)
	if err != nil {
		return nil, fmt.Errorf("read the story of %s in %s: %w", recordID, datasetID, err)
	}
	defer rows.Close()
	var out []storage.StoryRow
	for rows.Next() {
		var s storage.StoryRow
		var to sql.NullInt64
		vals := make([]sql.NullString, len(cols))
		dest := []any{&s.RecordID, &s.ValidFrom, &to, &s.ValidFromAt, &s.ValidToAt, &s.Change, &s.OriginID}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read the story of %s in %s: %w", recordID, datasetID, err)
		}
		if to.Valid {
			v := int(to.Int64)
			s.ValidTo = &v
		}
		for i, c := range cols {
			s.Values = append(s.Values, storage.ColumnValue{Name: c, Value: nullText(vals[i])})
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n := len(out); n > 0 && out[n-1].ValidTo != nil {
		out[n-1].Ended = true
	}
	return out, nil
}
