package storage

import (
	"context"
	"database/sql"
	"time"
)

// Backend is an engine other than the DuckDB file that holds a replica
// (storage/postgres's PostgreSQL database). A DB opened over one
// (OpenBackend) keeps the same _ploti registry with the same statements
// (database/sql with ? placeholders; the few that differ are in
// dialect.go), and moves rows through the Backend's Tables: the seam is
// these two interfaces and Tables (seam.go); docs/decisions.md 48.
type Backend interface {
	// Name is the database as errors and logs name it, with no secret.
	Name() string
	// Schema is the schema of the dataset tables (a file's is main).
	Schema() string
	// SQL is a handle for the registry's statements outside a
	// transaction (readers of the committed state).
	SQL() *sql.DB
	// Begin starts the writer's transaction.
	Begin(ctx context.Context) (BackendTx, error)
	// Close releases the database (and the writer's lock).
	Close() error
}

// BackendTx is a Backend's transaction: the registry's statements run on
// SQL, the rows move through Tables, and Commit commits both at once.
type BackendTx interface {
	Tables
	SQL() *sql.Tx
	Commit() error
	Rollback() error
}

// OpenBackend is a DB over be, whose _ploti the Backend has migrated.
// opts.Now is its clock; the file-only options (memory, threads, geometry
// encoding, read-only) are the Backend's business.
func OpenBackend(be Backend, opts Options) *DB {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &DB{sql: be.SQL(), path: be.Name(), now: opts.Now, be: be, geometry: GeometryPostGIS}
}

// IsFile tells whether the DB is a DuckDB file (not a Backend's
// database): what only a file has (its path's folder, its spool beside it,
// checkpoints, its storage version) applies.
func (db *DB) IsFile() bool { return db.be == nil }
