// Package storagetest holds what the engines' tests share (storage/duckdb,
// storage/postgres and storage/backends, which puts the two side by
// side): test files written by DuckDB's own COPY, NDJSON rows, a second
// PostgreSQL session as a reader has, and the permits-like columns and
// snapshot the seam's tests load on both engines. Only tests import it.
package storagetest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Execer runs a statement: a DuckDB's *sql.DB.
type Execer interface {
	Exec(query string, args ...any) (sql.Result, error)
}

// Parquet writes a Parquet file with DuckDB's own COPY of query, run by
// duck, and returns its path.
func Parquet(tb testing.TB, duck Execer, query string) string {
	tb.Helper()
	f, err := os.CreateTemp(tb.TempDir(), "f*.parquet")
	if err != nil {
		tb.Fatal(err)
	}
	f.Close()
	if _, err := duck.Exec("COPY (" + query + ") TO " + storage.Literal(f.Name()) + " (FORMAT parquet)"); err != nil {
		tb.Fatal(err)
	}
	return f.Name()
}

// NDJSON writes rows, one a line, to a file and returns its path.
func NDJSON(tb testing.TB, rows ...string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "rows.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Col is a column of a plain type.
func Col(name, typ string) ploti.Column { return ploti.Column{Name: name, Type: ploti.Type{Type: typ}} }

// Reader is a second session on the database at u, as a reader (psql,
// QGIS) has, closed when the test ends.
func Reader(tb testing.TB, u string) *pgx.Conn {
	tb.Helper()
	c, err := pgx.Connect(context.Background(), u)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Count is the one integer q returns on c.
func Count(tb testing.TB, c *pgx.Conn, q string, args ...any) int64 {
	tb.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// Cols is a permits-like schema: text, decimal, timestamp, list and point
// geometry, the types whose values differ most between the engines.
var Cols = []ploti.Column{
	{Name: "permit", Type: ploti.Type{Type: ploti.TypeString}},
	{Name: "valuation", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 14, Scale: 2}}},
	{Name: "issued", Type: ploti.Type{Type: ploti.TypeTimestamp}},
	{Name: "tags", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeString}}},
	{Name: "geometry", Type: ploti.Type{Type: ploti.TypeGeometry, Geometry: &ploti.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}}},
}

// JSONCols is a column of each type the NDJSON rows of a watched dataset
// carry, for the engines' loads of rows.
var JSONCols = []ploti.Column{
	Col("s", ploti.TypeString),
	Col("i", ploti.TypeInteger),
	Col("n", ploti.TypeNumber),
	{Name: "d", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 38, Scale: 2}}},
	Col("b", ploti.TypeBoolean),
	Col("dt", ploti.TypeDate),
	Col("ts", ploti.TypeTimestamp),
	{Name: "l", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeString}}},
	{Name: "li", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeInteger}}},
	Col("j", ploti.TypeJSON),
	Col("g", ploti.TypeGeometry),
}

// SnapQuery is a five-row snapshot of Cols, as DuckDB writes it to Parquet.
const SnapQuery = `SELECT 'r' || i AS _ploti_record_id, 'fl-orange' AS _ploti_place_id, 'P' || i AS permit,
	(i * 1.5)::DECIMAL(14,2) AS valuation, TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_days(i::INT) AS issued,
	['a', 'b'] AS tags, ST_AsWKB(('POINT (' || i || ' ' || i || ')')::GEOMETRY) AS geometry FROM range(5) t(i)`
