package backends

import (
	"context"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage/duckdb"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

// A database opened, and opened again, is at the DuckDB file's migration:
// the two engines' migrations are numbered alike. That they run once, one
// row a file, is storage/postgres's test of the same name.
func TestOpen_migratesOnceAndReopens(t *testing.T) {
	db, u := mustOpen(t)
	db.Close()
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		db, err := postgres.Open(ctx, u, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := db.Conn().QueryRow(ctx, "SELECT max(version) FROM _ploti.schema_migrations").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if got, want := n, int64(duckdb.MigrationVersion()); got != want {
			t.Fatalf("migration = %d, want %d, the DuckDB file's", got, want)
		}
		db.Close()
	}
}

// The issue: "_ploti as a schema with the same tables and columns". The
// DuckDB file's _ploti at this build's migration and the database's have
// the same tables, columns in the same order, and types that match; a
// DuckDB migration without its PostgreSQL twin fails here. Views count
// too (_ploti.changes is one on both).
func TestSchema_sameAsDuckDB(t *testing.T) {
	ctx := context.Background()
	_, u := mustOpen(t)
	duck := mustDuck(t)
	pgType := map[string]string{
		"VARCHAR": "text", "INTEGER": "integer", "BIGINT": "bigint", "BOOLEAN": "boolean", "BLOB": "bytea",
		"TIMESTAMP WITH TIME ZONE": "timestamp with time zone", "JSON": "jsonb", "VARCHAR[]": "text[]",
		// The change log's kind: DuckDB's ENUM written out (a named type
		// in _ploti does not replay from its write-ahead log), PostgreSQL's
		// named one.
		"ENUM('added', 'changed', 'removed', 'renamed')": "_ploti.change_kind",
	}
	want := map[string]string{}
	rows, err := duck.SQL().QueryContext(ctx, `SELECT table_name, string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index)
		FROM duckdb_columns() WHERE schema_name = '_ploti' GROUP BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var table, cols string
		if err := rows.Scan(&table, &cols); err != nil {
			t.Fatal(err)
		}
		for d, p := range pgType {
			cols = strings.ReplaceAll(cols, " "+d+",", " "+p+",")
			if strings.HasSuffix(cols, " "+d) {
				cols = strings.TrimSuffix(cols, d) + p
			}
		}
		want[table] = cols
	}
	rows.Close()
	r := mustReader(t, u)
	prows, err := r.Query(ctx, `SELECT c.relname, string_agg(a.attname || ' ' || format_type(a.atttypid, NULL), ', ' ORDER BY a.attnum)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE n.nspname = '_ploti' AND c.relkind IN ('r', 'v') AND a.attnum > 0 AND NOT a.attisdropped GROUP BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for prows.Next() {
		var table, cols string
		if err := prows.Scan(&table, &cols); err != nil {
			t.Fatal(err)
		}
		got[table] = cols
	}
	if len(got) != len(want) {
		t.Errorf("PostgreSQL has %d _ploti tables, DuckDB %d", len(got), len(want))
	}
	for table, cols := range want {
		if got[table] != cols {
			t.Errorf("_ploti.%s:\n PostgreSQL %s\n DuckDB     %s", table, got[table], cols)
		}
	}
	if postgres.MigrationVersion() != duckdb.MigrationVersion() {
		t.Errorf("PostgreSQL migrations reach %d, DuckDB's %d", postgres.MigrationVersion(), duckdb.MigrationVersion())
	}
}
