package backends

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/internal/storagetest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

// canonical is the SQL, on each engine, of a column's value as text that
// both engines write alike (JSON where they write it differently).
func canonical(c ploti.Column) (duck, pg string, asJSON bool) {
	n := storage.Ident(c.Name)
	if t := c.Type; t.Type == ploti.TypeList && t.Items != nil && t.Items.Type != ploti.TypeList {
		d, p := canonicalItem(*t.Items, "x")
		if t.Items.Type == ploti.TypeNumber {
			d, p = "x", "x"
		}
		return "CAST(to_json(list_transform(" + n + ", x -> " + d + ")) AS VARCHAR)",
			"coalesce((SELECT to_json(array_agg(" + p + " ORDER BY o)) FROM unnest(" + n + ") WITH ORDINALITY u(x, o))::text, CASE WHEN " + n + " IS NOT NULL THEN '[]' END)", true
	}
	switch c.Type.Type {
	case ploti.TypeJSON, ploti.TypeList, ploti.TypeNumber:
		return "CAST(" + n + " AS VARCHAR)", n + "::text", true
	}
	d, p := canonicalItem(c.Type, n)
	return d, p, false
}

// canonicalItem is canonical for a value that is not a list.
func canonicalItem(t ploti.Type, n string) (duck, pg string) {
	switch t.Type {
	case ploti.TypeTimestamp:
		return "CAST(epoch_us(" + n + ") AS VARCHAR)", "((extract(epoch FROM " + n + ") * 1000000)::bigint)::text"
	case ploti.TypeNumber: // a JSON number (sameJSON reads it as a double)
		return "CAST(to_json(" + n + ") AS VARCHAR)", "to_json(" + n + ")::text"
	case ploti.TypeGeometry:
		return "lower(hex(ST_AsWKB(" + n + ")))", "encode(ST_AsBinary(" + n + "), 'hex')"
	}
	return "CAST(" + n + " AS VARCHAR)", n + "::text"
}

// sameRows compares the DuckDB engine's table with PostgreSQL's, value by
// value, through canonical.
func sameRows(t *testing.T, duck *storage.DB, pg *pgx.Conn, table string, cols []ploti.Column) {
	t.Helper()
	ctx := context.Background()
	dsel, psel := []string{storage.Ident(storage.ColRecordID), "coalesce(" + storage.Ident(storage.ColPlaceID) + ", '<null>')"}, []string{storage.Ident(storage.ColRecordID), "coalesce(" + storage.Ident(storage.ColPlaceID) + ", '<null>')"}
	var js []bool
	for _, c := range cols {
		d, p, j := canonical(c)
		dsel, psel = append(dsel, "coalesce("+d+", '<null>')"), append(psel, "coalesce("+p+", '<null>')")
		js = append(js, j)
	}
	want := map[string][]string{}
	rows, err := duck.SQL().QueryContext(ctx, fmt.Sprintf("SELECT %s FROM main.%s", strings.Join(dsel, ", "), storage.Ident(table)))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		vals := make([]string, len(dsel))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		want[vals[0]] = vals[1:]
	}
	rows.Close()
	prows, err := pg.Query(ctx, fmt.Sprintf("SELECT %s FROM public.%s", strings.Join(psel, ", "), storage.Ident(table)))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for prows.Next() {
		vals := make([]string, len(psel))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := prows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		got++
		w, ok := want[vals[0]]
		if !ok {
			t.Errorf("row %s only in PostgreSQL", vals[0])
			continue
		}
		for i, v := range vals[1:] {
			name := storage.ColPlaceID
			if i > 0 {
				name = cols[i-1].Name
			}
			if i > 0 && js[i-1] && v != "<null>" {
				if !sameJSON(v, w[i]) {
					t.Errorf("row %s column %s: PostgreSQL %s, DuckDB %s", vals[0], name, v, w[i])
				}
				continue
			}
			if v != w[i] {
				t.Errorf("row %s column %s: PostgreSQL %s, DuckDB %s", vals[0], name, v, w[i])
			}
		}
	}
	if err := prows.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Errorf("PostgreSQL has %d rows, DuckDB %d", got, len(want))
	}
}

func sameJSON(a, b string) bool {
	dec := func(s string) any {
		d := json.NewDecoder(bytes.NewReader([]byte(s)))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return s
		}
		return numbers(v)
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

// numbers writes the JSON numbers in v as Go writes their double, but
// those that are integers, so that 1.0 and 1 (DuckDB's and PostgreSQL's
// text of one double) compare equal and 2^63-1 stays exact.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return string(x)
		}
		f, err := x.Float64()
		if err != nil {
			return string(x)
		}
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case []any:
		for i := range x {
			x[i] = numbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbers(x[k])
		}
	}
	return v
}

// jsonCols is a column of each type a watched dataset's rows carry.
var jsonCols = storagetest.JSONCols

// The type mapping, checked against the DuckDB engine value by
// value: the same NDJSON rows (docs/wire.md section 9, "Row values in
// JSON": decimals and integers past 2^53 from strings, timestamps in UTC,
// GeoJSON of every kind) read by each engine give the same values.
func TestTx_LoadRows_sameValuesAsDuckDB(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	file := mustNDJSON(t,
		`{"_ploti_record_id":"r1","_ploti_place_id":"fl-orange","s":"hello","i":"9007199254740993","n":1.5,"d":"12345678901234567890.12","b":true,"dt":"2026-11-20","ts":"2026-11-20T12:00:00+02:00","l":["a","b"],"li":[1,"9007199254740995"],"j":{"x":[1,2]},"g":{"type":"Point","coordinates":[-81.37924,28.538336]}}`,
		`{"_ploti_record_id":"r2","i":-42,"d":"0.1","g":null,"l":[],"b":false,"n":-0.0001}`,
		`{"_ploti_record_id":"r3","d":"-7","g":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]],[[0.1,0.1],[0.2,0.1],[0.2,0.2],[0.1,0.1]]]}}`,
		`{"_ploti_record_id":"r4","g":{"type":"Point","coordinates":[1,2,3]},"l":["x",null]}`,
		`{"_ploti_record_id":"r5","g":{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]]}}`,
		`{"_ploti_record_id":"r6","g":{"type":"LineString","coordinates":[[0,0],[1e-7,1.25E+2]]},"d":"-0.01","ts":"1999-12-31T23:59:59.999999Z"}`,
		`{"_ploti_record_id":"r7","g":{"type":"MultiPoint","coordinates":[[1,2],[3,4]]},"dt":"1970-01-01","i":"-9223372036854775808"}`,
		`{"_ploti_record_id":"r8","g":{"type":"MultiLineString","coordinates":[[[1,2],[3,4]],[[5,6],[7,8]]]},"d":"99999999999999999999999999999999999.99"}`,
		`{"_ploti_record_id":"r9","g":{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]},{"type":"LineString","coordinates":[[0,0],[1,1]]}]}}`,
		`{"_ploti_record_id":"r10","g":{"type":"Polygon","coordinates":[]},"s":"ünïcødé ✓ 'quoted' \"x\""}`,
	)
	if err := duck.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadRows(ctx, "w", jsonCols, []string{file})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.Update(ctx, func(tx *postgres.Tx) (err error) {
		n, err = tx.LoadRows(ctx, "w", jsonCols, []string{file})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 10 {
		t.Fatalf("loaded %d rows, want 10", n)
	}
	r := mustReader(t, u)
	sameRows(t, duck, r, "w", jsonCols)
	var types string
	if err := r.QueryRow(ctx, `SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute
		WHERE attrelid = 'public.w'::regclass AND attnum > 0`).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if want := "text,text,text,bigint,double precision,numeric(38,2),boolean,date,timestamp with time zone,text[],bigint[],jsonb,geometry"; types != want {
		t.Fatalf("column types = %s, want %s", types, want)
	}
}

// Every type from Parquet (a snapshot), including those NDJSON rows do not
// reach: a decimal without precision, lists of decimals, dates,
// timestamps, booleans, geometry and lists of lists.
func TestTx_LoadSnapshot_sameValuesAsDuckDB(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	item := func(typ string) *ploti.Type { return &ploti.Type{Type: typ} }
	cols := []ploti.Column{
		col("d0", ploti.TypeDecimal),
		{Name: "d4", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 18, Scale: 4}}},
		{Name: "ld", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 10, Scale: 2}}}},
		{Name: "ldt", Type: ploti.Type{Type: ploti.TypeList, Items: item(ploti.TypeDate)}},
		{Name: "lts", Type: ploti.Type{Type: ploti.TypeList, Items: item(ploti.TypeTimestamp)}},
		{Name: "lb", Type: ploti.Type{Type: ploti.TypeList, Items: item(ploti.TypeBoolean)}},
		{Name: "ln", Type: ploti.Type{Type: ploti.TypeList, Items: item(ploti.TypeNumber)}},
		{Name: "ll", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeList, Items: item(ploti.TypeInteger)}}},
		{Name: "poly", Type: ploti.Type{Type: ploti.TypeGeometry, Geometry: &ploti.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Polygon", "MultiPolygon"}}}},
		col("j", ploti.TypeJSON),
	}
	snap := mustParquet(t, duck, `SELECT 'r' || i AS _ploti_record_id, NULL AS _ploti_place_id,
		CAST(i AS DECIMAL(38,9)) / 7 AS d0, CAST(-i * 1.2345 AS DECIMAL(18,4)) AS d4,
		[1.5, NULL, -2.25]::DECIMAL(10,2)[] AS ld, [DATE '2000-01-01' + i::INT, DATE '1900-02-28'] AS ldt,
		[TIMESTAMPTZ '2026-01-01 00:00:00.123456+00' + to_days(i::INT)] AS lts, [true, false, NULL] AS lb, [i / 3, 1e300] AS ln,
		[[1, 2], [3], []] AS ll,
		ST_AsWKB(CASE WHEN i % 2 = 0 THEN 'POLYGON ((0 0, 1 0, 1 1, 0 0))' ELSE 'MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)))' END::GEOMETRY) AS poly,
		'{"a": [1, {"b": null}], "c": "ü"}' AS j
		FROM range(4) t(i)`)
	if err := duck.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "s", cols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *postgres.Tx) error { _, err := tx.LoadSnapshot(ctx, "s", cols, []string{snap}); return err }); err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	sameRows(t, duck, r, "s", cols)
	var types string
	if err := r.QueryRow(ctx, `SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute
		WHERE attrelid = 'public.s'::regclass AND attnum > 2`).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if want := "numeric(38,9),numeric(18,4),numeric(10,2)[],date[],timestamp with time zone[],boolean[],double precision[],jsonb,geometry,jsonb"; types != want {
		t.Fatalf("column types = %s, want %s", types, want)
	}
	// Every geometry is in SRID 4326, and each geometry column has a
	// GiST index and its comment.
	if n := count(t, r, "SELECT count(*) FROM public.s WHERE ST_SRID(poly) <> 4326"); n != 0 {
		t.Fatalf("%d rows with another SRID", n)
	}
	if n := count(t, r, "SELECT count(*) FROM pg_indexes WHERE tablename = 's' AND indexdef LIKE '%USING gist (poly)'"); n != 1 {
		t.Fatalf("%d GiST indexes on poly, want 1", n)
	}
	var comment string
	if err := r.QueryRow(ctx, "SELECT col_description('public.s'::regclass, 11)").Scan(&comment); err != nil || comment != "crs=EPSG:4326; types=Polygon,MultiPolygon; encoding=postgis" {
		t.Fatalf("comment = %q, %v", comment, err)
	}
}
