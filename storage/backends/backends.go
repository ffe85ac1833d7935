// Package backends opens a replica's storage from where --db (or
// replica.Open's path) says it is: a postgres:// or postgresql:// URL is a
// PostgreSQL database (storage/postgres), anything else a DuckDB file
// (storage/duckdb), as restic picks a backend from its repository's
// location. It is the one place that knows both engines; above it
// (replica, apply) a storage.DB is a storage.DB, and what only one engine
// can do is a capability of storage's.
package backends

import (
	"context"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

// IsDatabase tells whether where names a database (a URL) rather than a
// file: what only a file has (a folder beside it, a path to stat) does not
// apply.
func IsDatabase(where string) bool { return postgres.IsURL(where) }

// Open opens the replica's storage at where. opts' file-only settings
// (NoCreate, Geometry) do not apply to a database: it must exist, and it
// stores PostGIS geometry.
func Open(ctx context.Context, where string, opts storage.Options) (*storage.DB, error) {
	if !IsDatabase(where) {
		return duckdb.Open(ctx, where, opts)
	}
	return postgres.OpenDB(ctx, where, postgres.Options{ReadOnly: opts.ReadOnly, LockTimeout: opts.LockTimeout, OnLocked: opts.OnLocked,
		Now: opts.Now, MemoryLimit: opts.MemoryLimit, Threads: opts.Threads, Logger: opts.Logger})
}

// Name is where as logs and errors may show it: a URL without its
// password.
func Name(where string) string {
	if IsDatabase(where) {
		return postgres.Redact(where)
	}
	return where
}

// StorageReaders names the DuckDB releases that read a file of DuckDB
// storage version v ("" for 0: not a file).
func StorageReaders(v uint64) string {
	if v == 0 {
		return ""
	}
	return duckdb.StorageReaders(v)
}

// ReadSummary is the status a DuckDB file's last writer kept beside it at
// where, while the file is as it was left; false otherwise, and for a
// database, which keeps none.
func ReadSummary(where string) ([]byte, bool) {
	if IsDatabase(where) {
		return nil, false
	}
	return duckdb.ReadSummary(where)
}

// What is known of DuckDB files without opening one, for the CLI.
const (
	// DuckDBVersion is the DuckDB release this build embeds.
	DuckDBVersion = duckdb.DuckDBVersion
	// StorageV1_0 is the storage version new files are written in.
	StorageV1_0 = duckdb.StorageV1_0
)

// StorageName is storage version v's name ("v1.0.0"), "" when unknown.
func StorageName(v uint64) string { return duckdb.StorageName(v) }

// FileExists tells whether a DuckDB file is at path, reading its header:
// a file that is not DuckDB's, or that this build cannot read, is an
// error in words.
func FileExists(path string) (bool, error) {
	info, err := duckdb.Inspect(path)
	return info.Exists, err
}

// CheckFolder makes sure a new file can be made at path: its folder exists
// and is writable.
func CheckFolder(path string) error { return duckdb.CheckFolder(path) }

// SummaryPath is where a DuckDB file's last writer keeps its status.
func SummaryPath(path string) string { return duckdb.SummaryPath(path) }
