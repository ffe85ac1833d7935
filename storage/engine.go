package storage

import (
	"context"
	"database/sql"
	"time"
)

// Engine is an engine that holds a replica: the DuckDB file
// (storage/duckdb) or a PostgreSQL/PostGIS database (storage/postgres),
// siblings behind this one interface, as Litestream keeps each replica
// client and restic each backend in a package of its own. A DB opened over
// one (OpenEngine) keeps the same _ploti registry with the same statements
// (database/sql with ? placeholders; the few that differ are the
// engine's Dialect), and moves rows through the engine's Tables: the seam
// is these interfaces and Tables (seam.go); docs/decisions.md 48. What
// only some engines can do is a capability (capabilities.go), asserted on
// the engine, never asked by its name.
type Engine interface {
	Dialect
	// Name is the database as errors and logs name it, with no secret: a
	// file's path, a database's URL without its password.
	Name() string
	// Schema is the schema of the dataset tables (a file's is main).
	Schema() string
	// Geometry is how the dataset tables store geometry columns:
	// GeometryNative or GeometryWKB in a DuckDB file, GeometryPostGIS in
	// a database.
	Geometry() string
	// SQL is a handle for the registry's statements outside a
	// transaction (readers of the committed state).
	SQL() *sql.DB
	// Begin starts the writer's transaction, whose clock reads now
	// throughout (the registry's rows and the engine's own share it).
	Begin(ctx context.Context, now time.Time) (EngineTx, error)
	// Close releases the database (and the writer's lock).
	Close() error
	// NilTx is a nil transaction of the engine's type, for asking what
	// its transactions can do before one begins (TxCan).
	NilTx() EngineTx
}

// EngineTx is an engine's transaction: the registry's statements run on
// SQL, the rows move through Tables, and Commit commits both at once.
type EngineTx interface {
	Tables
	SQL() *sql.Tx
	Commit() error
	Rollback() error
}

// OpenEngine is a DB over be, whose _ploti the engine has migrated.
// opts.Now is its clock; the engine's own settings (memory, threads,
// geometry encoding, read-only) are its business.
func OpenEngine(be Engine, opts Options) *DB {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &DB{sql: be.SQL(), path: be.Name(), now: opts.Now, be: be}
}
