package duckread

import (
	"context"
	"database/sql/driver"
	"net/url"
	"strconv"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/ploti-replica/ploti-replica/storage"
)

// NewConnector opens DuckDB at path (a file, or "" for memory) with
// opts' settings: the connector every DuckDB of the engine opens with, the
// replica's file and the in-memory DuckDB that reads downloaded files for
// another engine alike (no extension downloads, UTC, storage every DuckDB
// 1.x reads).
func NewConnector(path string, opts storage.Options) (*duckdb.Connector, error) {
	dsn := path + "?" + Settings(opts).Encode()
	return duckdb.NewConnector(dsn, func(execer driver.ExecerContext) error {
		_, err := execer.ExecContext(context.Background(), SessionSetup, nil)
		return err
	})
}

// SessionSetup is the statement every session of the engine's DuckDBs
// runs first: timestamps in the feed are UTC; casts and display agree.
const SessionSetup = "SET TimeZone = 'UTC'"

// Settings are the database settings every DuckDB of the engine opens
// with (NewConnector's, and those of a DuckDB opened through DuckDB's C
// API, storage/postgres): no extension downloads, storage every DuckDB
// 1.x reads, and opts' memory limit and threads.
func Settings(opts storage.Options) url.Values {
	q := url.Values{}
	// The replica reads each downloaded file once, and a file fetched
	// again (a repair after a bad download) reuses its spool name: DuckDB's
	// external file cache served the old bytes for it.
	q.Set("enable_external_file_cache", "false")
	// Never reach for the network: a file that needs an extension (a
	// SQLite file makes DuckDB fetch sqlite_scanner) is refused instead.
	q.Set("autoinstall_known_extensions", "false")
	q.Set("autoload_known_extensions", "false")
	// New files in the storage every DuckDB 1.x client reads,
	// whatever a later DuckDB's default.
	q.Set("storage_compatibility_version", "v1.0.0")
	if opts.ReadOnly {
		q.Set("access_mode", "READ_ONLY")
	}
	if opts.MemoryLimit != "" {
		q.Set("memory_limit", opts.MemoryLimit)
	}
	if opts.Threads > 0 {
		q.Set("threads", strconv.Itoa(opts.Threads))
	}
	return q
}
