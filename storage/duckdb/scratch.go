package duckdb

import (
	"context"
	"fmt"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// tableColumns maps a main table's columns to their DuckDB types.
func (tx *Tx) tableColumns(ctx context.Context, table string) (map[string]string, error) {
	rows, err := tx.tx.QueryContext(ctx, `SELECT column_name, data_type FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ?`, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", table, err)
		}
		out[n] = t
	}
	return out, rows.Err()
}

// LoadScratch loads a snapshot into the scratch table of main, which the
// comparison's rollback drops.
func (tx *Tx) LoadScratch(ctx context.Context, cols []ploti.Column, files []string) (string, int64, error) {
	tx.heavyWrite()
	n, err := tx.loadSnapshot(ctx, storage.VerifyScratch, cols, files, true)
	return "main." + storage.Ident(storage.VerifyScratch), n, err
}
