package backends

// The tests here put the two engines side by side: the same files loaded
// and merged into a DuckDB file (storage/duckdb) and a PostgreSQL
// database (storage/postgres) give the same rows, the same _ploti and the
// same refusals. This is the one package that knows both engines, so
// neither engine's tests import the other. Without a PostgreSQL server
// (internal/pgtest) they skip, saying how to start one.

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/internal/storagetest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

// mustOpen opens a fresh test database (internal/pgtest) as a replica.
func mustOpen(tb testing.TB) (*postgres.DB, string) {
	tb.Helper()
	u := pgtest.DB(tb)
	db, err := postgres.Open(context.Background(), u, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, u
}

// mustReader is a second session on the database, as a reader (psql,
// QGIS) has.
func mustReader(tb testing.TB, u string) *pgx.Conn { return storagetest.Reader(tb, u) }

// mustDuck is a DuckDB file opened by the DuckDB engine, to write test
// files with and to load the same files into, side by side.
func mustDuck(tb testing.TB) *storage.DB {
	tb.Helper()
	db, err := duckdb.Open(context.Background(), filepath.Join(tb.TempDir(), "t.duckdb"), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// mustParquet writes a Parquet file with DuckDB's own COPY of a query.
func mustParquet(tb testing.TB, duck *storage.DB, query string) string {
	return storagetest.Parquet(tb, duck.SQL(), query)
}

// mustNDJSON writes rows, one a line, to a file and returns its path.
func mustNDJSON(tb testing.TB, rows ...string) string { return storagetest.NDJSON(tb, rows...) }

func col(name, typ string) ploti.Column { return storagetest.Col(name, typ) }

func count(tb testing.TB, c *pgx.Conn, q string, args ...any) int64 {
	return storagetest.Count(tb, c, q, args...)
}

var testCols = storagetest.Cols

const snapQuery = storagetest.SnapQuery
