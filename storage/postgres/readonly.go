package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ploti-replica/ploti-replica/storage"
)

// The database's read-only handle (storage.ReadOnlyQuerier): a pool of
// its own over the same URL, whose sessions start with
// default_transaction_read_only on, and in which every query runs in a
// transaction begun READ ONLY. The session's default alone would not do:
// a query may SET it off for the next ones. Statements go by the extended
// protocol (one statement each: "COMMIT; INSERT …" is refused by the
// server), never pgx's simple protocol, which a caller could otherwise
// ask for with a pgx.QueryExecMode argument, and which pgx uses for an
// Exec without arguments.

var _ storage.ReadOnlyQuerier = backend{}

// roHandle is the database's read-only pool, made at the first ReadOnlySQL.
type roHandle struct {
	once sync.Once
	db   *sql.DB
}

// ReadOnlySQL is a handle that reads the committed state and cannot write:
// each query runs in a READ ONLY transaction of its own, and BeginTx
// begins a READ ONLY, REPEATABLE READ transaction (SERIALIZABLE when
// asked) whatever else its options say, so that its queries read one
// snapshot. A write fails with PostgreSQL's "cannot execute … in a
// read-only transaction", wrapped in storage.ErrReadOnly.
func (b backend) ReadOnlySQL() *sql.DB {
	db := b.db
	db.ro.once.Do(func() {
		cfg := db.cfg.Copy()
		cfg.RuntimeParams["search_path"] = db.schema + ", public" // a reader's schema is the database's
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
		db.ro.db = sql.OpenDB(roConnector{stdlib.GetConnector(*cfg)})
		db.ro.db.SetMaxIdleConns(2)
	})
	return db.ro.db
}

// closeReadOnly closes the read-only pool (one made now, never
// connected, is closed too: ReadOnlySQL after Close is a closed *sql.DB,
// not nil).
func (db *DB) closeReadOnly() error { return backend{db}.ReadOnlySQL().Close() }

// roConnector makes the read-only pool's sessions.
type roConnector struct{ inner driver.Connector }

func (c roConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &roConn{sqlConn: &sqlConn{dc.(*stdlib.Conn)}}, nil
}

func (c roConnector) Driver() driver.Driver { return c.inner.Driver() }

// readOnlyErr wraps storage.ErrReadOnly around PostgreSQL's refusal of a
// write in a read-only transaction (SQLSTATE 25006).
func readOnlyErr(err error) error {
	if pe := pgError(err); pe != nil && pe.Code == "25006" {
		return fmt.Errorf("%w: %w", storage.ErrReadOnly, err)
	}
	return err
}

// errTxEnded refuses a query of the caller's transaction after a query of
// it ended it (COMMIT or ROLLBACK as a query): it would run outside any
// read-only transaction.
var errTxEnded = fmt.Errorf("%w: the transaction was ended by a query of it", storage.ErrReadOnly)

// values are a query's arguments as pgx takes them (stdlib's own
// conversion: database/sql has checked them).
func values(args []driver.NamedValue) []any {
	v := make([]any, len(args))
	for i, a := range args {
		v[i] = a.Value
	}
	return v
}

// pgxOption tells whether v is one of pgx's query options, which pgx
// takes from a query's first arguments.
func pgxOption(v any) bool {
	switch v.(type) {
	case pgx.QueryExecMode, pgx.QueryRewriter, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
		return true
	}
	return false
}

// beginTx begins the caller's read-only transaction at one snapshot: at
// least REPEATABLE READ, and a first query, after which PostgreSQL no
// longer lets SET TRANSACTION READ WRITE change it.
func beginTx(ctx context.Context, conn *pgx.Conn, opts driver.TxOptions) (pgx.Tx, error) {
	iso := pgx.RepeatableRead
	if sql.IsolationLevel(opts.Isolation) == sql.LevelSerializable {
		iso = pgx.Serializable
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	var one int
	if err := tx.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		tx.Rollback(context.Background())
		return nil, err
	}
	return tx, nil
}

// endTx commits (or rolls back) a transaction, whatever became of the
// query's context.
func endTx(tx pgx.Tx, commit bool) error {
	if commit {
		return tx.Commit(context.Background())
	}
	err := tx.Rollback(context.Background())
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}
