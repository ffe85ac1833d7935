package duckdb

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// geoCols are testCols with the geometry's CRS and types, as Ploti's
// schemas give them.
var geoCols = func() []ploti.Column {
	cols := append([]ploti.Column(nil), testCols...)
	cols[len(cols)-1].Type.Geometry = &ploti.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point", "Polygon"}}
	return cols
}()

// columnInfo reads a column's type and comment as any DuckDB client can.
func columnInfo(tb testing.TB, db *storage.DB, table, col string) (typ, comment string) {
	tb.Helper()
	var c *string
	err := db.SQL().QueryRow(`SELECT data_type, comment FROM duckdb_columns()
		WHERE schema_name = 'main' AND table_name = ? AND column_name = ?`, table, col).Scan(&typ, &c)
	if err != nil {
		tb.Fatal(err)
	}
	if c != nil {
		comment = *c
	}
	return typ, comment
}

func TestGeometryComment(t *testing.T) {
	for _, tc := range []struct {
		t    ploti.Type
		enc  string
		want string
	}{
		{geoCols[len(geoCols)-1].Type, storage.GeometryWKB, "crs=EPSG:4326; types=Point,Polygon; encoding=wkb"},
		{ploti.Type{Type: ploti.TypeGeometry}, storage.GeometryNative, "encoding=geometry"},
		{ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeGeometry, Geometry: &ploti.GeometryInfo{CRS: "EPSG:2236"}}}, storage.GeometryWKB, "crs=EPSG:2236; encoding=wkb"},
	} {
		if got := storage.GeometryComment(tc.t, tc.enc); got != tc.want {
			t.Errorf("GeometryComment(%+v, %s) = %q, want %q", tc.t, tc.enc, got, tc.want)
		}
	}
}

// A geometry column's CRS is where any reader finds it,
// the column's comment, after every way a table is made or grows: a
// snapshot load, watched rows, an empty watched table, added columns.
func TestTx_geometryColumnsCarryTheirCRS(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	snap := mustParquet(t, db, snapQuery)
	rows := mustNDJSON(t, `{"_ploti_record_id":"r1","g":{"type":"Point","coordinates":[1,2]}}`)
	g := ploti.Column{Name: "g", Type: ploti.Type{Type: ploti.TypeGeometry, Geometry: &ploti.GeometryInfo{CRS: "EPSG:2236", Types: []string{"Point"}}}}
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Tables().LoadSnapshot(ctx, "permits", geoCols, []string{snap}); err != nil {
			return err
		}
		if _, err := tx.Tables().LoadRows(ctx, "watched", []ploti.Column{g}, []string{rows}); err != nil {
			return err
		}
		if _, err := tx.Tables().LoadRows(ctx, "empty", []ploti.Column{g}, nil); err != nil {
			return err
		}
		added := ploti.Column{Name: "site", Type: g.Type}
		return tx.Tables().AddColumns(ctx, "permits", []ploti.Column{added})
	})
	if err != nil {
		t.Fatal(err)
	}
	enc := db.Geometry()
	for _, c := range []struct{ table, col, want string }{
		{"permits", "geometry", "crs=EPSG:4326; types=Point,Polygon; encoding=" + enc},
		{"permits", "site", "crs=EPSG:2236; types=Point; encoding=" + enc},
		{"watched", "g", "crs=EPSG:2236; types=Point; encoding=" + enc},
		{"empty", "g", "crs=EPSG:2236; types=Point; encoding=" + enc},
		{"permits", "permit", ""},
	} {
		typ, comment := columnInfo(t, db, c.table, c.col)
		if comment != c.want {
			t.Errorf("%s.%s comment %q, want %q", c.table, c.col, comment, c.want)
		}
		if c.want != "" && typ != geomType() {
			t.Errorf("%s.%s is %s, want %s", c.table, c.col, typ, geomType())
		}
	}
}

// The file remembers how it stores geometry; a writing
// open with the other encoding converts every dataset table's geometry
// columns (and their comments) in one go, and a dataset's history with
// them when it keeps one, and the values survive the round trip.
func TestOpen_geometryConvertsTheTables(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.duckdb")
	open := func(geometry string, readOnly bool) *storage.DB {
		t.Helper()
		db, err := Open(ctx, path, storage.Options{Geometry: geometry, ReadOnly: readOnly})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open(storage.GeometryNative, false)
	snap := mustParquet(t, db, snapQuery)
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Tables().LoadSnapshot(ctx, "permits", geoCols, []string{snap}); err != nil {
			return err
		}
		if err := tx.PutDataset(ctx, &storage.Dataset{ID: "ds_permits", Table: "permits", Status: storage.StatusCurrent, Version: 1, Columns: geoCols}); err != nil {
			return err
		}
		// A second dataset keeps a history; the first does not.
		if _, err := tx.Tables().LoadSnapshot(ctx, "kept", geoCols, []string{snap}); err != nil {
			return err
		}
		if err := tx.PutDataset(ctx, &storage.Dataset{ID: "ds_kept", Table: "kept", Status: storage.StatusCurrent, Version: 1, Columns: geoCols}); err != nil {
			return err
		}
		return eng(tx).StartHistory(ctx, storage.HistoryVersion{DatasetID: "ds_kept", Table: "kept", Source: storage.SourceFeed, Version: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, step := range []struct {
		open, want, typ string
	}{
		{storage.GeometryWKB, storage.GeometryWKB, "BLOB"},
		{"", storage.GeometryWKB, "BLOB"}, // remembered
		{storage.GeometryNative, storage.GeometryNative, "GEOMETRY"},
		{storage.GeometryWKB, storage.GeometryWKB, "BLOB"},
	} {
		db := open(step.open, false)
		db.Close()
		ro := open("", true)
		typ, comment := columnInfo(t, ro, "permits", "geometry")
		var wkt, hexWKB string
		text, wkb := "ST_AsText(geometry)", "hex(ST_AsWKB(geometry))"
		if typ == "BLOB" {
			text, wkb = "ST_AsText(ST_GeomFromWKB(geometry))", "hex(geometry)"
		}
		if err := ro.SQL().QueryRow("SELECT "+text+", "+wkb+" FROM permits WHERE _ploti_record_id = 'r3'").Scan(&wkt, &hexWKB); err != nil {
			t.Fatal(err)
		}
		var histTyp string
		if err := ro.SQL().QueryRow(`SELECT data_type FROM duckdb_columns()
			WHERE schema_name = '_ploti_history' AND table_name = 'kept' AND column_name = 'geometry'`).Scan(&histTyp); err != nil {
			t.Fatal(err)
		}
		got := ro.Geometry()
		ro.Close()
		if histTyp != step.typ {
			t.Fatalf("open with %q: the history's geometry column is %s, want %s", step.open, histTyp, step.typ)
		}
		if got != step.want || typ != step.typ || !strings.HasSuffix(comment, "encoding="+step.want) {
			t.Fatalf("open with %q: file stores %q, column %s (comment %q); want %s, %s", step.open, got, typ, comment, step.want, step.typ)
		}
		// POINT (3 3) as little-endian ISO WKB.
		if wkt != "POINT (3 3)" || hexWKB != "010100000000000000000008400000000000000840" {
			t.Fatalf("after open with %q: r3 is %s, WKB %s", step.open, wkt, hexWKB)
		}
	}
	if _, err := Open(ctx, path, storage.Options{Geometry: "geojson"}); err == nil || !strings.Contains(err.Error(), `geometry "geojson": want wkb or geometry`) {
		t.Fatalf("open with geometry geojson: %v", err)
	}
}

// docs/design.md invariant 4 under either encoding: a geometry that is not WKB
// is refused, and the held table stays.
func TestTx_LoadSnapshot_refusesBadWKB(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	good := mustParquet(t, db, snapQuery)
	bad := mustParquet(t, db, "SELECT * REPLACE ('\\x01\\x07\\x00'::BLOB AS geometry) FROM ("+snapQuery+")")
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", geoCols, []string{good})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", geoCols, []string{bad})
		return err
	})
	if !errors.Is(err, storage.ErrBadData) {
		t.Fatalf("err = %v, want ErrBadData", err)
	}
	if got := mustRows(t, db, "permits"); got != 5 {
		t.Fatalf("the held table has %d rows, want its 5", got)
	}
}
