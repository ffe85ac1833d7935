package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// Dataset statuses.
const (
	StatusPending = "pending"
	StatusCurrent = "current"
	StatusHeld    = "held"
	StatusRemoved = "removed"
	StatusFailed  = "failed"
)

// Sources of a dataset's version (_ploti.datasets.source).
const (
	// SourceFeed is a dataset of the Data Feeds subscription: Data Feeds
	// version numbers, kept by the event log.
	SourceFeed = "feed"
	// SourceWatch is a watched dataset: Ploti's own version numbers, kept
	// through the watch API's changes and rows.
	SourceWatch = "watch"
)

// Hold kinds.
const (
	HoldServer = "server"
	HoldLocal  = "local"
)

// Dataset is a registry row of _ploti.datasets.
type Dataset struct {
	ID              string
	Table           string
	Title           string
	PlaceID         string
	Topic           string
	Version         int // 0: no version held
	PreviousVersion int // 0: none
	SchemaVersion   string
	KeyColumns      []string
	RowCount        int64
	Status          string
	StatusReason    string
	UpdatedAt       time.Time
	// Columns are the table's schema columns, in order.
	Columns []ploti.Column
	// SkipUntilRemoved is set after a 409/404 from links.version.
	SkipUntilRemoved   bool
	StaleLastCheckedAt *time.Time
	StaleNextCheckBy   *time.Time
	LastError          string
	FailedAt           *time.Time
	// Source is SourceFeed (the default) or SourceWatch; the two version
	// numberings are never compared.
	Source string
	// TakenFrom is, in memory only, the version the other source held
	// when this one takes the dataset over (0: no takeover): the reload
	// that takes it over renumbers the dataset's change log and marks
	// (Tx.RebaseLog).
	TakenFrom int
}

type Querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

const datasetCols = `dataset_id, table_name, coalesce(title, ''), coalesce(place_id, ''), coalesce(topic, ''),
	coalesce(version, 0), coalesce(previous_version, 0), coalesce(schema_version, ''), coalesce(CAST(to_json(key_columns) AS VARCHAR), '[]'),
	coalesce(row_count, 0), status, coalesce(status_reason, ''), updated_at, coalesce(columns::VARCHAR, '[]'),
	skip_until_removed, stale_last_checked_at, stale_next_check_by, coalesce(last_error, ''), failed_at, source`

func scanDataset(sc interface{ Scan(...any) error }) (*Dataset, error) {
	var d Dataset
	var keys, cols string
	if err := sc.Scan(&d.ID, &d.Table, &d.Title, &d.PlaceID, &d.Topic, &d.Version, &d.PreviousVersion,
		&d.SchemaVersion, &keys, &d.RowCount, &d.Status, &d.StatusReason, &d.UpdatedAt, &cols,
		&d.SkipUntilRemoved, &d.StaleLastCheckedAt, &d.StaleNextCheckBy, &d.LastError, &d.FailedAt, &d.Source); err != nil {
		return nil, err
	}
	// key_columns as JSON: a list is read the same way from both engines.
	if err := json.Unmarshal([]byte(keys), &d.KeyColumns); err != nil {
		return nil, fmt.Errorf("decode key columns of %s: %w", d.ID, err)
	}
	if err := json.Unmarshal([]byte(cols), &d.Columns); err != nil {
		return nil, fmt.Errorf("decode columns of %s: %w", d.ID, err)
	}
	return &d, nil
}

func getDataset(ctx context.Context, q Querier, id string) (*Dataset, error) {
	d, err := scanDataset(q.QueryRowContext(ctx, "SELECT "+datasetCols+" FROM _ploti.datasets WHERE dataset_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", id, ErrNoDataset)
	}
	return d, err
}

// datasetStateCols are datasetCols without the columns' JSON, which costs
// half the registry's read (20–60 ms at 2,000 datasets).
var datasetStateCols = strings.Replace(datasetCols, "coalesce(columns::VARCHAR, '[]')", "'[]'", 1)

func listDatasets(ctx context.Context, q Querier, ids ...string) ([]*Dataset, error) {
	where := ""
	if ids != nil {
		if len(ids) == 0 {
			return nil, nil
		}
		where = " WHERE dataset_id IN (" + strings.Join(quoteAll(ids), ", ") + ")"
	}
	return queryDatasets(ctx, q, datasetCols, where)
}

func queryDatasets(ctx context.Context, q Querier, cols, where string) ([]*Dataset, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+cols+" FROM _ploti.datasets"+where+" ORDER BY dataset_id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Dataset
	for rows.Next() {
		d, err := scanDataset(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Dataset reads one registry row; ErrNoDataset when absent.
func (db *DB) Dataset(ctx context.Context, id string) (*Dataset, error) {
	return getDataset(ctx, db.sql, id)
}

// Datasets lists the registry, ordered by dataset id.
func (db *DB) Datasets(ctx context.Context) ([]*Dataset, error) {
	return db.memoList(ctx, false, func() ([]*Dataset, error) { return listDatasets(ctx, db.sql) })
}

// DatasetStates lists the registry as Datasets does, without each
// dataset's columns (Columns is empty): what status shows.
func (db *DB) DatasetStates(ctx context.Context) ([]*Dataset, error) {
	return db.memoList(ctx, true, func() ([]*Dataset, error) { return queryDatasets(ctx, db.sql, datasetStateCols, "") })
}

// Dataset reads one registry row in the transaction; ErrNoDataset when absent.
func (tx *Tx) Dataset(ctx context.Context, id string) (*Dataset, error) {
	return getDataset(ctx, tx.tx, id)
}

// Datasets lists the registry in the transaction.
func (tx *Tx) Datasets(ctx context.Context) ([]*Dataset, error) { return listDatasets(ctx, tx.tx) }

// CountDatasets counts the registry's rows in the transaction.
func (tx *Tx) CountDatasets(ctx context.Context) (int, error) {
	var n int
	err := tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM _ploti.datasets").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count datasets: %w", err)
	}
	return n, nil
}

// DatasetsOf reads the registry rows of the given datasets (those that
// have one) and their holds, in the transaction: what a page of events
// needs, whatever the number of datasets.
func (tx *Tx) DatasetsOf(ctx context.Context, ids []string) ([]*Dataset, []Hold, error) {
	if ids == nil {
		ids = []string{}
	}
	ds, err := listDatasets(ctx, tx.tx, ids...)
	if err != nil || len(ids) == 0 {
		return ds, nil, err
	}
	holds, err := queryHolds(ctx, tx.tx, " WHERE dataset_id IN ("+strings.Join(quoteAll(ids), ", ")+")")
	return ds, holds, err
}

func nullInt(v int) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// PutDataset inserts or replaces a registry row, setting updated_at to the
// transaction's now. A new row gets a table name that no other dataset uses.
func (tx *Tx) PutDataset(ctx context.Context, d *Dataset) error {
	keys, vals, err := tx.datasetValues(d)
	if err != nil {
		return err
	}
	args := func() []any { return append([]any{d.Table}, vals...) }
	// A row that has its table name is most often there already: try the
	// UPDATE alone, and INSERT when it changed nothing (each statement
	// costs a few hundred microseconds, and the walk writes a row for each
	// dataset it touches).
	exists := false
	if d.Table != "" {
		done, err := tx.updateDataset(ctx, d, keys, args())
		if err != nil || done {
			return err
		}
	} else {
		// No table name given: keep the one the row has, never write ''.
		err := tx.tx.QueryRowContext(ctx, "SELECT table_name FROM _ploti.datasets WHERE dataset_id = ?", d.ID).Scan(&d.Table)
		switch {
		case err == nil:
			exists = true
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("put dataset %s: %w", d.ID, err)
		}
	}
	if exists {
		_, err := tx.updateDataset(ctx, d, keys, args())
		return err
	}
	if d.Table == "" {
		if d.Table, err = tx.freeTableName(ctx, tx.db.tableBase(d.ID)); err != nil {
			return err
		}
	}
	q := `INSERT INTO _ploti.datasets (table_name, title, place_id, topic, version, previous_version, schema_version, key_columns,
			row_count, status, status_reason, updated_at, columns, skip_until_removed, stale_last_checked_at, stale_next_check_by,
			last_error, failed_at, source, dataset_id) VALUES (?, ?, ?, ?, ?, ?, ?, ` + keys + `, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if _, err := tx.tx.ExecContext(ctx, q, args()...); err != nil {
		return fmt.Errorf("put dataset %s: %w", d.ID, err)
	}
	return nil
}

// updateDataset writes d over its registry row, if there is one (done).
// The key columns, a list, are set by a statement of their own, which
// changes the row only when they differ: DuckDB carries out an UPDATE
// that sets a list column (or returns one) as a DELETE and an INSERT of
// the whole row, which then costs its commit and the next checkpoint
// every one of the row's twenty columns (4 ms and 8 ms for a one-row
// registry, against 0.7 ms and 1.9 ms for its scalar columns alone;
// TestTx_PutDataset_setsTheKeyColumnsOnlyWhenTheyChange).
func (tx *Tx) updateDataset(ctx context.Context, d *Dataset, keys string, args []any) (done bool, err error) {
	res, err := tx.tx.ExecContext(ctx, `UPDATE _ploti.datasets SET table_name = ?, title = ?, place_id = ?, topic = ?, version = ?,
			previous_version = ?, schema_version = ?, row_count = ?, status = ?, status_reason = ?, updated_at = ?, columns = ?,
			skip_until_removed = ?, stale_last_checked_at = ?, stale_next_check_by = ?, last_error = ?, failed_at = ?, source = ?
			WHERE dataset_id = ?`, args...)
	if err != nil {
		return false, fmt.Errorf("put dataset %s: %w", d.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, nil
	}
	if _, err := tx.tx.ExecContext(ctx, "UPDATE _ploti.datasets SET key_columns = "+keys+
		" WHERE dataset_id = ? AND CAST(key_columns AS VARCHAR[]) IS DISTINCT FROM CAST("+keys+" AS VARCHAR[])", d.ID); err != nil {
		return false, fmt.Errorf("put dataset %s: %w", d.ID, err)
	}
	return true, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Literal(s)
	}
	return out
}

// freeTableName returns base, or base_2, base_3 … when another dataset or
// a user's table already has that name.
func (tx *Tx) freeTableName(ctx context.Context, base string) (string, error) {
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		var n int
		err := tx.tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM _ploti.datasets WHERE table_name = ?) +
			(SELECT count(*) FROM (`+tx.db.takenNamesSQL()+`) t(name) WHERE name = ?)`, name, name).Scan(&n)
		if err != nil {
			return "", fmt.Errorf("choose table name for %s: %w", base, err)
		}
		if n == 0 {
			return name, nil
		}
	}
}

// datasetValues fills a registry row's defaults (status, updated_at) and
// gives its key_columns literal and, in the order PutDataset and
// PutDatasets write them, its other values from title to dataset_id.
func (tx *Tx) datasetValues(d *Dataset) (keys string, vals []any, err error) {
	tx.rowDefaults(d)
	cols := []byte("[]")
	if d.Columns != nil {
		if cols, err = json.Marshal(d.Columns); err != nil {
			return "", nil, err
		}
	}
	keys = "ARRAY[" + strings.Join(quoteAll(d.KeyColumns), ", ") + "]::VARCHAR[]" // ARRAY[…]: DuckDB's and PostgreSQL's
	return keys, []any{nullStr(d.Title), nullStr(d.PlaceID), nullStr(d.Topic), nullInt(d.Version), nullInt(d.PreviousVersion),
		nullStr(d.SchemaVersion), d.RowCount, d.Status, nullStr(d.StatusReason), d.UpdatedAt, string(cols),
		d.SkipUntilRemoved, d.StaleLastCheckedAt, d.StaleNextCheckBy, nullStr(d.LastError), d.FailedAt, d.Source, d.ID}, nil
}

// rowDefaults fills a registry row's status and source when unset, and
// its updated_at.
func (tx *Tx) rowDefaults(d *Dataset) {
	if d.Status == "" {
		d.Status = StatusPending
	}
	if d.Source == "" {
		d.Source = SourceFeed
	}
	d.UpdatedAt = tx.Now
}

// PutDatasets writes registry rows as PutDataset does, with one UPDATE for
// all the rows that are there already (an UPDATE a row cost
// 1.1–1.4 ms in a catch-up of 50 small updates, which writes 50 rows) and
// one INSERT for the new ones (a bootstrap writes thousands).
// Rows without a table name go one by one, through PutDataset.
func (tx *Tx) PutDatasets(ctx context.Context, ds []*Dataset) error {
	if tx.db.rowsInParts() && len(ds) > backendRows {
		return inParts(ds, func(part []*Dataset) error { return tx.PutDatasets(ctx, part) })
	}
	if len(ds) < 2 || slices.ContainsFunc(ds, func(d *Dataset) bool { return d.Table == "" }) {
		for _, d := range ds {
			if err := tx.PutDataset(ctx, d); err != nil {
				return err
			}
		}
		return nil
	}
	values, args, err := tx.datasetRows(ds)
	if err != nil {
		return err
	}
	// The columns that change with versions and states, in every row; the
	// seldom-changing ones (the schema's columns as JSON above all) only in
	// rows where one differs. DuckDB logs every value an UPDATE sets: a
	// page of 500 state-only events wrote 1.18 MB of WAL with all columns
	// set, 15 KB with these two statements (
	// TestTx_PutDatasets_logsSchemasOnlyWhereTheyChange).
	res, err := tx.putStates(ctx, values, args)
	if err != nil {
		return fmt.Errorf("put %d datasets: %w", len(ds), err)
	}
	// This statement sets the key columns too, which DuckDB carries out
	// as a DELETE and an INSERT of the row (updateDataset): only in rows
	// whose seldom-changing columns differ (a new schema, a new title),
	// where a third statement a page to set them apart would cost every
	// page more than it saves.
	d := "_ploti.datasets."
	if _, err := tx.tx.ExecContext(ctx, `UPDATE _ploti.datasets SET table_name = v.table_name, title = v.title, place_id = v.place_id,
			topic = v.topic, schema_version = v.schema_version, key_columns = v.key_columns, columns = v.columns,
			skip_until_removed = v.skip_until_removed, source = v.source
		FROM `+values+`
		WHERE `+d+`dataset_id = v.dataset_id AND (`+d+`table_name IS DISTINCT FROM v.table_name OR `+d+`title IS DISTINCT FROM v.title
			OR `+d+`place_id IS DISTINCT FROM v.place_id OR `+d+`topic IS DISTINCT FROM v.topic
			OR `+d+`schema_version IS DISTINCT FROM v.schema_version
			OR CAST(`+d+`key_columns AS VARCHAR[]) IS DISTINCT FROM CAST(v.key_columns AS VARCHAR[])
			OR `+tx.jsonText(d+"columns")+` IS DISTINCT FROM `+tx.jsonText("v.columns")+`
			OR `+d+`skip_until_removed IS DISTINCT FROM v.skip_until_removed OR `+d+`source IS DISTINCT FROM v.source)`, args...); err != nil {
		return fmt.Errorf("put %d datasets: %w", len(ds), err)
	}
	if n, err := res.RowsAffected(); err == nil && n == int64(len(ds)) {
		return nil
	}
	// Some rows are new: insert those the UPDATE did not find.
	if _, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.datasets (`+registryCols+`) SELECT * FROM `+values+`
		WHERE v.dataset_id NOT IN (SELECT dataset_id FROM _ploti.datasets)`, args...); err != nil {
		return fmt.Errorf("put %d datasets: %w", len(ds), err)
	}
	return nil
}

// backendRows is the most registry rows an engine's statement takes as
// parameters: PostgreSQL takes at most 65,535 a statement, and a row is
// 19 (a bootstrap registers every dataset of a statewide manifest at
// once).
const backendRows = 2000

// inParts calls put with ds in parts of at most backendRows rows.
func inParts(ds []*Dataset, put func([]*Dataset) error) error {
	for start := 0; start < len(ds); start += backendRows {
		if err := put(ds[start:min(start+backendRows, len(ds))]); err != nil {
			return err
		}
	}
	return nil
}

// putStates is PutDatasets' first UPDATE: the columns that change with
// versions and states, in the rows of v the registry holds.
func (tx *Tx) putStates(ctx context.Context, values string, args []any) (sql.Result, error) {
	return tx.tx.ExecContext(ctx, `UPDATE _ploti.datasets SET version = v.version, previous_version = v.previous_version,
			row_count = v.row_count, status = v.status, status_reason = v.status_reason, updated_at = v.updated_at,
			stale_last_checked_at = v.stale_last_checked_at, stale_next_check_by = v.stale_next_check_by,
			last_error = v.last_error, failed_at = v.failed_at
		FROM `+values+`
		WHERE _ploti.datasets.dataset_id = v.dataset_id`, args...)
}

// PutDatasetStates writes registry rows whose seldom-changing columns are
// as the registry holds them (SameDescription with the row as read or
// last written): their versions and states alone, with PutDatasets' first
// UPDATE, not its second, which compares every row's columns (the schema
// as JSON above all) to find none changed (0.59 s of the
// 2,000-dataset catch-up's CPU, one such UPDATE a page of ~500 rows).
// Rows the registry does not hold are written whole, as PutDatasets does.
func (tx *Tx) PutDatasetStates(ctx context.Context, ds []*Dataset) error {
	if tx.db.rowsInParts() && len(ds) > backendRows {
		return inParts(ds, func(part []*Dataset) error { return tx.PutDatasetStates(ctx, part) })
	}
	if len(ds) < 2 || slices.ContainsFunc(ds, func(d *Dataset) bool { return d.Table == "" }) {
		return tx.PutDatasets(ctx, ds)
	}
	values, args, err := tx.datasetRows(ds)
	if err != nil {
		return err
	}
	res, err := tx.putStates(ctx, values, args)
	if err != nil {
		return fmt.Errorf("put %d datasets' states: %w", len(ds), err)
	}
	if n, err := res.RowsAffected(); err == nil && n == int64(len(ds)) {
		return nil
	}
	return tx.PutDatasets(ctx, ds) // some are new: their rows whole
}

// SameDescription reports whether two rows of a dataset agree in the
// columns PutDatasetStates leaves as they are: the table, title, place,
// topic, schema version, keys, columns, skip_until_removed and source.
func SameDescription(a, b *Dataset) bool {
	if a.ID != b.ID || a.Table != b.Table || a.Title != b.Title || a.PlaceID != b.PlaceID || a.Topic != b.Topic ||
		a.SchemaVersion != b.SchemaVersion || !slices.Equal(a.KeyColumns, b.KeyColumns) ||
		a.SkipUntilRemoved != b.SkipUntilRemoved || a.Source == "" || a.Source != b.Source || len(a.Columns) != len(b.Columns) {
		return false
	}
	ca, err := json.Marshal(a.Columns)
	if err != nil {
		return false
	}
	cb, err := json.Marshal(b.Columns)
	return err == nil && bytes.Equal(ca, cb)
}

// registryCols are the registry's columns in the order PutDatasets' rows
// (datasetRows) give them.
const registryCols = `table_name, title, place_id, topic, version, previous_version, schema_version, key_columns, row_count, status,
	status_reason, updated_at, columns, skip_until_removed, stale_last_checked_at, stale_next_check_by, last_error, failed_at,
	source, dataset_id`

// datasetRows is a relation v of registry rows in registryCols' order, and
// its arguments. A Engine's database takes them as a VALUES list of
// parameters. The DuckDB file takes them as one JSON text: DuckDB's cost
// of binding a statement grows with the square of its parameters (issue
// 18: a VALUES list of 500 rows, 9,500 parameters, took 0.5–0.7 s to run
// on its own, and a page of state-only events writes a row for each of its
// 500 datasets; the same rows as one JSON text took 10–45 ms).
func (tx *Tx) datasetRows(ds []*Dataset) (string, []any, error) {
	if tx.db.rowsInParts() {
		return tx.datasetValuesRows(ds)
	}
	type row struct {
		Table         string   `json:"table_name"`
		Title         any      `json:"title"`
		PlaceID       any      `json:"place_id"`
		Topic         any      `json:"topic"`
		Version       any      `json:"version"`
		Previous      any      `json:"previous_version"`
		SchemaVersion any      `json:"schema_version"`
		Keys          []string `json:"key_columns"`
		RowCount      int64    `json:"row_count"`
		Status        string   `json:"status"`
		Reason        any      `json:"status_reason"`
		UpdatedAt     any      `json:"updated_at"`
		Columns       string   `json:"columns"`
		Skip          bool     `json:"skip_until_removed"`
		StaleChecked  any      `json:"stale_last_checked_at"`
		StaleNext     any      `json:"stale_next_check_by"`
		LastError     any      `json:"last_error"`
		FailedAt      any      `json:"failed_at"`
		Source        string   `json:"source"`
		ID            string   `json:"dataset_id"`
	}
	rows := make([]row, len(ds))
	for i, d := range ds {
		tx.rowDefaults(d)
		cols := []byte("[]")
		if d.Columns != nil {
			var err error
			if cols, err = json.Marshal(d.Columns); err != nil {
				return "", nil, err
			}
		}
		keys := d.KeyColumns
		if keys == nil {
			keys = []string{}
		}
		rows[i] = row{Table: d.Table, Title: nullStr(d.Title), PlaceID: nullStr(d.PlaceID), Topic: nullStr(d.Topic),
			Version: nullInt(d.Version), Previous: nullInt(d.PreviousVersion), SchemaVersion: nullStr(d.SchemaVersion), Keys: keys,
			RowCount: d.RowCount, Status: d.Status, Reason: nullStr(d.StatusReason), UpdatedAt: jsonTime(&d.UpdatedAt), Columns: string(cols),
			Skip: d.SkipUntilRemoved, StaleChecked: jsonTime(d.StaleLastCheckedAt), StaleNext: jsonTime(d.StaleNextCheckBy),
			LastError: nullStr(d.LastError), FailedAt: jsonTime(d.FailedAt), Source: d.Source, ID: d.ID}
	}
	rel, args, err := tx.db.jsonRows(rows, `[{"table_name": "VARCHAR", "title": "VARCHAR", "place_id": "VARCHAR",
			"topic": "VARCHAR", "version": "INTEGER", "previous_version": "INTEGER", "schema_version": "VARCHAR", "key_columns": ["VARCHAR"],
			"row_count": "BIGINT", "status": "VARCHAR", "status_reason": "VARCHAR", "updated_at": "TIMESTAMPTZ", "columns": "VARCHAR",
			"skip_until_removed": "BOOLEAN", "stale_last_checked_at": "TIMESTAMPTZ", "stale_next_check_by": "TIMESTAMPTZ",
			"last_error": "VARCHAR", "failed_at": "TIMESTAMPTZ", "source": "VARCHAR", "dataset_id": "VARCHAR"}]`)
	if err != nil {
		return "", nil, err
	}
	return `(SELECT r.table_name, r.title, r.place_id, r.topic, r.version, r.previous_version, r.schema_version, r.key_columns,
			r.row_count, r.status, r.status_reason, r.updated_at, CAST(r.columns AS JSON) AS columns, r.skip_until_removed,
			r.stale_last_checked_at, r.stale_next_check_by, r.last_error, r.failed_at, r.source, r.dataset_id
		FROM ` + rel + `) v`, args, nil
}

// datasetValuesRows is datasetRows on a database backend: a VALUES
// list with each value's type, which every SQL engine takes.
func (tx *Tx) datasetValuesRows(ds []*Dataset) (string, []any, error) {
	rows := make([]string, len(ds))
	var args []any
	for i, d := range ds {
		keys, vals, err := tx.datasetValues(d)
		if err != nil {
			return "", nil, err
		}
		rows[i] = `(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::INTEGER, ?::INTEGER, ?::VARCHAR, ` + keys + `, ?::BIGINT,
		?::VARCHAR, ?::VARCHAR, ?::TIMESTAMPTZ, ?::JSON, ?::BOOLEAN, ?::TIMESTAMPTZ, ?::TIMESTAMPTZ, ?::VARCHAR, ?::TIMESTAMPTZ, ?::VARCHAR, ?::VARCHAR)`
		args = append(append(args, d.Table), vals...)
	}
	return "(VALUES " + strings.Join(rows, ", ") + ") v(" + registryCols + ")", args, nil
}

// jsonRows is rows as the engine's relation r read from one JSON text of
// their values with schema (its JSON structure), and that text as the
// relation's one argument: a page's rows bound as one parameter instead
// of a VALUES list of one a value (datasetRows).
func (db *DB) jsonRows(rows any, schema string) (string, []any, error) {
	rel, ok := db.be.JSONRows(schema)
	if !ok {
		return "", nil, fmt.Errorf("%s binds rows as VALUES lists, not JSON", db.path)
	}
	text, err := json.Marshal(rows)
	if err != nil {
		return "", nil, err
	}
	return rel, []any{string(text)}, nil
}

// jsonTime is a time as DuckDB reads a TIMESTAMPTZ from JSON, to the
// microsecond as a bound time.Time is (truncated), or nil.
func jsonTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.999999Z07:00")
}
