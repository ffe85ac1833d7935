package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ploti-replica/ploti-replica/storage"
)

// The database's words for the registry statements whose SQL differs
// between the engines (storage.Dialect).

// TakenNamesSQL lists the tables and views of the dataset tables' schema.
func (b backend) TakenNamesSQL() string {
	return "SELECT table_name::VARCHAR FROM information_schema.tables WHERE table_schema = " + storage.Literal(b.db.schema)
}

// IdentMax is PostgreSQL's NAMEDATALEN-1.
func (b backend) IdentMax() int { return maxIdent }

// PairHash hashes the record id and the value's text together.
func (b backend) PairHash(id, col string) string {
	return fmt.Sprintf("hashtextextended(coalesce(%s::text, '') || '|' || coalesce(%s::text, chr(1)), 0)", id, col)
}

// JSONText is jsonb's text of a JSON value (json keeps the text it was
// given, jsonb its own: the same for the same value, as in a DuckDB file).
func (b backend) JSONText(expr string) string { return "CAST(CAST(" + expr + " AS jsonb) AS text)" }

// FirstIDs is the first five values of expr in order, as JSON.
func (b backend) FirstIDs(expr string) string {
	return fmt.Sprintf("CAST(to_json((array_agg(%[1]s ORDER BY %[1]s))[1:5]) AS VARCHAR)", expr)
}

// ColumnsOf maps rel's columns to PostgreSQL's names of their types.
func (b backend) ColumnsOf(ctx context.Context, tx *sql.Tx, name, rel string) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT attname::VARCHAR, format_type(atttypid, atttypmod) FROM pg_attribute
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

// JSONRows is not the database's way: PostgreSQL takes at most 65,535
// parameters a statement, and the registry binds rows as VALUES lists in
// parts.
func (b backend) JSONRows(string) (string, bool) { return "", false }

// Geometry is PostGIS's geometry type.
func (b backend) Geometry() string { return storage.GeometryPostGIS }

// NilTx is a nil transaction of the database's (storage.TxCan).
func (b backend) NilTx() storage.EngineTx { return (*backendTx)(nil) }

// LabelSQL reads the comment on _ploti.subscription.
func (b backend) LabelSQL() string {
	return "SELECT coalesce(obj_description('_ploti.subscription'::regclass, 'pg_class'), '')"
}
