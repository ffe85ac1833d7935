package storage

import (
	"context"
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
	// GeometryPostGIS is a database's (storage.Backend): PostGIS
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

// Geometry is how the file stores geometry columns: GeometryNative or
// GeometryWKB.
func (db *DB) Geometry() string { return db.geometry }

// storedType is the DuckDB type of a column of type t in this file's
// tables: DuckType, with geometry as a BLOB of WKB when the file stores
// WKB.
func (db *DB) storedType(t ploti.Type) (string, error) {
	d, err := DuckType(t)
	if err != nil || db.geometry != GeometryWKB || !hasGeometry(t) {
		return d, err
	}
	return strings.Replace(d, "GEOMETRY", "BLOB", 1), nil
}

// hasGeometry tells whether a column type is geometry, or a list of it.
func hasGeometry(t ploti.Type) bool {
	for ; t.Type == ploti.TypeList && t.Items != nil; t = *t.Items {
	}
	return t.Type == ploti.TypeGeometry
}

// convertGeometry is the SQL that applies fn (ST_AsWKB, ST_GeomFromWKB)
// to e, a value of type t, or to each geometry in it when t is a list.
func convertGeometry(t ploti.Type, e, fn string) string {
	if t.Type == ploti.TypeList && t.Items != nil {
		return fmt.Sprintf("list_transform(%s, x -> %s)", e, convertGeometry(*t.Items, "x", fn))
	}
	return fn + "(" + e + ")"
}

// stored turns q, a query of a dataset table's rows whose geometry columns
// are GEOMETRY, into the rows as this file stores them: with WKB, each
// geometry becomes its WKB (in DuckDB 1.5, GEOMETRY holds WKB already, so
// this costs little; BENCHMARKS.md). A value the query cannot turn into
// geometry fails it either way: a bad file is refused in both encodings.
func (db *DB) stored(q string, cols []ploti.Column) string {
	if db.geometry != GeometryWKB {
		return q
	}
	if repl := replaceGeometry(cols, "ST_AsWKB"); repl != "" {
		return fmt.Sprintf("SELECT * REPLACE (%s) FROM (%s)", repl, q)
	}
	return q
}

// replaceGeometry is the list of a * REPLACE clause that applies fn to
// each of cols' geometry columns (and to each geometry of a list); ""
// when there is none.
func replaceGeometry(cols []ploti.Column, fn string) string {
	var repl []string
	for _, c := range cols {
		if hasGeometry(c.Type) {
			repl = append(repl, convertGeometry(c.Type, Ident(c.Name), fn)+" AS "+Ident(c.Name))
		}
	}
	return strings.Join(repl, ", ")
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

// commentGeometry puts GeometryComment on each geometry column of table
// (a table just created or given new columns: DuckDB keeps a comment with
// its column, and a CREATE OR REPLACE starts without).
func (tx *Tx) commentGeometry(ctx context.Context, table string, cols []ploti.Column) error {
	for _, c := range cols {
		if !hasGeometry(c.Type) {
			continue
		}
		q := fmt.Sprintf("COMMENT ON COLUMN main.%s.%s IS %s", Ident(table), Ident(c.Name), Literal(GeometryComment(c.Type, tx.db.geometry)))
		if _, err := tx.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("comment on %s.%s: %w", table, c.Name, err)
		}
	}
	return nil
}

// readGeometry reads the file's geometry setting.
func (db *DB) readGeometry(ctx context.Context) error {
	err := db.sql.QueryRowContext(ctx, "SELECT value FROM _ploti.settings WHERE name = 'geometry'").Scan(&db.geometry)
	if err != nil {
		return fmt.Errorf("open %s: read the geometry setting: %w", db.path, err)
	}
	return nil
}

// setGeometry makes the file store geometry as want, converting the
// geometry columns of every dataset table in one transaction with the
// setting, so that a file is always all one or all the other.
func (db *DB) setGeometry(ctx context.Context, want string) error {
	if want == "" || want == db.geometry {
		return nil
	}
	fn := "ST_AsWKB"
	if want == GeometryNative {
		fn = "ST_GeomFromWKB"
	}
	was := db.geometry
	db.geometry = want // for storedType and the comments
	err := db.Update(ctx, func(tx *Tx) error {
		ds, err := tx.Datasets(ctx)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if err := tx.convertTable(ctx, d, fn); err != nil {
				return err
			}
			if err := tx.convertHistory(ctx, d, fn); err != nil { // history.go
				return err
			}
		}
		_, err = tx.tx.ExecContext(ctx, "UPDATE _ploti.settings SET value = ? WHERE name = 'geometry'", want)
		return err
	})
	if err != nil {
		db.geometry = was
		return fmt.Errorf("open %s: store geometry as %s: %w", db.path, want, err)
	}
	return nil
}

// convertTable converts a dataset table's geometry columns with fn, those
// that its registry row says are geometry and that the table has in the
// other encoding.
func (tx *Tx) convertTable(ctx context.Context, d *Dataset, fn string) error {
	have := map[string]string{}
	rows, err := tx.tx.QueryContext(ctx, `SELECT column_name, data_type FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ?`, d.Table)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return err
		}
		have[name] = typ
	}
	if err := rows.Close(); err != nil {
		return err
	}
	var done []ploti.Column
	for _, c := range d.Columns {
		want, err := tx.db.storedType(c.Type)
		if err != nil || !hasGeometry(c.Type) || have[c.Name] == "" || have[c.Name] == want {
			continue
		}
		q := fmt.Sprintf("ALTER TABLE main.%s ALTER COLUMN %s SET DATA TYPE %s USING %s",
			Ident(d.Table), Ident(c.Name), want, convertGeometry(c.Type, Ident(c.Name), fn))
		if _, err := tx.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("convert %s.%s: %w", d.Table, c.Name, err)
		}
		done = append(done, c)
	}
	return tx.commentGeometry(ctx, d.Table, done)
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
	if repl := replaceGeometry(cols, "ST_GeomFromWKB"); repl != "" {
		return fmt.Sprintf("(SELECT * REPLACE (%s) FROM %s)", repl, t)
	}
	return t
}
