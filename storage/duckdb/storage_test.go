package duckdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/internal/storagetest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

func mustOpen(tb testing.TB) *storage.DB {
	tb.Helper()
	db, err := Open(context.Background(), filepath.Join(tb.TempDir(), "t.duckdb"), storage.Options{Geometry: testGeometry})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// mustParquet writes a Parquet file with DuckDB's own COPY of a query.
func mustParquet(tb testing.TB, db *storage.DB, query string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "f.parquet")
	if _, err := db.SQL().Exec("COPY (" + query + ") TO " + storage.Literal(path) + " (FORMAT parquet)"); err != nil {
		tb.Fatal(err)
	}
	return path
}

var testCols = []ploti.Column{
	{Name: "permit", Type: ploti.Type{Type: ploti.TypeString}},
	{Name: "valuation", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 14, Scale: 2}}},
	{Name: "issued", Type: ploti.Type{Type: ploti.TypeTimestamp}},
	{Name: "tags", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeString}}},
	{Name: "geometry", Type: ploti.Type{Type: ploti.TypeGeometry}},
}

const snapQuery = `SELECT 'r' || i AS _ploti_record_id, 'fl-orange' AS _ploti_place_id, 'P' || i AS permit,
	(i * 1.5)::DECIMAL(14,2) AS valuation, TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_days(i::INT) AS issued,
	['a', 'b'] AS tags, ('POINT (' || i || ' ' || i || ')')::GEOMETRY AS geometry FROM range(5) t(i)`

func TestOpen_migratesOnceAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.duckdb")
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		db, err := Open(ctx, path, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.SQL().QueryRow("SELECT max(version) FROM _ploti.schema_migrations").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if got, want := n, MigrationVersion(); got != want {
			t.Fatalf("migration = %d, want %d", got, want)
		}
		db.Close()
	}
}

func TestTx_LoadSnapshotAndMerge(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	snap := mustParquet(t, db, snapQuery)
	changes := mustParquet(t, db, `SELECT * FROM (VALUES
		('r1', 'changed', 'fl-orange', 'P1x', 9.99::DECIMAL(14,2), TIMESTAMPTZ '2026-02-01 00:00:00+00', ['c'], 'POINT (7 7)'::GEOMETRY),
		('r2', 'removed', NULL, NULL, NULL, NULL, NULL, NULL),
		('r9', 'added', 'fl-orange', 'P9', 1.00::DECIMAL(14,2), TIMESTAMPTZ '2026-03-01 00:00:00+00', [], 'POINT (9 9)'::GEOMETRY))
		v(_ploti_record_id, _ploti_change, _ploti_place_id, permit, valuation, issued, tags, geometry)`)
	err := db.Update(ctx, func(tx *storage.Tx) error {
		n, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		if err != nil {
			return err
		}
		if n != 5 {
			t.Fatalf("rows = %d, want 5", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var typ string
	if err := db.SQL().QueryRow("SELECT data_type FROM duckdb_columns() WHERE table_name = 'permits' AND column_name = 'geometry'").Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != geomType() {
		t.Fatalf("geometry column type = %q", typ)
	}
	var st storage.MergeStats
	err = db.Update(ctx, func(tx *storage.Tx) error {
		st, err = tx.Tables().MergeChanges(ctx, "ds", 2, "permits", testCols, changes, -1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Added != 1 || st.Changed != 1 || st.Removed != 1 || st.Rows != 5 {
		t.Fatalf("stats = %+v", st)
	}
	var permit, wkt string
	if err := db.SQL().QueryRow("SELECT permit, "+geomText("geometry")+" FROM permits WHERE _ploti_record_id = 'r1'").Scan(&permit, &wkt); err != nil {
		t.Fatal(err)
	}
	if permit != "P1x" || wkt != "POINT (7 7)" {
		t.Fatalf("r1 = %q %q", permit, wkt)
	}
}

func TestTx_LoadSnapshot_refusesDuplicateIDsAndKeepsOldTable(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	good := mustParquet(t, db, snapQuery)
	dup := mustParquet(t, db, "SELECT * REPLACE ('r1' AS _ploti_record_id) FROM ("+snapQuery+")")
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{good})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{dup})
		return err
	})
	if !errors.Is(err, storage.ErrBadData) {
		t.Fatalf("err = %v, want ErrBadData", err)
	}
	var n int
	db.SQL().QueryRow("SELECT count(DISTINCT _ploti_record_id) FROM permits").Scan(&n)
	if n != 5 {
		t.Fatalf("old table lost: %d distinct ids", n)
	}
}

func TestTx_MergeChanges_refusesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	snap := mustParquet(t, db, snapQuery)
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, query, want string }{
		{"added id already held", "SELECT 'added' AS _ploti_change, * FROM (" + snapQuery + ") WHERE _ploti_record_id = 'r3'", "added id r3 is already held"},
		{"removed id not held", "SELECT 'removed' AS _ploti_change, * REPLACE ('zz' AS _ploti_record_id) FROM (" + snapQuery + ") LIMIT 1", "removed id zz is not held"},
		{"changed id not held, among ids that are", "SELECT CASE WHEN _ploti_record_id = 'r2' THEN 'changed' ELSE 'removed' END AS _ploti_change, * REPLACE (CASE WHEN _ploti_record_id = 'r2' THEN 'r2x' ELSE _ploti_record_id END AS _ploti_record_id) FROM (" + snapQuery + ")", "changed id r2x is not held"},
		{"missing column", "SELECT 'changed' AS _ploti_change, * EXCLUDE (tags) FROM (" + snapQuery + ") LIMIT 1", "lacks column(s) tags"},
		{"extra column", "SELECT 'changed' AS _ploti_change, 1 AS surprise, * FROM (" + snapQuery + ") LIMIT 1", "has column surprise"},
		{"bad change kind", "SELECT 'moved' AS _ploti_change, * FROM (" + snapQuery + ") LIMIT 1", "not added, changed or removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParquet(t, db, tc.query)
			err := db.Update(ctx, func(tx *storage.Tx) error {
				_, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", testCols, f, -1)
				return err
			})
			if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadData saying %q", err, tc.want)
			}
			var n int
			db.SQL().QueryRow("SELECT count(*) FROM permits").Scan(&n)
			if n != 5 {
				t.Fatalf("rows = %d after refused merge", n)
			}
		})
	}
}

func TestTx_AddColumnsThenMerge(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	snap := mustParquet(t, db, snapQuery)
	cols2 := append(append([]ploti.Column{}, testCols...), ploti.Column{Name: "units", Type: ploti.Type{Type: ploti.TypeInteger}})
	changes := mustParquet(t, db, "SELECT 'changed' AS _ploti_change, *, 3 AS units FROM ("+snapQuery+") WHERE _ploti_record_id = 'r0'")
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap}); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.Tables().AddColumns(ctx, "permits", cols2[len(testCols):]) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", cols2, changes, -1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var withUnits, nulls int
	db.SQL().QueryRow("SELECT count(units), count(*) - count(units) FROM permits").Scan(&withUnits, &nulls)
	if withUnits != 1 || nulls != 4 {
		t.Fatalf("units filled %d, null %d; want 1 and 4", withUnits, nulls)
	}
}

func TestTx_PutDataset_roundTrip(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	now := time.Now()
	err := db.Update(ctx, func(tx *storage.Tx) error {
		for _, id := range []string{"ds_Fl-Orange", "ds_fl_orange"} {
			if err := tx.PutDataset(ctx, &storage.Dataset{ID: id, Title: "T", Version: 3, KeyColumns: []string{"permit"},
				Status: storage.StatusCurrent, Columns: testCols, StaleNextCheckBy: &now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := db.Datasets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Table == ds[1].Table {
		t.Fatalf("tables: %+v", ds)
	}
	if got := ds[0]; got.Version != 3 || len(got.Columns) != len(testCols) || got.KeyColumns[0] != "permit" || got.Columns[1].Precision.Scale != 2 {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestTableName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ds_fl_orange_permits", "ds_fl_orange_permits"},
		{"DS-Fl.Orange", "ds_fl_orange"},
		{"9lives", "t_9lives"},
		{"_ploti", "t_ploti"},
	} {
		if got := storage.TableName(tc.in); got != tc.want {
			t.Errorf("TableName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// docs/wire.md section 5: geometry is WKB; a file without the GeoParquet
// metadata reads as BLOB and must still load as GEOMETRY.
func TestTx_LoadSnapshot_plainWKBGeometry(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	f := mustParquet(t, db, "SELECT * REPLACE (ST_AsWKB(geometry) AS geometry) FROM ("+snapQuery+")")
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{f})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var wkt string
	if err := db.SQL().QueryRow("SELECT " + geomText("geometry") + " FROM permits WHERE _ploti_record_id = 'r3'").Scan(&wkt); err != nil {
		t.Fatal(err)
	}
	if wkt != "POINT (3 3)" {
		t.Fatalf("geometry = %q", wkt)
	}
}

// Regression (review H1): a write without a table name keeps the row's.
func TestTx_PutDataset_keepsTableName(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a"}) }); err != nil {
		t.Fatal(err)
	}
	d := &storage.Dataset{ID: "ds_a", Status: storage.StatusCurrent, Version: 2}
	if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) }); err != nil {
		t.Fatal(err)
	}
	got, err := db.Dataset(ctx, "ds_a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Table != "ds_a" || d.Table != "ds_a" || got.Version != 2 {
		t.Fatalf("table %q (given back %q), version %d", got.Table, d.Table, got.Version)
	}
}

// Migration 2 rebuilds _ploti.changes with its record ids uncompressed: a
// file at migration 1 keeps its log rows, and new rows are written that way.
func TestOpen_migration2KeepsTheChangesLog(t *testing.T) {
	ctx := context.Background()
	path := fileAtMigration(t, 1, "INSERT INTO _ploti.changes VALUES ('ds', 2, 'r1', 'added'), ('ds', 2, 'r2', 'removed')")
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Enough rows that DuckDB would pick FSST for them on its own.
	stmts := append(storage.LogOneSetSQL("ds", 3, "'r3', 'changed'"), storage.LogOneSetSQL("ds", 4, "'record-' || i, 'added' FROM range(100000) t(i)")...)
	for _, q := range append(stmts, "CHECKPOINT") {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var log, compression string
	if err := db.SQL().QueryRowContext(ctx, "SELECT string_agg(version || ':' || record_id || ':' || change, ' ' ORDER BY version, record_id) FROM _ploti.changes WHERE version < 4").Scan(&log); err != nil {
		t.Fatal(err)
	}
	if want := "2:r1:added 2:r2:removed 3:r3:changed"; log != want {
		t.Fatalf("log after migration = %q, want %q", log, want)
	}
	if err := db.SQL().QueryRowContext(ctx, `SELECT string_agg(DISTINCT compression, ',') FROM pragma_storage_info('_ploti.change_rows')
		WHERE column_name = 'record_id' AND segment_type = 'VARCHAR'`).Scan(&compression); err != nil {
		t.Fatal(err)
	}
	if compression != "Uncompressed" {
		t.Fatalf("record_id stored as %q, want Uncompressed", compression)
	}
}

// PutDatasets writes what PutDataset writes, row for row: one UPDATE for
// rows that are there, and new rows too; null, quoted and nested values
// alike.
func TestTx_PutDatasets_writesWhatPutDatasetWrites(t *testing.T) {
	ctx := context.Background()
	// Nanoseconds, in another zone: both writers keep the same instant to
	// the microsecond (PutDatasets sends the rows to DuckDB as JSON text).
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789999, time.FixedZone("EST", -5*3600))
	full := func(id string) *storage.Dataset {
		return &storage.Dataset{ID: id, Table: id, Title: "T " + id, PlaceID: "fl-orange", Topic: "permits", Version: 7, PreviousVersion: 6,
			SchemaVersion: "2.1", KeyColumns: []string{"permit", "it's"}, RowCount: 42, Status: storage.StatusFailed, StatusReason: "r",
			Columns: testCols, SkipUntilRemoved: true, StaleLastCheckedAt: &at, StaleNextCheckBy: &at, LastError: "bad 'file'", FailedAt: &at,
			Source: storage.SourceWatch}
	}
	rounds := [][]*storage.Dataset{
		{{ID: "ds_a"}, full("ds_b")},
		{full("ds_a"), {ID: "ds_b", Table: "ds_b", Status: storage.StatusCurrent}},                                       // all there: one UPDATE
		{{ID: "ds_a", Table: "ds_a", Status: storage.StatusHeld, Version: 1}, full("ds_c"), {ID: "ds_d", Table: "ds_d"}}, // two new
		// Only a seldom-changing column differs (PutDatasets sets those
		// where one differs): ds_c's schema, ds_d's title, ds_a's keys.
		{{ID: "ds_a", Table: "ds_a", Status: storage.StatusHeld, Version: 1, KeyColumns: []string{"k"}}, func() *storage.Dataset {
			d := full("ds_c")
			d.Columns = testCols[:1]
			return d
		}(), {ID: "ds_d", Table: "ds_d", Title: "new title"}, full("ds_b")},
	}
	var got [2][][]*storage.Dataset // by writer, then by round
	for i, many := range []bool{false, true} {
		db := mustOpen(t)
		for _, round := range rounds {
			err := db.Update(ctx, func(tx *storage.Tx) error {
				var ds []*storage.Dataset
				for _, d := range round {
					cp := *d
					ds = append(ds, &cp)
				}
				if many {
					return tx.PutDatasets(ctx, ds)
				}
				for _, d := range ds {
					if err := tx.PutDataset(ctx, d); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("many=%v: %v", many, err)
			}
			ds, err := db.Datasets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				d.UpdatedAt = time.Time{}
			}
			got[i] = append(got[i], ds)
		}
	}
	for r := range rounds {
		if !reflect.DeepEqual(got[0][r], got[1][r]) {
			a, _ := json.Marshal(got[0][r])
			b, _ := json.Marshal(got[1][r])
			t.Fatalf("round %d: PutDataset wrote\n%s\nPutDatasets wrote\n%s", r+1, a, b)
		}
	}
	if len(got[1][2]) != 4 {
		t.Fatalf("%d rows, want 4", len(got[1][2]))
	}
	for _, d := range got[1][3] {
		if d.ID == "ds_c" && len(d.Columns) != 1 || d.ID == "ds_d" && d.Title != "new title" || d.ID == "ds_a" && !slices.Equal(d.KeyColumns, []string{"k"}) {
			t.Fatalf("round 4 did not write %s's changed column: %+v", d.ID, d)
		}
	}
	byID := map[string]*storage.Dataset{}
	for _, d := range got[1][2] {
		byID[d.ID] = d
	}
	if d := byID["ds_b"]; d == nil || d.Source != storage.SourceFeed || d.LastError != "" || d.StaleNextCheckBy != nil || d.Status != storage.StatusCurrent || d.Version != 0 || d.Title != "" {
		t.Fatalf("ds_b after the one UPDATE cleared it: %+v", d)
	}
	if d := byID["ds_c"]; d == nil || d.Source != storage.SourceWatch || d.LastError != "bad 'file'" || d.StaleNextCheckBy == nil || !d.StaleNextCheckBy.Equal(at.Truncate(time.Microsecond)) || d.KeyColumns[1] != "it's" {
		t.Fatalf("ds_c: %+v", d)
	}
}

// A page of state-only events rewrites its datasets' states, not their
// schemas: PutDatasets logs the columns that changed, so the WAL of 500
// rows whose schemas did not change stays small (320 KB a page
// with every column set made DuckDB checkpoint every ~8 pages), and grows
// when the schemas do change.
func TestTx_PutDatasets_logsSchemasOnlyWhereTheyChange(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	wide := make([]ploti.Column, 40)
	for i := range wide {
		wide[i] = ploti.Column{Name: fmt.Sprintf("a_rather_long_column_name_%02d", i), Type: ploti.Type{Type: ploti.TypeString}}
	}
	page := func(status string, cols []ploti.Column) []*storage.Dataset {
		ds := make([]*storage.Dataset, 500)
		for i := range ds {
			id := fmt.Sprintf("ds_%03d", i)
			ds[i] = &storage.Dataset{ID: id, Table: id, Title: "Permits " + id, Version: 3, Status: status, Columns: cols, KeyColumns: []string{"id"}}
		}
		return ds
	}
	walAfter := func(ds []*storage.Dataset) int64 {
		t.Helper()
		if _, err := db.SQL().ExecContext(ctx, "CHECKPOINT"); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasets(ctx, ds) }); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(db.Path() + ".wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	walAfter(page(storage.StatusCurrent, wide))
	states := walAfter(page(storage.StatusHeld, wide))
	schemas := walAfter(page(storage.StatusHeld, wide[:39]))
	t.Logf("WAL of 500 rows: %d bytes for new states, %d for new schemas", states, schemas)
	if states*4 > schemas {
		t.Fatalf("WAL of 500 new states is %d bytes, of 500 new schemas %d: the states' page logs the schemas too", states, schemas)
	}
	ds, err := db.Datasets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 500 || ds[7].Status != storage.StatusHeld || len(ds[7].Columns) != 39 {
		t.Fatalf("%d rows, row 7: %+v", len(ds), ds[7])
	}
}

// DuckDB carries out an UPDATE that sets a list column as a DELETE and an
// INSERT of the row, which gets a new rowid: a registry row whose key
// columns did not change keeps its rowid (its scalar columns were updated
// in place), and one whose key columns changed has them.
func TestTx_PutDataset_setsTheKeyColumnsOnlyWhenTheyChange(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	put := func(d storage.Dataset) {
		t.Helper()
		if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, &d) }); err != nil {
			t.Fatal(err)
		}
	}
	rowid := func() int64 {
		t.Helper()
		var id int64
		if err := db.SQL().QueryRowContext(ctx, "SELECT rowid FROM _ploti.datasets WHERE dataset_id = 'ds_a'").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	d := storage.Dataset{ID: "ds_a", Table: "a", Version: 1, Status: storage.StatusCurrent, KeyColumns: []string{"permit_number"}}
	put(d)
	first := rowid()
	d.Version, d.RowCount = 2, 10
	put(d)
	if got := rowid(); got != first {
		t.Fatalf("a new version with the same key columns moved the row: rowid %d, then %d", first, got)
	}
	d.Version, d.KeyColumns = 3, []string{"permit_number", "issued_date"}
	put(d)
	if got := rowid(); got == first {
		t.Fatalf("new key columns left the row at rowid %d: were they set?", got)
	}
	got, err := db.Dataset(ctx, "ds_a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 3 || got.RowCount != 10 || !slices.Equal(got.KeyColumns, d.KeyColumns) {
		t.Fatalf("the row reads %+v", got)
	}
}

// Small commits go to the WAL until it holds CheckpointThreshold (a
// catch-up's pages of small merges are checkpointed together),
// and a commit that adds more than BulkCommit to it is checkpointed as it
// commits (a large merge's rows are not written twice).
func TestTx_Commit_checkpointsBulkCommitsAndLetsSmallOnesGather(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	wal := func() int64 { return walSize(db.Path()) }
	insert := func(rows int) { insertWide(t, db, rows, false) }
	if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE t (i BIGINT, a BIGINT, b BIGINT, c BIGINT, s VARCHAR); CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for wal() < 8_000_000 && len(sizes) < 40 {
		insert(5000) // about 0.6 MB of WAL each
		sizes = append(sizes, wal())
		if len(sizes) > 1 && sizes[len(sizes)-1] <= sizes[len(sizes)-2] {
			t.Fatalf("WAL after each small commit: %v: a small commit checkpointed before the WAL held %s", sizes, CheckpointThreshold)
		}
	}
	if wal() < 8_000_000 {
		t.Fatalf("WAL after %d small commits: %v", len(sizes), sizes)
	}
	before := wal()
	// DuckDB's estimate of a commit's WAL counts 48 bytes a row here (the
	// strings' 16, not their text): 120,000 rows are 5.8 MB of estimate,
	// fewer than a row group (DuckDB writes full ones to the file as they
	// come).
	insert(120_000)
	if n := wal(); n != 0 {
		t.Fatalf("WAL is %d bytes after a commit of 120,000 rows (%d before it): a bulk commit went to the WAL", n, before)
	}
	insert(5000)
	if n := wal(); n == 0 || n > 2_000_000 {
		t.Fatalf("WAL is %d bytes after a small commit on an empty WAL", n)
	}
	var threshold string
	if err := db.SQL().QueryRowContext(ctx, "SELECT current_setting('checkpoint_threshold')").Scan(&threshold); err != nil {
		t.Fatal(err)
	}
	if threshold != "15.2 MiB" && threshold != "16.0 MB" {
		t.Fatalf("checkpoint_threshold after a commit = %q, want %s back", threshold, CheckpointThreshold)
	}
}

// DatasetsOf reads the rows and holds of the datasets asked for and of no
// other (a page of events reads its own datasets, however many
// the file holds); CountDatasets counts them all.
func TestTx_DatasetsOf_readsTheGivenDatasetsOnly(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	db := mustOpen(t)
	err := db.Update(ctx, func(tx *storage.Tx) error {
		for _, id := range []string{"ds_a", "ds_b", "ds_c", "ds_it's"} {
			if err := tx.PutDataset(ctx, &storage.Dataset{ID: id, Status: storage.StatusCurrent, Version: 2, Columns: testCols}); err != nil {
				return err
			}
			if err := tx.PutHold(ctx, storage.Hold{DatasetID: id, Version: 3, Kind: storage.HoldServer, Reason: "processing", Since: &at}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx *storage.Tx) error {
		for _, tc := range []struct {
			ids  []string
			want string
		}{
			{[]string{"ds_c", "ds_it's", "ds_gone"}, "[ds_c ds_it's] [ds_c ds_it's]"},
			{[]string{"ds_a"}, "[ds_a] [ds_a]"},
			{[]string{}, "[] []"},
		} {
			ds, holds, err := tx.DatasetsOf(ctx, tc.ids)
			if err != nil {
				return err
			}
			var got [2][]string
			for _, d := range ds {
				if d.Version != 2 || len(d.Columns) != len(testCols) {
					t.Errorf("%v: %+v", tc.ids, d)
				}
				got[0] = append(got[0], d.ID)
			}
			for _, h := range holds {
				got[1] = append(got[1], h.DatasetID)
			}
			if s := fmt.Sprintf("%v %v", got[0], got[1]); s != tc.want {
				t.Errorf("DatasetsOf(%q) read %s, want %s", tc.ids, s, tc.want)
			}
		}
		n, err := tx.CountDatasets(ctx)
		if err == nil && n != 4 {
			t.Errorf("CountDatasets = %d, want 4", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// insertWide commits rows rows into the table t (i, a, b, c BIGINT, s
// VARCHAR) of the WAL tests, about 120 bytes of WAL a row; small marks
// the transaction Small.
func insertWide(t *testing.T, db *storage.DB, rows int, small bool) {
	t.Helper()
	ctx := context.Background()
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if small {
			tx.Engine().(storage.SmallCommitter).Small()
		}
		_, err := tx.Exec(ctx, "INSERT INTO t SELECT i, i, i, i, repeat('x', 80) || i FROM range(?) r(i)", rows)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fileAtMigration writes a file at migration n, as a build of that
// migration left it, then runs the statements extra in it; it returns the
// file's path.
func fileAtMigration(t *testing.T, n int, extra ...string) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.duckdb")
	plain, err := duckread.OpenPlain(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names, err := migrationNames()
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{"CREATE SCHEMA _ploti"}
	for _, name := range names[:n] {
		b, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			t.Fatal(err)
		}
		stmts = append(stmts, string(b))
	}
	stmts = append(stmts, "CREATE TABLE _ploti.schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)",
		fmt.Sprintf("INSERT INTO _ploti.schema_migrations SELECT i, now() FROM range(1, %d) t(i)", n+1))
	for _, q := range append(stmts, extra...) {
		if _, err := plain.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// closeLeavingTheLog runs stmts in the file, then closes it as a crash
// would leave it: without the close's checkpoint, its commits in the
// write-ahead log; and opens it again.
func closeLeavingTheLog(t *testing.T, db *storage.DB, path string, stmts ...string) *storage.DB {
	t.Helper()
	ctx := context.Background()
	for _, q := range append(stmts, "PRAGMA disable_checkpoint_on_shutdown") {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	if _, err := os.Stat(path + ".wal"); err != nil {
		t.Fatalf("the commits are not in the write-ahead log: %v", err)
	}
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatalf("open with the write-ahead log: %v", err)
	}
	return db
}

// Migration 9 splits _ploti.changes into change_sets and change_rows under
// a view of the same name and columns: a file at migration 8 keeps its log
// rows, read through the view as before; a set added after them takes the
// next number; and the migration, left in the write-ahead log by a close
// that did not checkpoint, replays when the file opens again.
func TestOpen_migration9KeepsTheChangesLogUnderAView(t *testing.T) {
	ctx := context.Background()
	path := fileAtMigration(t, 8, "INSERT INTO _ploti.changes VALUES ('ds_b', 3, 'b1', 'removed'), ('ds_a', 2, 'a1', 'added'), ('ds_a', 2, 'a2', 'changed'), ('ds_a', 4, 'a1', 'renamed')")
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db = closeLeavingTheLog(t, db, path, storage.LogOneSetSQL("ds_a", 5, "'a3', 'added'")...)
	defer db.Close()
	want := "ds_a:2:a1:added ds_a:2:a2:changed ds_a:4:a1:renamed ds_a:5:a3:added ds_b:3:b1:removed"
	if got := tableState(t, db, "SELECT string_agg(concat_ws(':', dataset_id, version, record_id, change), ' ' ORDER BY dataset_id, version, record_id) FROM _ploti.changes"); got != want {
		t.Fatalf("log after migration 9 = %s, want %s", got, want)
	}
	if got := tableState(t, db, "SELECT string_agg(concat_ws(':', set_id, dataset_id, version), ' ' ORDER BY set_id) FROM _ploti.change_sets"); got != "1:ds_a:2 2:ds_a:4 3:ds_b:3 4:ds_a:5" {
		t.Fatalf("sets = %s", got)
	}
	if got := tableState(t, db, "SELECT string_agg(DISTINCT data_type, ',') FROM duckdb_columns() WHERE schema_name = '_ploti' AND table_name = 'changes' AND column_name IN ('dataset_id', 'record_id', 'change')"); got != "VARCHAR" {
		t.Fatalf("the view's columns are %s, want VARCHAR", got)
	}
}

// A new file's migrations, left in the write-ahead log by a close that did
// not checkpoint (a crash), replay when it opens again: a named ENUM type
// created in _ploti in the same log as the schema did not (DuckDB 1.5.6:
// "Schema with name _ploti does not exist"; docs/decisions.md 104).
func TestOpen_newFileMigrationsReplayFromTheLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.duckdb")
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db = closeLeavingTheLog(t, db, path, storage.LogOneSetSQL("ds_a", 2, "'a1', 'added'")...)
	defer db.Close()
	if got := tableState(t, db, "SELECT string_agg(concat_ws(':', dataset_id, version, record_id, change), ' ') FROM _ploti.changes"); got != "ds_a:2:a1:added" {
		t.Fatalf("log = %s", got)
	}
}

// A version logged in two statements (a version's changes files merged
// one by one) is one set; the next version's set takes the next number,
// the first ever number 1; the view reads each row once.
func TestLogOneSetSQL_aVersionIsOneSet(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	var stmts []string
	for _, l := range []struct {
		ds   string
		v    int
		rows string
	}{{"ds_a", 3, "'a1', 'added'"}, {"ds_a", 3, "'a2', 'removed'"}, {"ds_b", 3, "'b1', 'changed'"}, {"ds_a", 4, "'a1', 'changed'"}} {
		stmts = append(stmts, storage.LogOneSetSQL(l.ds, l.v, l.rows)...)
	}
	for _, q := range stmts {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if got := tableState(t, db, "SELECT string_agg(concat_ws(':', set_id, dataset_id, version), ' ' ORDER BY set_id) FROM _ploti.change_sets"); got != "1:ds_a:3 2:ds_b:3 3:ds_a:4" {
		t.Fatalf("sets = %s", got)
	}
	want := "ds_a:3:a1:added ds_a:3:a2:removed ds_a:4:a1:changed ds_b:3:b1:changed"
	if got := tableState(t, db, "SELECT string_agg(concat_ws(':', dataset_id, version, record_id, change), ' ' ORDER BY dataset_id, version, record_id) FROM _ploti.changes"); got != want {
		t.Fatalf("log = %s, want %s", got, want)
	}
}

// A watch's versions get a set each, once, whether one version comes
// (OneChangeSetSQL) or several (ChangeSetsSQL over their list), and
// their rows land under them.
func TestVersionSetsSQL_eachVersionOnce(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	for _, vs := range [][]int32{{5, 3, 5}, {3, 5}, {7, 7}, {8}, {7}} {
		if _, err := db.SQL().ExecContext(ctx, storage.VersionSetsSQL("ds_a", vs)); err != nil {
			t.Fatalf("%v: %v", vs, err)
		}
	}
	if got := tableState(t, db, "SELECT string_agg(concat_ws(':', set_id, dataset_id, version), ' ' ORDER BY set_id) FROM _ploti.change_sets"); got != "1:ds_a:3 2:ds_a:5 3:ds_a:7 4:ds_a:8" {
		t.Fatalf("sets = %s", got)
	}
	rel := `(SELECT 'ds_a' AS dataset_id, unnest([3, 8]) AS version, unnest(['r3', 'r8']) AS id, unnest(['added', 'removed']) AS change) l`
	if _, err := db.SQL().ExecContext(ctx, storage.LogRowsSQL(rel, "l.change")); err != nil {
		t.Fatal(err)
	}
	if got := tableState(t, db, "SELECT string_agg(concat_ws(':', version, record_id, change), ' ' ORDER BY version) FROM _ploti.changes"); got != "3:r3:added 8:r8:removed" {
		t.Fatalf("log = %s", got)
	}
}

func TestDB_runRows_writtenByTheSyncsFirstTransaction(t *testing.T) {
	storagetest.RunRows(t, mustOpen(t))
}

// TableExists and a history's state look one name up (hasRelation): a
// table of the file is found, a view, a temporary table or one of
// DuckDB's system views is not, a name with a double quote is read as
// written, and a name not found leaves the transaction usable, its writes
// before and after committed.
func TestTx_TableExists_looksOneNameUpAndKeepsTheTransaction(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	if _, err := db.SQL().ExecContext(ctx, `CREATE TABLE permits (x INTEGER); CREATE VIEW permits_view AS SELECT 1 AS x;
		CREATE TABLE weird (x INTEGER); CREATE TABLE "q""t" (x INTEGER); CREATE TEMP TABLE scratch (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO permits VALUES (1)"); err != nil {
			return err
		}
		for name, want := range map[string]bool{"permits": true, "permits_view": false, "gone": false, `we"ird`: false, `q"t`: true,
			"scratch": false, "sqlite_master": false, "duckdb_tables": false} {
			got, err := tx.Tables().TableExists(ctx, name)
			if err != nil || got != want {
				return fmt.Errorf("TableExists(%q) = %v, %v; want %v", name, got, err, want)
			}
		}
		st, err := eng(tx).HistoryOf(ctx, "ds", "permits")
		if err != nil || st.Started {
			return fmt.Errorf("HistoryOf a dataset without history = %+v, %v; want not started", st, err)
		}
		_, err = tx.Exec(ctx, "INSERT INTO permits VALUES (2)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.SQL().QueryRow("SELECT count(*) FROM permits").Scan(&n); err != nil || n != 2 {
		t.Fatalf("permits holds %d rows (%v) after the transaction, want 2", n, err)
	}
}
