package duckdb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ploti-replica/ploti-replica/storage"
)

// The file's words for the registry statements whose SQL differs between
// the engines (storage.Dialect).

// TakenNamesSQL lists the tables and views of the main schema.
func (db *DB) TakenNamesSQL() string {
	return `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
		UNION ALL SELECT view_name FROM duckdb_views() WHERE schema_name = 'main'`
}

// IdentMax is 0: DuckDB takes identifiers of any length.
func (db *DB) IdentMax() int { return 0 }

// PairHash is DuckDB's hash of the record id with the value.
func (db *DB) PairHash(id, col string) string { return fmt.Sprintf("hash(%s, %s)", id, col) }

// JSONText is DuckDB's text of a JSON value.
func (db *DB) JSONText(expr string) string { return "CAST(" + expr + " AS VARCHAR)" }

// FirstIDs is DuckDB's list of the first five values of expr, as JSON.
func (db *DB) FirstIDs(expr string) string {
	return fmt.Sprintf("CAST(to_json(list(%[1]s ORDER BY %[1]s)[1:5]) AS VARCHAR)", expr)
}

// ColumnsOf maps a table of the main schema's columns to their DuckDB types.
func (db *DB) ColumnsOf(ctx context.Context, tx *sql.Tx, name, rel string) (map[string]string, error) {
	return (&Tx{tx: tx, db: db}).tableColumns(ctx, name)
}

// JSONRows reads many registry rows from one JSON text with from_json.
func (db *DB) JSONRows(schema string) (string, bool) {
	return "(SELECT unnest(from_json(CAST(? AS VARCHAR), " + storage.Literal(schema) + ")) AS r)", true
}

// LabelSQL reads the comment on _ploti.subscription.
func (db *DB) LabelSQL() string {
	return `SELECT coalesce(comment, '') FROM duckdb_tables()
		WHERE database_name = current_database() AND schema_name = '_ploti' AND table_name = 'subscription'`
}
