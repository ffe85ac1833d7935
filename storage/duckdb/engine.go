// Package duckdb is the engine that keeps a replica in a DuckDB file: the
// file's lifecycle (open and the writer's lock, WAL checks, damaged files,
// read-back, disk full, clones, publish, threads, the status summary kept
// beside it), its _ploti migrations, and the dataset tables' operations
// (storage.Tables: loads, merges, watched merges, id maps, streaming
// loads, history, the change log's reads). It is a sibling of the
// PostgreSQL engine behind storage.Engine, and neither imports the other:
// nothing above storage/backends names it.
package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// DB is an open DuckDB file with the _ploti schema migrated: the engine
// under a storage.DB.
type DB struct {
	sql      *sql.DB
	fc       *fileConnector  // DuckDB's connector, which Release closes and makes again
	opts     storage.Options // as opened: Release's resume opens it so again
	path     string
	now      func() time.Time
	readOnly bool
	storage  uint64                 // DuckDB storage version of the file
	pubSrc   *os.File               // the file opened by Publish; closed after DuckDB (see publishSource)
	chained  bool                   // Commit appends to _ploti.commit_log (walcheck.go)
	readable bool                   // read back whole at open, or created by it (damaged.go)
	geometry string                 // how the tables store geometry: GeometryNative or GeometryWKB
	facts    factCache              // changes files read ahead of their merges (inspect_changes.go)
	threads  threadCount            // DuckDB's threads: as opened, and now (threads.go)
	held     atomic.Int64           // the WAL's bound while checkpoints are held (hold.go); 0: none
	asides   atomic.Int64           // large merges' checks being read on connections of their own (aside.go)
	commits  atomic.Int64           // the engine's transactions this process committed (a close's summary spans none: summary.go)
	pending  pendingWrites          // what the commits since the last checkpoint wrote (light.go)
	catalog  atomic.Pointer[string] // DuckDB's name for the file's database, once read (catalogName)
	writer   string                 // the path holdWriter took for this writer; "" for none
	reg      *storage.DB            // the registry over this file
	ro       roHandle               // the read-only handle, once asked for (readonly.go)
}

var _ storage.Engine = (*DB)(nil)

// Name is the file's path.
func (db *DB) Name() string { return db.path }

// Path is the file's path.
func (db *DB) Path() string { return db.path }

// Schema is the schema of the dataset tables.
func (db *DB) Schema() string { return "main" }

// Geometry is how the file stores geometry columns: GeometryNative or
// GeometryWKB.
func (db *DB) Geometry() string { return db.geometry }

// SQL is the database handle for queries. In-process readers see the last
// committed state while a sync runs.
func (db *DB) SQL() *sql.DB { return db.sql }

// Now is the storage clock.
func (db *DB) Now() time.Time { return db.now().UTC() }

// Close closes the file, gathering every error.
func (db *DB) Close() error {
	errs := []error{db.closeReadOnly()} // before the connector it shares
	if db.sql != nil {
		errs = append(errs, db.sql.Close())
	}
	if db.fc != nil {
		errs = append(errs, db.fc.Close())
	}
	if db.pubSrc != nil { // only now: closing it drops DuckDB's lock
		errs = append(errs, db.pubSrc.Close())
	}
	err := errors.Join(errs...)
	releaseWriter(db.writer)
	db.writer = ""
	if err == nil && db.readable && !db.readOnly {
		// The file as this process left it, read whole at open and
		// written since by DuckDB: the next open, here or in another
		// process, need not read it again unless something else changes
		// it (readback.go).
		rememberReadBack(db.path)
	}
	return err
}

// Tx is the file's transaction: it implements storage.Tables and commits
// the registry's statements with the rows.
type Tx struct {
	tx  *sql.Tx
	db  *DB
	Now time.Time
	ids map[string]idCounts // snapshots' ids counted ahead (CheckSnapshotIDs)
	// small: the transaction holds bookkeeping and small merges only
	// (Small), whose commit gathers in the WAL while checkpoints are held
	// (hold.go).
	small bool
	// heavy and rows: what the transaction wrote, for the compression of
	// the checkpoint that writes it (light.go).
	heavy bool
	rows  map[string]int64
	// aside: large merges' file counts read on another connection
	// (aside.go), taken by FinishMerged.
	aside map[string]*asideCounts
}

var _ storage.EngineTx = (*Tx)(nil)

// Begin starts a transaction.
func (db *DB) Begin(ctx context.Context, now time.Time) (storage.EngineTx, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &Tx{tx: tx, db: db, Now: now}, nil
}

// SQL is the transaction the registry's statements run in.
func (tx *Tx) SQL() *sql.Tx { return tx.tx }

// Commit commits the transaction.
func (tx *Tx) Commit() error {
	defer tx.db.allThreads()
	tx.endAside()
	if !tx.db.chained {
		return tx.counted(tx.tx.Commit())
	}
	seq, err := tx.chainCommit()
	if err != nil {
		tx.tx.Rollback()
		return err
	}
	// DuckDB reads the setting as the transaction commits (global to the
	// open file; set within the transaction, it holds for its commit).
	if _, err := tx.tx.Exec("SET GLOBAL checkpoint_threshold = '" + tx.db.commitThreshold(tx.small) + "'"); err != nil {
		tx.tx.Rollback()
		return fmt.Errorf("commit: %w", err)
	}
	err = tx.tx.Commit()
	// Back to the threshold between commits, for writes through DB(); a
	// failure leaves this commit's, which the next commit sets again.
	tx.db.sql.Exec("SET GLOBAL checkpoint_threshold = '" + tx.db.betweenThreshold() + "'")
	if err := tx.counted(err); err != nil {
		return err
	}
	tx.db.pruneCommitLog(seq)
	return nil
}

// counted records a commit that succeeded (err nil): db.commits counts
// it, and db.pending takes what it wrote (light.go). It returns err.
func (tx *Tx) counted(err error) error {
	if err == nil {
		tx.db.commits.Add(1)
		tx.db.pending.add(tx.heavy, tx.rows)
	}
	return err
}

// Rollback aborts the transaction; after Commit it does nothing.
func (tx *Tx) Rollback() error {
	tx.endAside()
	err := tx.tx.Rollback()
	tx.db.allThreads()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
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

// update runs fn in a transaction of the registry over the file, with the
// file's own side of it, and commits it when fn returns nil.
func (db *DB) update(ctx context.Context, fn func(reg *storage.Tx, tx *Tx) error) error {
	return db.reg.Update(ctx, func(reg *storage.Tx) error { return fn(reg, reg.Engine().(*Tx)) })
}

// NilTx is a nil *Tx (storage.TxCan).
func (db *DB) NilTx() storage.EngineTx { return (*Tx)(nil) }

// What the file can do that not every engine can (storage's capabilities):
// a method whose signature drifts from its interface fails the build here
// rather than turn the feature off.
var (
	_ storage.Checkpointer      = (*DB)(nil)
	_ storage.CheckpointHolder  = (*DB)(nil)
	_ storage.SmallCommitter    = (*Tx)(nil)
	_ storage.Publisher         = (*DB)(nil)
	_ storage.SummaryCloser     = (*DB)(nil)
	_ storage.File              = (*DB)(nil)
	_ storage.ChangesInspector  = (*DB)(nil)
	_ storage.HistoryReader     = (*DB)(nil)
	_ storage.ChangeLogReader   = (*DB)(nil)
	_ storage.HistoryWriter     = (*Tx)(nil)
	_ storage.ReloadLogger      = (*Tx)(nil)
	_ storage.StreamLoader      = (*Tx)(nil)
	_ storage.SnapshotIDChecker = (*Tx)(nil)
	_ storage.ChangesIDChecker  = (*Tx)(nil)
)
