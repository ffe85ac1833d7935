package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// OpenPlain opens a DuckDB file with the settings Open uses (memory limit,
// threads, UTC) but nothing of the engine's: no _ploti schema, no lock
// wait. It is DuckDB on its own, for measuring the engine side by side with
// it (ploti-replica bench); closing the *sql.DB closes the file.
func OpenPlain(ctx context.Context, path string, opts Options) (*sql.DB, error) {
	connector, err := newConnector(path, opts)
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
