package postgres

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// mustOpen opens a fresh test database (internal/pgtest) as a replica.
func mustOpen(tb testing.TB) (*DB, string) {
	tb.Helper()
	u := pgtest.DB(tb)
	db, err := Open(context.Background(), u, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, u
}

// mustReader is a second session on the database, as a reader (psql,
// QGIS) has.
func mustReader(tb testing.TB, u string) *pgx.Conn {
	tb.Helper()
	c, err := pgx.Connect(context.Background(), u)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// mustDuck is an in-memory DuckDB on its own (storage/duckread, with the
// engines' settings), to write test files with: these tests need DuckDB
// as the files' writer, not the DuckDB engine (storage/backends' tests
// put the engines side by side).
func mustDuck(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := duckread.OpenPlain(context.Background(), "", storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// mustParquet writes a Parquet file with DuckDB's own COPY of a query.
func mustParquet(tb testing.TB, duck *sql.DB, query string) string {
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

// mustNDJSON writes rows, one a line, to a file and returns its path.
func mustNDJSON(tb testing.TB, rows ...string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "rows.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

func col(name, typ string) ploti.Column { return ploti.Column{Name: name, Type: ploti.Type{Type: typ}} }

func count(tb testing.TB, c *pgx.Conn, q string, args ...any) int64 {
	tb.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

var testCols = []ploti.Column{
	{Name: "permit", Type: ploti.Type{Type: ploti.TypeString}},
	{Name: "valuation", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 14, Scale: 2}}},
	{Name: "issued", Type: ploti.Type{Type: ploti.TypeTimestamp}},
	{Name: "tags", Type: ploti.Type{Type: ploti.TypeList, Items: &ploti.Type{Type: ploti.TypeString}}},
	{Name: "geometry", Type: ploti.Type{Type: ploti.TypeGeometry, Geometry: &ploti.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}}},
}

const snapQuery = `SELECT 'r' || i AS _ploti_record_id, 'fl-orange' AS _ploti_place_id, 'P' || i AS permit,
	(i * 1.5)::DECIMAL(14,2) AS valuation, TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_days(i::INT) AS issued,
	['a', 'b'] AS tags, ST_AsWKB(('POINT (' || i || ' ' || i || ')')::GEOMETRY) AS geometry FROM range(5) t(i)`
