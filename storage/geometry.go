package storage

import (
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// How a file stores its geometry columns (_ploti.settings 'geometry';
// Options.Geometry).
const (
	// GeometryNative stores DuckDB's GEOMETRY. DuckDB 1.5 reads it as
	// geometry; DuckDB 1.1–1.4 without the spatial extension read a BLOB
	// in that extension's own encoding, with no coordinates to be had.
	GeometryNative = "geometry"
	// GeometryWKB stores standard WKB (ISO, little endian) in a BLOB,
	// which every DuckDB client reads as it is, and ST_GeomFromWKB,
	// shapely and GeoPandas turn into geometry.
	GeometryWKB = "wkb"
	// GeometryPostGIS is a database's (storage.Engine): PostGIS
	// geometry, chosen by the engine, not by Options.Geometry.
	GeometryPostGIS = "postgis"
)

// CheckGeometry refuses a value that is not "", GeometryNative or
// GeometryWKB.
func CheckGeometry(s string) error {
	switch s {
	case "", GeometryNative, GeometryWKB:
		return nil
	}
	return fmt.Errorf("geometry %q: want %s or %s", s, GeometryWKB, GeometryNative)
}

// Geometry is how the replica stores geometry columns: GeometryNative or
// GeometryWKB in a DuckDB file, GeometryPostGIS in a database.
func (db *DB) Geometry() string { return db.be.Geometry() }

// HasGeometry tells whether a column type is geometry, or a list of it.
func HasGeometry(t ploti.Type) bool {
	for ; t.Type == ploti.TypeList && t.Items != nil; t = *t.Items {
	}
	return t.Type == ploti.TypeGeometry
}

// ConvertGeometry is the SQL that applies fn (ST_AsWKB, ST_GeomFromWKB)
// to e, a value of type t, or to each geometry in it when t is a list.
func ConvertGeometry(t ploti.Type, e, fn string) string {
	if t.Type == ploti.TypeList && t.Items != nil {
		return fmt.Sprintf("list_transform(%s, x -> %s)", e, ConvertGeometry(*t.Items, "x", fn))
	}
	return fn + "(" + e + ")"
}

// GeometryComment is the comment a geometry column carries, for readers
// that know nothing of _ploti (every DuckDB client reads it from
// duckdb_columns() or information_schema.columns): its CRS, its geometry
// types, and how it is stored, as "crs=EPSG:4326; types=Point;
// encoding=wkb".
func GeometryComment(t ploti.Type, geometry string) string {
	for ; t.Type == ploti.TypeList && t.Items != nil; t = *t.Items {
	}
	var parts []string
	if g := t.Geometry; g != nil {
		if g.CRS != "" {
			parts = append(parts, "crs="+g.CRS)
		}
		if len(g.Types) > 0 {
			parts = append(parts, "types="+strings.Join(g.Types, ","))
		}
	}
	return strings.Join(append(parts, "encoding="+geometry), "; ")
}

// AsGeometry is the SQL of main.table's rows with its geometry columns
// (cols' geometry and lists of it) as GEOMETRY, whichever way a file that
// stores geometry as geometry (GeometryNative or GeometryWKB) keeps them:
// the table itself, or a subquery that reads its WKB with ST_GeomFromWKB.
func AsGeometry(geometry, table string, cols []ploti.Column) string {
	t := "main." + Ident(table)
	if geometry != GeometryWKB {
		return t
	}
	if repl := ReplaceGeometry(cols, "ST_GeomFromWKB"); repl != "" {
		return fmt.Sprintf("(SELECT * REPLACE (%s) FROM %s)", repl, t)
	}
	return t
}

// ReplaceGeometry is the list of a * REPLACE clause that applies fn to
// each of cols' geometry columns (and to each geometry of a list); ""
// when there is none.
func ReplaceGeometry(cols []ploti.Column, fn string) string {
	var repl []string
	for _, c := range cols {
		if HasGeometry(c.Type) {
			repl = append(repl, ConvertGeometry(c.Type, Ident(c.Name), fn)+" AS "+Ident(c.Name))
		}
	}
	return strings.Join(repl, ", ")
}
