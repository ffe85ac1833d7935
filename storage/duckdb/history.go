package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// A dataset's history (docs/decisions.md 45) is kept in two
// places, both append-only, so that a merge writes its history without
// reading the history back:
//
//	_ploti_history.<table>   every row any recorded version held: the
//	                         dataset's columns, then _ploti_valid_from (the
//	                         version that brought the row), _ploti_valid_from_at
//	                         (its publishedAt), _ploti_change (what opened it:
//	                         first, added, changed, renamed) and _ploti_origin_id
//	                         (the id the record's history began under, when a
//	                         rename or an id map gave it another; else NULL).
//	                         Columns a later version adds come after these.
//	_ploti.history_ends      (dataset_id, record_id, valid_to, valid_to_at): a
//	                         version that changed, removed or renamed a record
//	                         ends the row its id carried.
//
// A row is current from _ploti_valid_from until the first end of its id
// after it. The user's view of it is history.<table> (the row with
// _ploti_valid_to and _ploti_valid_to_at joined by an ASOF join), with
// three table macros: history.<table>_as_of(version), _at(timestamp) and
// _story(record_id). _ploti.history_versions lists the versions recorded.

// historyRows is the schema of the history's rows, under the views of
// storage.HistorySchema.
const historyRows = "_ploti_history"

// rowsTable is the table of hv's dataset's history rows.
func rowsTable(hv storage.HistoryVersion) string { return historyRows + "." + storage.Ident(hv.Table) }

// HistoryOf reads the state of a dataset's history.
func (tx *Tx) HistoryOf(ctx context.Context, datasetID, table string) (storage.HistoryState, error) {
	return historyOf(ctx, tx.db, tx.tx, datasetID, table)
}

// HistoryOf reads the state of a dataset's history.
func (db *DB) HistoryOf(ctx context.Context, datasetID, table string) (storage.HistoryState, error) {
	return historyOf(ctx, db, db.sql, datasetID, table)
}

func historyOf(ctx context.Context, db *DB, q storage.Querier, datasetID, table string) (storage.HistoryState, error) {
	var st storage.HistoryState
	catalog, err := db.catalogName(ctx, q)
	if err != nil {
		return st, fmt.Errorf("read the history of %s: %w", datasetID, err)
	}
	started, err := hasRelation(ctx, q, catalog, historyRows, table)
	if err != nil {
		return st, fmt.Errorf("read the history of %s: %w", datasetID, err)
	}
	st.Started = started
	var source sql.NullString
	err = q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0), coalesce(min(version), 0), arg_max(source, version)
		FROM _ploti.history_versions WHERE dataset_id = ?`, datasetID).Scan(&st.Last, &st.Oldest, &source)
	if err != nil {
		return st, fmt.Errorf("read the history of %s: %w", datasetID, err)
	}
	st.Source = source.String
	return st, nil
}

// historyColumn is a column of a history rows table.
type historyColumn struct{ name, typ string }

var metaColumns = map[string]bool{storage.ColValidFrom: true, storage.ColValidFromAt: true, storage.ColHistChange: true, storage.ColOriginID: true}

// historyColumns reads the columns of a dataset's history rows table, in
// order; the table must exist. pragma_table_info looks the one table up
// (0.2 ms) where duckdb_columns() lists every column of the catalog: 10
// ms of a 1% merge at 10M rows with --history all, in the merge's
// transaction. Both spell types alike (DuckDB's own type names).
func (tx *Tx) historyColumns(ctx context.Context, table string) ([]historyColumn, error) {
	rows, err := tx.tx.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`,
		storage.Ident(historyRows)+"."+storage.Ident(table))
	if err != nil {
		return nil, fmt.Errorf("read the history columns of %s: %w", table, err)
	}
	defer rows.Close()
	var out []historyColumn
	for rows.Next() {
		var c historyColumn
		if err := rows.Scan(&c.name, &c.typ); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// historyTables names the history rows tables the file holds, with one
// read of the catalog.
func (tx *Tx) historyTables(ctx context.Context) (map[string]bool, error) {
	rows, err := tx.tx.QueryContext(ctx, `SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = ?`, historyRows)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

// sameDuckType compares a type as DuckType spells it with one as
// duckdb_columns does.
func sameDuckType(a, b string) bool {
	norm := func(s string) string {
		return strings.ReplaceAll(strings.ToUpper(s), "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")
	}
	return norm(a) == norm(b)
}

// StartHistory begins a dataset's history at the version its table holds
// now (hv): every row is opened with the change "first". The history
// must not exist yet.
func (tx *Tx) StartHistory(ctx context.Context, hv storage.HistoryVersion) error {
	tx.heavyWrite()
	if _, err := tx.tx.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+historyRows+"; CREATE SCHEMA IF NOT EXISTS "+storage.HistorySchema); err != nil {
		return fmt.Errorf("start the history of %s: %w", hv.DatasetID, err)
	}
	q := fmt.Sprintf(`CREATE TABLE %s AS SELECT *, CAST(? AS INTEGER) AS %s, CAST(? AS TIMESTAMPTZ) AS %s,
		CAST(? AS VARCHAR) AS %s, CAST(NULL AS VARCHAR) AS %s FROM main.%s`,
		rowsTable(hv), storage.Ident(storage.ColValidFrom), storage.Ident(storage.ColValidFromAt), storage.Ident(storage.ColHistChange), storage.Ident(storage.ColOriginID), storage.Ident(hv.Table))
	if _, err := tx.tx.ExecContext(ctx, q, hv.Version, hv.PublishedAt, storage.HistoryFirst); err != nil {
		return fmt.Errorf("start the history of %s at v%d: %w", hv.DatasetID, hv.Version, err)
	}
	if err := tx.recordVersion(ctx, hv, storage.VersionFirst); err != nil {
		return err
	}
	return tx.historyViews(ctx, hv.DatasetID, hv.Table)
}

// recordVersion lists a recorded version in _ploti.history_versions.
func (tx *Tx) recordVersion(ctx context.Context, hv storage.HistoryVersion, kind string) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.history_versions (dataset_id, source, version, published_at, recorded_at, kind)
		VALUES (?, ?, ?, ?, ?, ?)`, hv.DatasetID, hv.Source, hv.Version, hv.PublishedAt, tx.Now, kind)
	if err != nil {
		return fmt.Errorf("record v%d in the history of %s: %w", hv.Version, hv.DatasetID, err)
	}
	return nil
}

// WidenHistory makes a dataset's history hold the columns cols (the
// version about to be recorded): a column it lacks is added (NULL in the
// rows before); one whose type changed (a MAJOR change) becomes text
// (VARCHAR, each value as DuckDB writes it), so that the history shows
// every version's values under the column's name. Columns the dataset no
// longer has stay, NULL in later rows. The view and macros are made again
// when the columns change.
func (tx *Tx) WidenHistory(ctx context.Context, datasetID, table string, cols []ploti.Column) error {
	have, err := tx.historyColumns(ctx, table)
	if err != nil {
		return err
	}
	types := map[string]string{}
	for _, c := range have {
		types[c.name] = c.typ
	}
	t := historyRows + "." + storage.Ident(table)
	changed := false
	for _, c := range cols {
		want, err := tx.db.storedType(c.Type)
		if err != nil {
			return fmt.Errorf("widen the history of %s: column %s: %w", datasetID, c.Name, err)
		}
		old, ok := types[c.Name]
		switch {
		case ok && (sameDuckType(want, old) || sameDuckType(old, "VARCHAR")):
			continue
		case ok && storage.HasGeometry(c.Type) && (strings.Contains(old, "GEOMETRY") || strings.Contains(old, "BLOB")):
			// The file's geometry setting changed (GEOMETRY or WKB): the
			// history follows, as the tables do. A column's type changed
			// rewrites all its rows: heavy (light.go); a column added is
			// not, as in AddColumns.
			tx.heavyWrite()
			_, err = tx.tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET DATA TYPE %s USING %s",
				t, storage.Ident(c.Name), want, storage.ConvertGeometry(c.Type, storage.Ident(c.Name), geometryFn(want))))
		case ok:
			tx.heavyWrite()
			_, err = tx.tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE VARCHAR", t, storage.Ident(c.Name)))
		default:
			_, err = tx.tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", t, storage.Ident(c.Name), want))
		}
		if err != nil {
			return fmt.Errorf("widen the history of %s: column %s: %w", datasetID, c.Name, err)
		}
		changed = true
	}
	if !changed {
		return nil
	}
	return tx.historyViews(ctx, datasetID, table)
}

// historyCasts gives, for each column of cols whose history column has
// another type (text, after a type change), the type to cast its values
// to before they go into the history.
func (tx *Tx) historyCasts(ctx context.Context, table string, cols []ploti.Column) (map[string]string, error) {
	have, err := tx.historyColumns(ctx, table)
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	for _, c := range have {
		types[c.name] = c.typ
	}
	casts := map[string]string{}
	for _, c := range cols {
		want, err := tx.db.storedType(c.Type)
		if err != nil {
			return nil, err
		}
		if h, ok := types[c.Name]; ok && !sameDuckType(want, h) {
			casts[c.Name] = h
		}
	}
	return casts, nil
}

// castedColumns lists the system and schema columns of cols from alias,
// cast where casts says.
func castedColumns(alias string, cols []ploti.Column, casts map[string]string) string {
	parts := []string{alias + storage.Ident(storage.ColRecordID), alias + storage.Ident(storage.ColPlaceID)}
	for _, c := range cols {
		e := alias + storage.Ident(c.Name)
		if t, ok := casts[c.Name]; ok {
			e = fmt.Sprintf("CAST(%s AS %s)", e, t)
		}
		parts = append(parts, e)
	}
	return strings.Join(parts, ", ")
}

// geometryFn is the function that turns geometry into the stored type
// want: ST_AsWKB into a BLOB, ST_GeomFromWKB into GEOMETRY.
func geometryFn(want string) string {
	if strings.Contains(want, "BLOB") {
		return "ST_AsWKB"
	}
	return "ST_GeomFromWKB"
}

// convertHistory converts the geometry columns of a dataset's history
// (which must exist: historyTables) to the file's geometry setting with
// fn, as convertTable does its table.
func (tx *Tx) convertHistory(ctx context.Context, d *storage.Dataset, fn string) error {
	have, err := tx.historyColumns(ctx, d.Table)
	if err != nil {
		return err
	}
	types := map[string]string{}
	for _, c := range have {
		types[c.name] = c.typ
	}
	for _, c := range d.Columns {
		want, err := tx.db.storedType(c.Type)
		old := types[c.Name]
		if err != nil || !storage.HasGeometry(c.Type) || old == "" || sameDuckType(old, want) || sameDuckType(old, "VARCHAR") {
			continue
		}
		q := fmt.Sprintf("ALTER TABLE %s.%s ALTER COLUMN %s SET DATA TYPE %s USING %s",
			historyRows, storage.Ident(d.Table), storage.Ident(c.Name), want, storage.ConvertGeometry(c.Type, storage.Ident(c.Name), fn))
		if _, err := tx.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("convert the history of %s.%s: %w", d.Table, c.Name, err)
		}
	}
	return tx.historyViews(ctx, d.ID, d.Table)
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// asideName is the name a retyped column's old values keep: the column's
// name and the schema version they had, not one the table has yet.
func asideName(col, schemaVersion string, taken map[string]bool) string {
	sv := nonIdent.ReplaceAllString(strings.ToLower(schemaVersion), "_")
	if sv == "" {
		sv = "before"
	}
	base := col + "__" + sv
	name := base
	for i := 2; ; i++ {
		if !taken[name] {
			return name
		}
		name = fmt.Sprintf("%s_%d", base, i)
	}
}

// historyViews makes again the view history.<table> and its macros from
// the columns of the rows table.
func (tx *Tx) historyViews(ctx context.Context, datasetID, table string) error {
	have, err := tx.historyColumns(ctx, table)
	if err != nil {
		return err
	}
	for _, q := range historyViewSQL(datasetID, table, have) {
		if _, err := tx.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("make the history views of %s: %w", datasetID, err)
		}
	}
	return nil
}

// asOfSQL is the FROM and WHERE of a history's rows current at version
// v (an SQL expression), the table aliased r: opened at or before v, and
// no end of their id after them up to v.
func asOfSQL(datasetID, rowsT, v string) string {
	return fmt.Sprintf(`%[1]s r WHERE r.%[2]s <= %[3]s AND NOT EXISTS (SELECT 1 FROM _ploti.history_ends e
		WHERE e.dataset_id = %[4]s AND e.record_id = r.%[5]s AND e.valid_to > r.%[2]s AND e.valid_to <= %[3]s)`,
		rowsT, storage.Ident(storage.ColValidFrom), v, storage.Literal(datasetID), storage.Ident(storage.ColRecordID))
}

// historyViewSQL is the view history.<table> and its three macros. Each
// reads the rows table r and the dataset's ends e: a row's valid_to is the
// first end of its id after its valid_from. They are plain SQL with scalar
// parameters (ASOF joins came in DuckDB 0.8), which older clients that open
// the file read too (docs/decisions.md 27; DuckDB 1.1.2 was checked).
func historyViewSQL(datasetID, table string, have []historyColumn) []string {
	rowsT := historyRows + "." + storage.Ident(table)
	ends := fmt.Sprintf("(SELECT record_id, valid_to, valid_to_at FROM _ploti.history_ends WHERE dataset_id = %s)", storage.Literal(datasetID))
	var data []string
	for _, c := range have {
		if !metaColumns[c.name] {
			data = append(data, "r."+storage.Ident(c.name))
		}
	}
	sel := strings.Join(data, ", ") + fmt.Sprintf(`, r.%s, e.valid_to AS %s, r.%s, e.valid_to_at AS %s, r.%s, r.%s`,
		storage.Ident(storage.ColValidFrom), storage.Ident(storage.ColValidTo), storage.Ident(storage.ColValidFromAt), storage.Ident(storage.ColValidToAt), storage.Ident(storage.ColHistChange), storage.Ident(storage.ColOriginID))
	asof := fmt.Sprintf(`ASOF LEFT JOIN %s e ON r.%s = e.record_id AND e.valid_to > r.%s`, ends, storage.Ident(storage.ColRecordID), storage.Ident(storage.ColValidFrom))
	view := storage.HistorySchema + "." + storage.Ident(table)
	macro := func(suffix string) string { return storage.HistorySchema + "." + storage.Ident(table+suffix) }
	cols := strings.Join(data, ", ")
	// A row current at version v: opened at or before v, and no end of its
	// id after it up to v.
	asOf := "SELECT " + cols + " FROM " + asOfSQL(datasetID, rowsT, "v")
	// At a time: by publishedAt; a row whose version's time is not known
	// (a history begun at a version held before) counts as always there.
	at := fmt.Sprintf(`SELECT %[1]s FROM %[2]s r WHERE coalesce(r.%[3]s, '-infinity'::TIMESTAMPTZ) <= ts AND NOT EXISTS (SELECT 1 FROM _ploti.history_ends e
		WHERE e.dataset_id = %[4]s AND e.record_id = r.%[5]s AND e.valid_to > r.%[6]s AND e.valid_to_at <= ts)`,
		cols, rowsT, storage.Ident(storage.ColValidFromAt), storage.Literal(datasetID), storage.Ident(storage.ColRecordID), storage.Ident(storage.ColValidFrom))
	// A record's story: every row of its lineage (the ids a rename or an
	// id map gave it share _ploti_origin_id), oldest first.
	story := fmt.Sprintf(`WITH lineage AS (SELECT * FROM %[1]s WHERE coalesce(%[2]s, %[3]s) = (SELECT coalesce(%[2]s, %[3]s) FROM %[1]s
			WHERE %[3]s = id ORDER BY %[4]s DESC LIMIT 1))
		SELECT %[5]s FROM lineage r %[6]s ORDER BY r.%[4]s`,
		rowsT, storage.Ident(storage.ColOriginID), storage.Ident(storage.ColRecordID), storage.Ident(storage.ColValidFrom), sel, asof)
	return []string{
		fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM %s r %s", view, sel, rowsT, asof),
		fmt.Sprintf("CREATE OR REPLACE MACRO %s(v) AS TABLE %s", macro("_as_of"), asOf),
		fmt.Sprintf("CREATE OR REPLACE MACRO %s(ts) AS TABLE %s", macro("_at"), at),
		fmt.Sprintf("CREATE OR REPLACE MACRO %s(id) AS TABLE %s", macro("_story"), story),
	}
}

// SetHistoryAside keeps a dataset's history of another source's versions
// (whose numbers the new ones are not comparable with) under another
// name: its rows table becomes _ploti_history.<table>__<source> (a number
// added if taken), its ends and versions are relabelled with the dataset
// id "<dataset> (<source>)", and it gets its own view and macros. The
// dataset's history then starts again. It returns the new table name.
func (tx *Tx) SetHistoryAside(ctx context.Context, datasetID, table, source string) (string, error) {
	tx.heavyWrite()
	taken, err := tx.historyTables(ctx)
	if err != nil {
		return "", fmt.Errorf("set the history of %s aside: %w", datasetID, err)
	}
	aside := asideName(table, source, taken)
	label := datasetID + " (" + source + ")"
	for _, s := range []struct {
		q    string
		args []any
	}{
		{fmt.Sprintf("ALTER TABLE %s.%s RENAME TO %s", historyRows, storage.Ident(table), storage.Ident(aside)), nil},
		{"UPDATE _ploti.history_ends SET dataset_id = ? WHERE dataset_id = ?", []any{label, datasetID}},
		{"UPDATE _ploti.history_versions SET dataset_id = ? WHERE dataset_id = ?", []any{label, datasetID}},
	} {
		if _, err := tx.tx.ExecContext(ctx, s.q, s.args...); err != nil {
			return "", fmt.Errorf("set the history of %s aside: %w", datasetID, err)
		}
	}
	return aside, tx.historyViews(ctx, label, aside)
}
