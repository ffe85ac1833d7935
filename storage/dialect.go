package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The few registry statements whose SQL differs between the DuckDB file
// and a Backend's database (PostgreSQL); every other statement is the
// same text on both (backend.go).

// takenNamesSQL lists the names of the tables and views in the schema of
// the dataset tables: a new dataset's table takes none of them.
func (db *DB) takenNamesSQL() string {
	if db.be != nil {
		return "SELECT table_name::VARCHAR FROM information_schema.tables WHERE table_schema = " + Literal(db.be.Schema())
	}
	return `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
		UNION ALL SELECT view_name FROM duckdb_views() WHERE schema_name = 'main'`
}

// BackendIdent is the longest identifier a Backend's database takes:
// PostgreSQL's NAMEDATALEN-1, 63 bytes.
const BackendIdent = 63

// CutIdent is name when it has at most max bytes, else its start and a
// hash of key, in max bytes: names alike in their first characters stay
// apart.
func CutIdent(name, key string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	return name[:max-9] + "_" + hex.EncodeToString(sum[:4])
}

// tableBase is the table name a new dataset asks for (TableName). In a
// Backend's database, a name longer than its identifiers less room for
// the "_N" that sets a taken name apart is cut, and ends in a hash of the
// dataset id (CutIdent).
func (db *DB) tableBase(datasetID string) string {
	if db.be == nil {
		return TableName(datasetID)
	}
	return CutIdent(TableName(datasetID), datasetID, BackendIdent-4)
}

// tableRel is a dataset table's name, qualified by its schema.
func (db *DB) tableRel(table string) string {
	if db.be != nil {
		return Ident(db.be.Schema()) + "." + Ident(table)
	}
	return "main." + Ident(table)
}

// pairHash is an expression hashing a row's record id with one of its
// values, whose sum over a table does not depend on the rows' order.
func (db *DB) pairHash(id, col string) string {
	if db.be != nil {
		return fmt.Sprintf("hashtextextended(coalesce(%s::text, '') || '|' || coalesce(%s::text, chr(1)), 0)", id, col)
	}
	return fmt.Sprintf("hash(%s, %s)", id, col)
}

// jsonText is a JSON value's text, the same for the same value on both
// engines (PostgreSQL's json keeps the text it was given, jsonb its own).
func (tx *Tx) jsonText(expr string) string {
	if tx.be != nil {
		return "CAST(CAST(" + expr + " AS jsonb) AS text)"
	}
	return "CAST(" + expr + " AS VARCHAR)"
}

// firstIDs is an aggregate of the first five values of expr in order, as
// a JSON list of strings.
func (db *DB) firstIDs(expr string) string {
	if db.be != nil {
		return fmt.Sprintf("CAST(to_json((array_agg(%[1]s ORDER BY %[1]s))[1:5]) AS VARCHAR)", expr)
	}
	return fmt.Sprintf("CAST(to_json(list(%[1]s ORDER BY %[1]s)[1:5]) AS VARCHAR)", expr)
}

// columnsOf maps a table's columns to the engine's names of their types:
// name is a table of the file's main schema, rel the same table
// qualified (a Backend's engine reads it by rel).
func (tx *Tx) columnsOf(ctx context.Context, name, rel string) (map[string]string, error) {
	if tx.be == nil {
		return tx.tableColumns(ctx, name)
	}
	rows, err := tx.tx.QueryContext(ctx, `SELECT attname::VARCHAR, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = CAST(? AS regclass) AND attnum > 0 AND NOT attisdropped`, rel)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", name, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", name, err)
		}
		out[n] = t
	}
	return out, rows.Err()
}
