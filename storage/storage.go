package storage

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"
)

// Defaults for Options.
const (
	DefaultLockTimeout = 30 * time.Second
)

// Options configure an engine's open (storage/duckdb.Open, storage/postgres.OpenDB,
// storage/backends.Open): what each engine takes of them is its own.
type Options struct {
	// MemoryLimit is DuckDB's memory_limit, e.g. "1GB"; empty leaves DuckDB's default.
	MemoryLimit string
	// Threads is DuckDB's thread count; 0 leaves DuckDB's default.
	Threads int
	// LockTimeout is how long Open waits while another process holds the
	// file; zero means DefaultLockTimeout, negative means do not wait.
	LockTimeout time.Duration
	// OnLocked is called once, the first time Open finds the file locked,
	// with DuckDB's message naming the process that holds it.
	OnLocked func(msg string)
	// Now is the clock used for timestamps written to _ploti; default time.Now.
	Now func() time.Time
	// ReadOnly opens the file read-only (status, holds list). The file
	// must exist and be a ploti-replica file at this build's migration.
	ReadOnly bool
	// NoCreate makes Open fail with ErrNoFile rather than create a new
	// file: commands that only read or edit state never leave one behind.
	NoCreate bool
	// Geometry is how the tables store geometry columns: GeometryNative
	// or GeometryWKB. The file remembers it (a new file starts with
	// GeometryNative); a writing Open with the other one converts every
	// dataset table's geometry columns, in one transaction. Empty keeps
	// the file's.
	Geometry string
	// Logger receives what an open does on its own and does not fail
	// for (a PostgreSQL table from an earlier build given its storage
	// parameters, or left for the next open); nil discards it.
	Logger *slog.Logger
}

// DB is a replica's storage: the _ploti registry and the dataset tables,
// kept by an engine (an Engine: the DuckDB file of storage/duckdb, or the
// PostgreSQL database of storage/postgres). Its methods are the registry's
// rules, the same statements on every engine; what only some engines can
// do is asked of Engine() by type assertion (capabilities.go).
type DB struct {
	sql  *sql.DB
	path string
	now  func() time.Time
	be   Engine
	memo registryMemo // the registry's list within a sync (memo.go)
	run  openRun      // the sync's run, written by its first transaction (runs.go)
}

// Path is the file's path.
func (db *DB) Path() string { return db.path }

// SQL is the database handle for queries. In-process readers see the last
// committed state while a sync runs.
func (db *DB) SQL() *sql.DB { return db.sql }

// Now is the storage clock.
func (db *DB) Now() time.Time { return db.now().UTC() }

// Close closes the engine (and releases the writer's lock).
func (db *DB) Close() error { return db.be.Close() }

// Engine is the engine that keeps the replica: assert a capability on it
// (capabilities.go) to do what only some engines can.
func (db *DB) Engine() Engine { return db.be }

// Tx is a transaction with a fixed now: the registry's statements run on
// the engine's transaction, and the rows move through its Tables.
type Tx struct {
	tx  *sql.Tx
	db  *DB
	be  EngineTx
	Now time.Time
	// runID is the sync's run row this transaction wrote, and runGen
	// the run's generation (runs.go).
	runID  int64
	runGen uint64
}

// Begin starts a transaction.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	now := db.Now()
	db.memo.moved()
	btx, err := db.be.Begin(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	tx := &Tx{tx: btx.SQL(), db: db, be: btx, Now: now}
	if err := tx.writeRun(ctx); err != nil {
		btx.Rollback()
		return nil, err
	}
	return tx, nil
}

// Engine is the engine's transaction: assert a capability on it
// (capabilities.go) to do what only some engines can.
func (tx *Tx) Engine() EngineTx { return tx.be }

// Commit commits the transaction.
func (tx *Tx) Commit() error {
	defer tx.db.memo.moved()
	err := tx.be.Commit()
	tx.endRun(err == nil)
	return err
}

// Rollback aborts the transaction; after Commit it does nothing.
func (tx *Tx) Rollback() error {
	defer tx.db.memo.moved()
	err := tx.be.Rollback()
	tx.endRun(false)
	return err
}

// Exec runs a statement in the transaction.
func (tx *Tx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return tx.tx.ExecContext(ctx, q, args...)
}

// QueryRow runs a query returning one row in the transaction.
func (tx *Tx) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return tx.tx.QueryRowContext(ctx, q, args...)
}

// Query runs a query in the transaction.
func (tx *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return tx.tx.QueryContext(ctx, q, args...)
}

// Update runs fn in a transaction and commits it, or rolls it back on error.
func (db *DB) Update(ctx context.Context, fn func(tx *Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
