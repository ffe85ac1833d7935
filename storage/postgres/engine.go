package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Engine is db as the storage.Engine a storage.DB is opened over
// (storage.OpenEngine): the registry's statements run through database/sql
// on the writer's session, and in its transactions the rows move through
// the same session's Tx.
func (db *DB) Engine() storage.Engine { return backend{db} }

// OpenDB opens the database at dsn as a replica's storage.DB, as the
// DuckDB engine's Open opens a DuckDB file.
func OpenDB(ctx context.Context, dsn string, opts Options) (*storage.DB, error) {
	db, err := Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return storage.OpenEngine(db.Engine(), storage.Options{Now: opts.Now, ReadOnly: opts.ReadOnly}), nil
}

type backend struct{ db *DB }

func (b backend) Name() string   { return b.db.name }
func (b backend) SQL() *sql.DB   { return b.db.pool }
func (b backend) Schema() string { return b.db.schema }
func (b backend) Close() error   { return b.db.Close() }

// Begin starts a transaction on the writer's session that both
// database/sql (the registry) and Tx (the rows) run in.
func (b backend) Begin(ctx context.Context, now time.Time) (storage.EngineTx, error) {
	if b.db.readOnly {
		return nil, fmt.Errorf("%s is open read-only", b.db.name)
	}
	// Not ctx itself: database/sql rolls a transaction back on a
	// goroutine of its own the moment its context ends, while the rows'
	// statements (a COPY, pgx's own calls on the same session) may still
	// be writing, and pgx's connection is not safe for two at once (it
	// panicked: "slow write timer already active"). Each statement still
	// ends with ctx; the caller rolls back (Update, apply.Batch.Abort).
	stx, err := b.db.pinned.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, err
	}
	return &backendTx{Tx: &Tx{conn: b.db.conn, db: b.db, Now: now}, sql: stx}, nil
}

// backendTx is a Tx whose BEGIN and COMMIT are database/sql's.
type backendTx struct {
	*Tx
	sql *sql.Tx
}

func (t *backendTx) SQL() *sql.Tx { return t.sql }

// Commit swaps in the tables the transaction's loads built, which commits
// in the swap's round trip (tx.go), and then ends database/sql's
// transaction: its COMMIT, after the locks are gone, finds none in
// progress when the swap committed.
func (t *backendTx) Commit() error {
	ctx := context.Background()
	if err := t.Tx.swapIn(ctx); err != nil {
		t.sql.Rollback()
		return err
	}
	if err := t.sql.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (t *backendTx) Rollback() error {
	err := t.sql.Rollback()
	if err == sql.ErrTxDone {
		return nil
	}
	return err
}
