package postgres

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/internal/storagetest"
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
func mustReader(tb testing.TB, u string) *pgx.Conn { return storagetest.Reader(tb, u) }

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
	return storagetest.Parquet(tb, duck, query)
}

// mustNDJSON writes rows, one a line, to a file and returns its path.
func mustNDJSON(tb testing.TB, rows ...string) string { return storagetest.NDJSON(tb, rows...) }

func col(name, typ string) ploti.Column { return storagetest.Col(name, typ) }

func count(tb testing.TB, c *pgx.Conn, q string, args ...any) int64 {
	return storagetest.Count(tb, c, q, args...)
}

var testCols = storagetest.Cols

const snapQuery = storagetest.SnapQuery
