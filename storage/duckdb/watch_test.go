package duckdb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/internal/storagetest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// mustNDJSON writes rows, one a line, to a file and returns its path.
func mustNDJSON(tb testing.TB, rows ...string) string { return storagetest.NDJSON(tb, rows...) }

func col(name, typ string) ploti.Column { return storagetest.Col(name, typ) }

// jsonCols is a column of each type a watched dataset's rows carry.
var jsonCols = storagetest.JSONCols

// docs/wire.md section 9, "Row values in JSON": each value becomes the
// schema's DuckDB type exactly (decimal from its string, an integer
// beyond 2^53 from a string, a timestamp in UTC, GeoJSON as GEOMETRY).
func TestTx_LoadRows_valuesBecomeTheirTypesExactly(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	file := mustNDJSON(t,
		`{"_ploti_record_id":"r1","_ploti_place_id":"fl-orange","s":"hello","i":"9007199254740993","n":1.5,"d":"12345678901234567890.12","b":true,"dt":"2026-11-20","ts":"2026-11-20T12:00:00+02:00","l":["a","b"],"li":[1,"9007199254740995"],"j":{"x":[1,2]},"g":{"type":"Point","coordinates":[-81.37924,28.538336]}}`,
		`{"_ploti_record_id":"r2","i":-42,"d":"0.1","g":null}`,
		`{"_ploti_record_id":"r3","d":"-7","g":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]],[[0.1,0.1],[0.2,0.1],[0.2,0.2],[0.1,0.1]]]}}`,
		`{"_ploti_record_id":"r4","g":{"type":"Point","coordinates":[1,2,3]}}`,
		`{"_ploti_record_id":"r5","g":{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]]}}`,
		`{"_ploti_record_id":"r6","g":{"type":"LineString","coordinates":[[0,0],[1e-7,1.25E+2]]}}`,
		`{"_ploti_record_id":"r7","g":{"type":"MultiPoint","coordinates":[[1,2],[3,4]]}}`,
		`{"_ploti_record_id":"r8","g":{"type":"MultiLineString","coordinates":[[[1,2],[3,4]],[[5,6],[7,8]]]}}`,
		`{"_ploti_record_id":"r9","g":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]},{"type":"LineString","coordinates":[[0,0],[1,1]]}]}}`,
		`{"_ploti_record_id":"r10","g":{"type":"Polygon","coordinates":[]}}`,
		`{"_ploti_record_id":"r11","g":{"type": "LineString", "coordinates": [ [0, 0], [2, 2.5] ], "bbox": [0, 0, 2, 2.5]}}`,
		`{"_ploti_record_id":"r12","g":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2],"bbox":[1,2,1,2]}]}}`,
	)
	var n int64
	err := db.Update(ctx, func(tx *storage.Tx) (err error) {
		n, err = tx.Tables().LoadRows(ctx, "w", jsonCols, []string{file})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 12 {
		t.Fatalf("loaded %d rows, want 12", n)
	}
	var ok bool
	if err := db.SQL().QueryRowContext(ctx, `SELECT s = 'hello' AND i = 9007199254740993 AND n = 1.5
		AND d = 12345678901234567890.12::DECIMAL(38,2) AND b AND dt = DATE '2026-11-20'
		AND ts = TIMESTAMPTZ '2026-11-20 10:00:00+00' AND l = ['a', 'b'] AND li = [1, 9007199254740995]
		AND json_extract(j, '$.x[1]') = 2 AND `+geomText("g")+` = 'POINT (-81.37924 28.538336)' AND _ploti_place_id = 'fl-orange'
		FROM main.w WHERE _ploti_record_id = 'r1'`).Scan(&ok); err != nil || !ok {
		t.Fatalf("r1 values: ok %v, err %v", ok, err)
	}
	var types string
	if err := db.SQL().QueryRowContext(ctx, `SELECT string_agg(data_type, ',' ORDER BY column_index) FROM duckdb_columns()
		WHERE table_name = 'w'`).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if want := "VARCHAR,VARCHAR,VARCHAR,BIGINT,DOUBLE,DECIMAL(38,2),BOOLEAN,DATE,TIMESTAMP WITH TIME ZONE,VARCHAR[],BIGINT[],JSON," + geomType(); types != want {
		t.Fatalf("column types = %s, want %s", types, want)
	}
	for id, want := range map[string]string{
		"r2":  "<null> -42 0.10",
		"r3":  "POLYGON ((0 0, 1 0, 1 1, 0 0), (0.1 0.1, 0.2 0.1, 0.2 0.2, 0.1 0.1)) <null> -7.00",
		"r4":  "POINT Z (1 2 3) <null> <null>",
		"r5":  "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5))) <null> <null>",
		"r6":  "LINESTRING (0 0, 1e-07 125) <null> <null>",
		"r7":  "MULTIPOINT (1 2, 3 4) <null> <null>",
		"r8":  "MULTILINESTRING ((1 2, 3 4), (5 6, 7 8)) <null> <null>",
		"r9":  "GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (0 0, 1 1)) <null> <null>",
		"r10": "POLYGON EMPTY <null> <null>",
		"r11": "LINESTRING (0 0, 2 2.5) <null> <null>",
		"r12": "GEOMETRYCOLLECTION (POINT (1 2)) <null> <null>",
	} {
		var got string
		if err := db.SQL().QueryRowContext(ctx, `SELECT concat_ws(' ', coalesce(`+geomText("g")+`, '<null>'), coalesce(i::VARCHAR, '<null>'), coalesce(d::VARCHAR, '<null>'))
			FROM main.w WHERE _ploti_record_id = ?`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
}

// "Bad input": a value that cannot be cast, rows that do not fit
// the schema, repeated or null ids: refused, naming the problem, and the
// table held before stays as it was.
func TestTx_LoadRows_refusesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	good := mustNDJSON(t, `{"_ploti_record_id":"r1","i":1,"d":"1.00"}`)
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadRows(ctx, "w", jsonCols, []string{good})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, row, want string }{
		{"an integer with a fraction", `{"_ploti_record_id":"r1","i":1.5}`, "column i: not an integer: 1.5"},
		{"an integer that is text", `{"_ploti_record_id":"r1","i":"many"}`, "column i: not an integer: many"},
		{"an integer past 64 bits", `{"_ploti_record_id":"r1","i":"99999999999999999999"}`, "INT64"},
		{"a decimal past its scale", `{"_ploti_record_id":"r1","d":"1.234"}`, "column d: not a DECIMAL(38,2) exactly: 1.234"},
		{"a decimal that is text", `{"_ploti_record_id":"r1","d":"1,5"}`, "not a DECIMAL(38,2) exactly"},
		{"a date out of range", `{"_ploti_record_id":"r1","dt":"2026-13-01"}`, "date field value out of range"},
		{"a list that is text", `{"_ploti_record_id":"r1","l":"a"}`, "Expected ARRAY"},
		{"an integer list item with a fraction", `{"_ploti_record_id":"r1","li":[1,2.5]}`, "column li: not an integer: 2.5"},
		{"a geometry of no GeoJSON type", `{"_ploti_record_id":"r1","g":{"type":"Circle","coordinates":[1,2]}}`, "column g: not a GeoJSON geometry: type Circle"},
		{"a geometry without coordinates", `{"_ploti_record_id":"r1","g":{"type":"Point"}}`, "type Point without coordinates"},
		{"a polygon with a point's coordinates", `{"_ploti_record_id":"r1","g":{"type":"Polygon","coordinates":[1,2]}}`, "parse geometry"},
		{"a nested collection", `{"_ploti_record_id":"r1","g":{"type":"GeometryCollection","geometries":[{"type":"GeometryCollection","geometries":[]}]}}`, "type GeometryCollection"},
		{"a geometry that is text", `{"_ploti_record_id":"r1","g":"POINT (1 2)"}`, "row does not fit"},
		{"a repeated id", `{"_ploti_record_id":"r1"}` + "\n" + `{"_ploti_record_id":"r1"}`, "1 repeated _ploti_record_id"},
		{"a null id", `{"_ploti_place_id":"p"}`, "1 null and 0 repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := mustNDJSON(t, tc.row)
			err := db.Update(ctx, func(tx *storage.Tx) error {
				_, err := tx.Tables().LoadRows(ctx, "w", jsonCols, []string{file})
				return err
			})
			var de *storage.DataError
			if !errors.As(err, &de) || !errors.Is(err, storage.ErrBadData) {
				t.Fatalf("err = %v, want a DataError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rows.ndjson") {
				t.Fatalf("err = %v, want it to name the file and say %q", err, tc.want)
			}
			var n int
			var d string
			if err := db.SQL().QueryRowContext(ctx, "SELECT count(*), any_value(d)::VARCHAR FROM main.w").Scan(&n, &d); err != nil || n != 1 || d != "1.00" {
				t.Fatalf("held table after the refusal: %d rows, d %s, err %v", n, d, err)
			}
		})
	}
}

func TestTx_LoadRows_noFilesMakesAnEmptyTable(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	err := db.Update(ctx, func(tx *storage.Tx) error { _, err := tx.Tables().LoadRows(ctx, "w", jsonCols, nil); return err })
	if err != nil {
		t.Fatal(err)
	}
	var n, cols int
	if err := db.SQL().QueryRowContext(ctx, "SELECT (SELECT count(*) FROM main.w), (SELECT count(*) FROM duckdb_columns() WHERE table_name = 'w')").Scan(&n, &cols); err != nil {
		t.Fatal(err)
	}
	if n != 0 || cols != len(jsonCols)+2 {
		t.Fatalf("%d rows, %d columns", n, cols)
	}
}

// mergeFixture loads r1..r5 into main.w (columns s, i) and a user table
// that references its ids.
func mergeFixture(t *testing.T) *storage.DB {
	t.Helper()
	ctx := context.Background()
	db := mustOpen(t)
	var rows []string
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		rows = append(rows, `{"_ploti_record_id":"`+id+`","s":"old `+id+`","i":1}`)
	}
	file := mustNDJSON(t, rows...)
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Tables().LoadRows(ctx, "w", jsonCols[:2], []string{file}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE TABLE main.notes (record VARCHAR, note VARCHAR); INSERT INTO main.notes VALUES ('r4', 'call back')")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func tableState(t *testing.T, db *storage.DB, q string) string {
	t.Helper()
	var s string
	if err := db.SQL().QueryRow(q).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTx_MergeWatch(t *testing.T) {
	ctx := context.Background()
	db := mergeFixture(t)
	rows := mustNDJSON(t,
		`{"_ploti_record_id":"r2","s":"new r2","i":2}`,
		`{"_ploti_record_id":"r9","s":"new r9","i":9}`,
		`{"_ploti_record_id":"r4b","s":"old r4","i":1}`,
		`{"_ploti_record_id":"rX","s":"not asked for","i":0}`)
	m := storage.WatchMerge{DatasetID: "ds_w", Table: "w", Columns: jsonCols[:2], RowsBefore: 5,
		Held:    []storage.Touch{{ID: "r2", Version: 13, Change: "changed"}, {ID: "r3", Version: 13, Change: "removed"}, {ID: "r4", Version: 13, Change: "renamed"}},
		New:     []storage.Touch{{ID: "r9", Version: 13, Change: "added"}, {ID: "r4b", Version: 13, Change: "renamed"}},
		Rows:    []storage.RowSource{{Path: rows, IDs: []string{"r2", "r9", "r4b"}}},
		Log:     []storage.Touch{{ID: "r9", Version: 13, Change: "added"}, {ID: "r2", Version: 13, Change: "changed"}, {ID: "r3", Version: 13, Change: "removed"}, {ID: "r4b", Version: 13, Change: "renamed"}},
		Renames: []storage.Rename{{Version: 13, From: "r4", To: "r4b"}}, IDRefs: []storage.IDRef{{Table: "notes", Column: "record", DatasetID: "ds_w"}}}
	var st storage.MergeStats
	err := db.Update(ctx, func(tx *storage.Tx) (err error) {
		st, err = tx.Tables().MergeWatch(ctx, m)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 5 || st.Removed != 3 || st.Added != 3 {
		t.Fatalf("stats = %+v", st)
	}
	if got, want := tableState(t, db, "SELECT string_agg(_ploti_record_id || '=' || s || '/' || i, ' ' ORDER BY _ploti_record_id) FROM main.w"),
		"r1=old r1/1 r2=new r2/2 r4b=old r4/1 r5=old r5/1 r9=new r9/9"; got != want {
		t.Fatalf("table = %s, want %s", got, want)
	}
	if got, want := tableState(t, db, "SELECT string_agg(version || ':' || record_id || ':' || change, ' ' ORDER BY record_id) FROM _ploti.changes"),
		"13:r2:changed 13:r3:removed 13:r4b:renamed 13:r9:added"; got != want {
		t.Fatalf("changes log = %s, want %s", got, want)
	}
	if got, want := tableState(t, db, "SELECT string_agg(version || ':' || from_id || '>' || to_id, ' ') FROM _ploti.id_map"), "13:r4>r4b"; got != want {
		t.Fatalf("id map = %s, want %s", got, want)
	}
	if got, want := tableState(t, db, "SELECT string_agg(record, ' ') FROM main.notes"), "r4b"; got != want {
		t.Fatalf("--id-ref column = %s, want %s", got, want)
	}
}

// "Bad input": an id the versions added that is held, a renamed
// (or changed, or removed) one that is not, a row that does not come, one
// that does not fit: each refused with what and where, nothing changed.
func TestTx_MergeWatch_refusesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	rows := `{"_ploti_record_id":"r9","s":"x","i":9}`
	for _, tc := range []struct {
		name string
		m    storage.WatchMerge
		want string
	}{
		{"added id already held", storage.WatchMerge{New: []storage.Touch{{ID: "r9", Version: 13, Change: "added"}, {ID: "r2", Version: 14, Change: "added"}}}, "id r2 that version 14 added is already held"},
		{"renamed from an id not held", storage.WatchMerge{Held: []storage.Touch{{ID: "r1", Version: 13, Change: "changed"}, {ID: "r7", Version: 13, Change: "renamed"}}}, "id r7 that version 13 renamed is not held"},
		{"removed id not held", storage.WatchMerge{Held: []storage.Touch{{ID: "zz", Version: 12, Change: "removed"}}}, "id zz that version 12 removed is not held"},
		{"a row missing from its file", storage.WatchMerge{New: []storage.Touch{{ID: "r9", Version: 13, Change: "added"}, {ID: "r8", Version: 13, Change: "added"}},
			Rows: []storage.RowSource{{IDs: []string{"r9", "r8"}}}}, "has 1 rows for the 2 ids"},
		{"a row that does not fit", storage.WatchMerge{New: []storage.Touch{{ID: "r8", Version: 13, Change: "added"}},
			Rows: []storage.RowSource{{IDs: []string{"r8"}}}}, "column i: not an integer: 1.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mergeFixture(t)
			before := tableState(t, db, "SELECT string_agg(_ploti_record_id || s, ' ' ORDER BY _ploti_record_id) FROM main.w")
			tc.m.DatasetID, tc.m.Table, tc.m.Columns, tc.m.RowsBefore = "ds_w", "w", jsonCols[:2], 5
			for i := range tc.m.Rows {
				if strings.Contains(tc.name, "does not fit") {
					tc.m.Rows[i].Path = mustNDJSON(t, `{"_ploti_record_id":"r8","i":1.5}`)
				} else {
					tc.m.Rows[i].Path = mustNDJSON(t, rows)
				}
			}
			err := db.Update(ctx, func(tx *storage.Tx) error { _, err := tx.Tables().MergeWatch(ctx, tc.m); return err })
			if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a DataError saying %q", err, tc.want)
			}
			if after := tableState(t, db, "SELECT string_agg(_ploti_record_id || s, ' ' ORDER BY _ploti_record_id) FROM main.w"); after != before {
				t.Fatalf("table changed: %s, was %s", after, before)
			}
		})
	}
}

func TestTx_AddInbox(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	items := []storage.InboxItem{
		{EventID: "evt_1", Type: "data_request.ready", RequestID: "req_1", URL: "https://app.ploti.ai/r/1", Data: []byte(`{"requestId":"req_1"}`)},
		{EventID: "evt_2", Type: "research_request.question", RequestID: "req_2", Data: []byte(`{"questions":[{"id":"q1","text":"Which county?"}]}`)},
		{EventID: "evt_1", Type: "data_request.ready", RequestID: "req_1"}, // a delivery again
	}
	var added int
	err := db.Update(ctx, func(tx *storage.Tx) (err error) { added, err = tx.AddInbox(ctx, items); return err })
	if err != nil || added != 2 {
		t.Fatalf("added %d, err %v; want 2", added, err)
	}
	err = db.Update(ctx, func(tx *storage.Tx) (err error) { added, err = tx.AddInbox(ctx, items[:1]); return err })
	if err != nil || added != 0 {
		t.Fatalf("again: added %d, err %v; want 0", added, err)
	}
	all, err := db.Inbox(ctx, storage.InboxFilter{})
	if err != nil || len(all) != 2 || all[0].URL != "https://app.ploti.ai/r/1" || string(all[1].Data) == "" {
		t.Fatalf("inbox = %+v, err %v", all, err)
	}
	for _, tc := range []struct {
		types []string
		want  int
	}{{[]string{"data_request.ready"}, 1}, {[]string{"research_request."}, 1}, {[]string{"data_request.failed"}, 0}, {[]string{"data_request.", "research_request."}, 2}} {
		got, err := db.Inbox(ctx, storage.InboxFilter{Types: tc.types})
		if err != nil || len(got) != tc.want {
			t.Fatalf("types %v: %d events, err %v; want %d", tc.types, len(got), err, tc.want)
		}
	}
}

// Migration 3 rebuilds the registry with its source column and the
// changes log with 'renamed': a file from before keeps its rows, every
// dataset in it comes from the feed.
func TestOpen_migration3KeepsRegistryAndLog(t *testing.T) {
	ctx := context.Background()
	path := fileAtMigration(t, 2, `INSERT INTO _ploti.datasets (dataset_id, table_name, version, key_columns, status, updated_at, columns)
			VALUES ('ds_a', 'ds_a', 7, ['k'], 'current', now(), '[{"name":"k","type":"string"}]')`,
		"INSERT INTO _ploti.changes VALUES ('ds_a', 7, 'r1', 'added')")
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := db.Dataset(ctx, "ds_a")
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != storage.SourceFeed || d.Version != 7 || d.KeyColumns[0] != "k" || d.Columns[0].Name != "k" {
		t.Fatalf("registry row after migration 3: %+v", d)
	}
	for _, q := range storage.LogOneSetSQL("ds_a", 8, "'r1b', 'renamed'") {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatalf("a renamed change: %v", err)
		}
	}
	if _, err := db.SQL().ExecContext(ctx, "UPDATE _ploti.datasets SET source = 'elsewhere'"); err == nil {
		t.Fatal("a source other than feed or watch was accepted")
	}
	if got, want := tableState(t, db, "SELECT string_agg(version || record_id || change, ' ' ORDER BY version) FROM _ploti.changes"), "7r1added 8r1brenamed"; got != want {
		t.Fatalf("changes log = %s, want %s", got, want)
	}
}
