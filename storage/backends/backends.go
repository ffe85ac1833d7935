// Package backends opens a replica's storage from where --db (or
// replica.Open's path) says it is: a postgres:// or postgresql:// URL is a
// PostgreSQL database (storage/postgres), anything else a DuckDB file
// (storage), as restic picks a backend from its repository's location. It
// is the one place that knows both engines; above it (replica, cmd) a
// storage.DB is a storage.DB.
package backends

import (
	"context"

	"github.com/ploti-replica/ploti-replica/storage"
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
		return storage.Open(ctx, where, opts)
	}
	return postgres.OpenDB(ctx, where, postgres.Options{ReadOnly: opts.ReadOnly, LockTimeout: opts.LockTimeout, OnLocked: opts.OnLocked,
		Now: opts.Now, MemoryLimit: opts.MemoryLimit, Threads: opts.Threads})
}

// Name is where as logs and errors may show it: a URL without its
// password.
func Name(where string) string {
	if IsDatabase(where) {
		return postgres.Redact(where)
	}
	return where
}
