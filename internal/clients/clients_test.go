package clients

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// clients are the package.json aliases of the clients, oldest first.
var clients = []string{"node-api-1.1", "node-api-1.4", "node-api-1.5"}

// view is what read.mjs prints: what one client sees of a file.
type view struct {
	Version          string                  `json:"version"`
	ExtensionsLoaded []string                `json:"extensionsLoaded"`
	Columns          []column                `json:"columns"`
	Counts           map[string]int64        `json:"counts"`
	Datasets         []dataset               `json:"datasets"`
	Geometry         map[string][]geometryAt `json:"geometry"`
	// History is what the history's view and macros answer:
	// row counts by the query read.mjs names them with.
	History map[string]int64 `json:"history"`
}

type column struct {
	Schema  string  `json:"schema"`
	Table   string  `json:"table"`
	Column  string  `json:"column"`
	Type    string  `json:"type"`
	Comment *string `json:"comment"`
}

// dataset is a _ploti.datasets row; a watched dataset has no schema
// version, a pending one no version.
type dataset struct {
	DatasetID     string  `json:"dataset_id"`
	TableName     string  `json:"table_name"`
	Version       *int    `json:"version"`
	SchemaVersion *string `json:"schema_version"`
	Status        string  `json:"status"`
	RowCount      *int64  `json:"row_count"`
}

type geometryAt struct {
	ID  string  `json:"id"`
	Hex *string `json:"hex"`
	WKT *string `json:"wkt"` // decoded by read.mjs when the bytes are WKB
}

// read runs read.mjs with one client, installed in clientsDir, on a file.
func read(t *testing.T, node, clientsDir, client, path string) view {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "read.mjs", clientsDir, client, path)
	cmd.Dir = "testdata"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s reading %s: %v\n%s", client, filepath.Base(path), err, stderr.String())
	}
	var v view
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v\n%s", client, err, out)
	}
	return v
}

// engineView is what the engine's own DuckDB (1.5.6) reads of a file, in
// read.mjs's shape, with each geometry as WKT through ST_AsText.
func engineView(t *testing.T, path string) view {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := db.SQL()
	v := view{Counts: map[string]int64{}, Geometry: map[string][]geometryAt{}}
	rows, err := q.QueryContext(ctx, `SELECT schema_name, table_name, column_name, data_type, comment FROM duckdb_columns() c
		WHERE database_name = current_database() AND schema_name IN ('main', '_ploti', '_ploti_history')
		AND EXISTS (SELECT 1 FROM duckdb_tables() t WHERE t.database_name = c.database_name AND t.schema_name = c.schema_name AND t.table_name = c.table_name)
		ORDER BY schema_name, table_name, column_index`)
	if err != nil {
		t.Fatal(err)
	}
	v.History = engineHistory(t, q)
	for key, q2 := range map[string]string{
		"_ploti.changes":         "SELECT count(*) FROM _ploti.changes",
		"_ploti.changes changed": "SELECT count(*) FROM _ploti.changes WHERE change = 'changed'",
	} {
		var n int64
		if err := q.QueryRowContext(ctx, q2).Scan(&n); err != nil {
			t.Fatal(err)
		}
		v.Counts[key] = n
	}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.Schema, &c.Table, &c.Column, &c.Type, &c.Comment); err != nil {
			t.Fatal(err)
		}
		v.Columns = append(v.Columns, c)
	}
	rows.Close()
	seen := map[string]bool{}
	for _, c := range v.Columns {
		name := c.Schema + "." + c.Table
		if !seen[name] {
			seen[name] = true
			var n int64
			if err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+storage.Ident(c.Schema)+"."+storage.Ident(c.Table)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			v.Counts[name] = n
		}
		hasComment := c.Comment != nil && strings.Contains(*c.Comment, "encoding=")
		if c.Schema == "main" && (c.Type == "BLOB" || c.Type == "GEOMETRY") && !hasComment {
			t.Errorf("%s.%s is %s without a comment naming its CRS and encoding", c.Table, c.Column, c.Type)
		}
		if c.Schema != "main" || !hasComment {
			continue
		}
		g := storage.Ident(c.Column)
		text, wkb := "ST_AsText("+g+")", "hex(ST_AsWKB("+g+"))"
		if c.Type == "BLOB" {
			text, wkb = "ST_AsText(ST_GeomFromWKB("+g+"))", "hex("+g+")"
		}
		grows, err := q.QueryContext(ctx, fmt.Sprintf("SELECT _ploti_record_id, lower(%s), %s FROM main.%s WHERE %s IS NOT NULL ORDER BY 1 LIMIT 3",
			wkb, text, storage.Ident(c.Table), g))
		if err != nil {
			t.Fatal(err)
		}
		for grows.Next() {
			var at geometryAt
			if err := grows.Scan(&at.ID, &at.Hex, &at.WKT); err != nil {
				t.Fatal(err)
			}
			v.Geometry[c.Table+"."+c.Column] = append(v.Geometry[c.Table+"."+c.Column], at)
		}
		grows.Close()
	}
	drows, err := q.QueryContext(ctx, "SELECT dataset_id, table_name, version, schema_version, status, row_count FROM _ploti.datasets ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for drows.Next() {
		var d dataset
		if err := drows.Scan(&d.DatasetID, &d.TableName, &d.Version, &d.SchemaVersion, &d.Status, &d.RowCount); err != nil {
			t.Fatal(err)
		}
		v.Datasets = append(v.Datasets, d)
	}
	drows.Close()
	return v
}

// engineHistory is what the history's view and macros answer the engine,
// as read.mjs asks them.
func engineHistory(t *testing.T, q *sql.DB) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	out := map[string]int64{}
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT d.table_name, v.version FROM _ploti.history_versions v JOIN _ploti.datasets d USING (dataset_id) ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	type at struct {
		table   string
		version int
	}
	var ats []at
	for rows.Next() {
		var a at
		if err := rows.Scan(&a.table, &a.version); err != nil {
			t.Fatal(err)
		}
		ats = append(ats, a)
	}
	rows.Close()
	for _, a := range ats {
		tbl := storage.Ident(a.table)
		for key, query := range map[string]string{
			fmt.Sprintf("%s_as_of(%d)", a.table, a.version): fmt.Sprintf("SELECT count(*) FROM history.%s(%d)", storage.Ident(a.table+"_as_of"), a.version),
			a.table:            fmt.Sprintf("SELECT count(*) FROM history.%s WHERE _ploti_valid_to IS NOT NULL", tbl),
			a.table + "_story": fmt.Sprintf("SELECT count(*) FROM history.%s((SELECT min(_ploti_record_id) FROM _ploti_history.%s))", storage.Ident(a.table+"_story"), tbl),
		} {
			var n int64
			if err := q.QueryRowContext(ctx, query).Scan(&n); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			out[key] = n
		}
	}
	return out
}

// compare checks a client's view against the engine's: the same tables,
// columns, types and comments, row counts and registry; geometry as the
// engine reads it when the file stores WKB, and, when it stores GEOMETRY,
// bytes that are not WKB before DuckDB 1.5.
func compare(t *testing.T, client string, got, want view) {
	t.Helper()
	for _, e := range got.ExtensionsLoaded {
		if e == "spatial" {
			t.Errorf("%s (DuckDB %s) loaded the spatial extension", client, got.Version)
		}
	}
	if !reflect.DeepEqual(got.Columns, want.Columns) {
		t.Errorf("%s (DuckDB %s) sees other columns:\n got %s\nwant %s", client, got.Version, js(got.Columns), js(want.Columns))
	}
	if !reflect.DeepEqual(got.Counts, want.Counts) {
		t.Errorf("%s (DuckDB %s) counts rows %v, want %v", client, got.Version, got.Counts, want.Counts)
	}
	if !reflect.DeepEqual(got.History, want.History) {
		t.Errorf("%s (DuckDB %s) reads the history's view and macros as %v, want %v", client, got.Version, got.History, want.History)
	}
	if !reflect.DeepEqual(got.Datasets, want.Datasets) {
		t.Errorf("%s (DuckDB %s) reads _ploti.datasets as %s, want %s", client, got.Version, js(got.Datasets), js(want.Datasets))
	}
	if len(want.Geometry) == 0 || len(got.Geometry) != len(want.Geometry) {
		t.Errorf("%s (DuckDB %s) finds geometry columns %v, want %v (none is no test)", client, got.Version, keys(got.Geometry), keys(want.Geometry))
	}
	for col, wantAt := range want.Geometry {
		gotAt := got.Geometry[col]
		native := !strings.Contains(commentOf(want.Columns, col), "encoding=wkb")
		switch {
		case native && !strings.HasPrefix(got.Version, "v1.5"):
			// spatial's own encoding: no coordinates without it.
			for _, g := range gotAt {
				if g.WKT != nil {
					t.Errorf("%s (DuckDB %s) decoded %s as WKB (%s); it should see spatial's internal encoding", client, got.Version, col, *g.WKT)
				}
			}
			if len(gotAt) != len(wantAt) {
				t.Errorf("%s (DuckDB %s) reads %d values of %s, want %d", client, got.Version, len(gotAt), col, len(wantAt))
			}
		case !reflect.DeepEqual(gotAt, wantAt):
			t.Errorf("%s (DuckDB %s) reads %s as %s, want %s", client, got.Version, col, js(gotAt), js(wantAt))
		}
	}
}

// checkVersion makes sure a client is the DuckDB its alias names.
func checkVersion(t *testing.T, client string, v view) {
	t.Helper()
	if want := "v" + strings.TrimPrefix(client, "node-api-") + "."; !strings.HasPrefix(v.Version, want) {
		t.Fatalf("%s is DuckDB %s, want %s*", client, v.Version, want)
	}
}

// readsWKB makes sure a client decoded every geometry value it read as
// standard WKB (the file stores WKB).
func readsWKB(t *testing.T, client string, v view) {
	t.Helper()
	for col, ats := range v.Geometry {
		for _, at := range ats {
			if at.WKT == nil {
				t.Errorf("%s (DuckDB %s) reads %s of %s as bytes that are not WKB: %s", client, v.Version, col, at.ID, js(at.Hex))
			}
		}
	}
}

func commentOf(cols []column, tableCol string) string {
	for _, c := range cols {
		if c.Schema == "main" && c.Table+"."+c.Column == tableCol && c.Comment != nil {
			return *c.Comment
		}
	}
	return ""
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The demo file, in both geometry encodings, as
// every client sees it. With WKB (the demo's default), DuckDB 1.1 and 1.4
// without the spatial extension read standard WKB from the tables in
// main, which decodes to the coordinates DuckDB 1.5 reads; with GEOMETRY
// they read bytes that are not WKB.
func TestClients_demoFile(t *testing.T) {
	node, clientsDir := setupNode(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "ploti-replica")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ploti-replica").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, geometry := range []string{"", storage.GeometryNative} {
		path := filepath.Join(dir, "demo-"+geometry+".duckdb")
		args := []string{"demo", "--db", path}
		if geometry != "" {
			args = append(args, "--geometry", geometry)
		}
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("ploti-replica %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		want := engineView(t, path)
		if len(want.History) == 0 {
			t.Fatalf("%s: the demo keeps history, but the file has none to read", path)
		}
		for _, c := range clients {
			got := read(t, node, clientsDir, c, path)
			checkVersion(t, c, got)
			t.Logf("%s: DuckDB %s, geometry %s: %s", filepath.Base(path), got.Version, "ds_fl_orange_permits.geometry", js(got.Geometry["ds_fl_orange_permits.geometry"][:1]))
			compare(t, c, got, want)
			if geometry == "" {
				readsWKB(t, c, got)
			}
		}
	}
}

// A file after a MINOR change that adds a geometry
// column, a MAJOR change reloaded and an id map, as every client sees it.
func TestClients_afterSchemaChangesAndIDMaps(t *testing.T) {
	node, clientsDir := setupNode(t)
	ctx := context.Background()
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	cols := []emulator.Column{
		{Name: "permit", Type: "string"}, {Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
		{Name: "issued", Type: "date"}, {Name: "updated_at", Type: "timestamp"}, {Name: "final", Type: "boolean"},
		{Name: "tags", Type: "list", Items: &emulator.Column{Type: "string"}},
		{Name: "geometry", Type: "geometry", Geometry: &emulator.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}},
	}
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_permits", Title: "Permits", PlaceID: "fl-orange", KeyColumns: []string{"permit"}, Columns: cols}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	permits := func(round int) []emulator.Row {
		var rows []emulator.Row
		for i := round * 3; i < 30+round*3; i++ {
			rows = append(rows, emulator.Row{"permit": fmt.Sprintf("P-%03d", i), "valuation": fmt.Sprintf("%d.%02d", 1000+i, i%100),
				"issued": emulator.DefaultStart.AddDate(0, 0, -i), "updated_at": emulator.DefaultStart, "final": (i+round)%3 == 0,
				"tags": []any{"t", fmt.Sprint(i % 4)}, "geometry": fmt.Sprintf("POINT (%d.5 %d.25)", -81-i%3, 28+i%2)})
		}
		return rows
	}
	path := filepath.Join(t.TempDir(), "feeds.duckdb")
	sync := func() {
		t.Helper()
		r, err := replica.Open(ctx, path, replica.Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub,
			Geometry: storage.GeometryWKB, OnMajor: apply.OnMajorReload,
			IDReferences: []replica.IDRef{{Table: "my_notes", Column: "permit_record", DatasetID: "ds_permits"}}})
		must(t, err)
		defer r.Close()
		if _, err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = r.DB().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS my_notes AS SELECT _ploti_record_id AS permit_record, 'note' AS note FROM ds_permits`)
		must(t, err)
	}
	_, err = em.Publish(ctx, "ds_permits", permits(0))
	must(t, err)
	sync()
	minor := append(append([]emulator.Column{}, cols...), emulator.Column{Name: "site", Type: "geometry",
		Geometry: &emulator.GeometryInfo{CRS: "EPSG:2236", Types: []string{"Polygon"}}})
	rows := permits(1)
	for i, row := range rows {
		if i%2 == 0 {
			row["site"] = fmt.Sprintf("POLYGON ((0 0, %d 0, %d 1, 0 0))", i+1, i+1)
		}
	}
	_, err = em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(minor, []string{"permit"}))
	must(t, err)
	sync()
	major := append(append([]emulator.Column{}, minor[:4]...), minor[5:]...) // final dropped: MAJOR
	for _, row := range rows {
		delete(row, "final")
	}
	_, err = em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(major, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	sync()
	rel, err := em.Publish(ctx, "ds_permits", rows, emulator.WithReplacedIDs(0.5))
	must(t, err)
	sync()

	want := engineView(t, path)
	if d := want.Datasets; len(d) != 1 || d[0].Version == nil || *d[0].Version != rel.Version || want.Counts["_ploti.id_map"] == 0 || want.Counts["_ploti.changes"] == 0 || commentOf(want.Columns, "ds_permits.site") == "" {
		t.Fatalf("the file is not at the id map's version %d with a site column, id map rows and a change log: %s, %v", rel.Version, js(d), want.Counts)
	}
	for _, c := range clients {
		got := read(t, node, clientsDir, c, path)
		checkVersion(t, c, got)
		t.Logf("DuckDB %s reads site as %s", got.Version, js(got.Geometry["ds_permits.site"][:1]))
		compare(t, c, got, want)
		readsWKB(t, c, got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
