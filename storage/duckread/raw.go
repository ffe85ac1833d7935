package duckread

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// OpenPlain opens a DuckDB file with the settings Open uses (memory limit,
// threads, UTC) but nothing of the engine's: no _ploti schema, no lock
// wait. It is DuckDB on its own, for measuring the engine side by side with
// it (ploti-replica bench); closing the *sql.DB closes the file.
func OpenPlain(ctx context.Context, path string, opts storage.Options) (*sql.DB, error) {
	connector, err := NewConnector(path, opts)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := sql.OpenDB(connector) // DB.Close closes the connector too
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// RawJSONRows is the SELECT that DuckDB on its own runs to read NDJSON row
// files (a watched dataset's rows, as fetch spools them) as a table's rows,
// for measuring the engine side by side with it (ploti-replica bench):
// read_json with each column's DuckDB type and DuckDB's own casts (no check
// of integers and decimals), GeoJSON to GEOMETRY through the same WKT text
// as the engine (DuckDB's core has no other way). where, when set, filters
// the rows.
func RawJSONRows(files []string, cols []ploti.Column, where string) (string, error) {
	return jsonRowsSelect(files, cols, where, true)
}
