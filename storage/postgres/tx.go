package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tx is a transaction on the writer's session with a fixed now. Tables
// that loads build in it are swapped in by Commit (see swapIn).
type Tx struct {
	tx    pgx.Tx
	db    *DB
	Now   time.Time
	swaps []swap
}

// swap is a dataset table built by a load, to replace table at commit.
type swap struct {
	table   string   // the dataset table's name
	built   string   // the new table's name while it is built
	indexes []string // its indexes' names while built, and …
	final   []string // … once swapped in
}

// Begin starts a transaction.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	tx, err := db.conn.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return &Tx{tx: tx, db: db, Now: db.Now()}, nil
}

// Update runs fn in a transaction and commits it, or rolls it back on error.
func (db *DB) Update(ctx context.Context, fn func(tx *Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Commit swaps in the tables the transaction's loads built and commits.
func (tx *Tx) Commit(ctx context.Context) error {
	if err := tx.swapIn(ctx); err != nil {
		tx.tx.Rollback(ctx)
		return err
	}
	return tx.tx.Commit(ctx)
}

// Rollback aborts the transaction; after Commit it does nothing.
func (tx *Tx) Rollback(ctx context.Context) error {
	err := tx.tx.Rollback(ctx)
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}

// Exec runs a statement in the transaction.
func (tx *Tx) Exec(ctx context.Context, q string, args ...any) (pgconn.CommandTag, error) {
	return tx.tx.Exec(ctx, q, args...)
}

// QueryRow runs a query returning one row in the transaction.
func (tx *Tx) QueryRow(ctx context.Context, q string, args ...any) pgx.Row {
	return tx.tx.QueryRow(ctx, q, args...)
}

// Query runs a query in the transaction.
func (tx *Tx) Query(ctx context.Context, q string, args ...any) (pgx.Rows, error) {
	return tx.tx.Query(ctx, q, args...)
}

// swapIn puts each built table in its dataset table's place, just before
// the commit: the old table (if any) is dropped and the built one renamed,
// with the grants the old one had.
//
// Readers never wait for a load: the rows were copied into a table no
// reader sees, and only the swap takes the old table from its readers
// (DROP and RENAME need its ACCESS EXCLUSIVE lock). While the writer
// waits for that lock, PostgreSQL queues every new reader of the table
// behind it; so each try waits at most SwapWait (lock_timeout), then
// lets the queue go, and tries again a little later. Once it has the
// locks, the swap and the commit take a few milliseconds. A reader in READ
// COMMITTED (PostgreSQL's default) sees the old version or the new one,
// whole.
func (tx *Tx) swapIn(ctx context.Context) error {
	if len(tx.swaps) == 0 {
		return nil
	}
	old := map[string]bool{}
	var names []string
	for _, s := range tx.swaps {
		var exists bool
		if err := tx.tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", tx.db.table(s.table)).Scan(&exists); err != nil {
			return fmt.Errorf("swap in %s: %w", s.table, err)
		}
		if exists {
			old[s.table] = true
			names = append(names, tx.db.table(s.table))
		}
	}
	if err := tx.lockTables(ctx, names); err != nil {
		return fmt.Errorf("swap in: %w", err)
	}
	for _, s := range tx.swaps {
		if err := tx.swapOne(ctx, s, old[s.table]); err != nil {
			return fmt.Errorf("swap in %s: %w", s.table, err)
		}
	}
	tx.swaps = nil
	return nil
}

// lockTables takes the ACCESS EXCLUSIVE locks of tables (qualified names)
// for the rest of the transaction, each try waiting at most SwapWait, and
// trying again while readers hold them.
func (tx *Tx) lockTables(ctx context.Context, tables []string) error {
	if len(tables) == 0 {
		return nil
	}
	if _, err := tx.tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(1, tx.db.swapWait.Milliseconds()))); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if _, err := tx.tx.Exec(ctx, "SAVEPOINT ploti_lock"); err != nil {
			return err
		}
		_, err := tx.tx.Exec(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN ACCESS EXCLUSIVE MODE")
		if err == nil {
			_, err := tx.tx.Exec(ctx, "RELEASE SAVEPOINT ploti_lock; SET LOCAL lock_timeout TO DEFAULT")
			return err
		}
		if pe := pgError(err); pe == nil || pe.Code != "55P03" { // lock_not_available
			return fmt.Errorf("lock %s: %w", strings.Join(tables, ", "), err)
		}
		if _, err := tx.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT ploti_lock"); err != nil {
			return err
		}
		// Let the readers queued behind the try go on; try again soon.
		pause := time.Duration(1+min(attempt, 8)) * 5 * time.Millisecond
		pause += time.Duration(rand.Int64N(int64(pause)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

// swapOne replaces one dataset table by its built table.
func (tx *Tx) swapOne(ctx context.Context, s swap, exists bool) error {
	t, built := tx.db.table(s.table), tx.db.table(s.built)
	if exists {
		if err := tx.copyGrants(ctx, t, built); err != nil {
			return err
		}
		if _, err := tx.tx.Exec(ctx, "DROP TABLE "+t); err != nil {
			if pe := pgError(err); pe != nil && pe.Code == "2BP01" { // dependent_objects_still_exist
				return fmt.Errorf("%s has objects that depend on it (%s): a reload replaces the table, so drop them, or build them on a copy: %w",
					s.table, firstLine(pe.Detail), err)
			}
			return err
		}
	}
	if _, err := tx.tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s RENAME TO %s", built, ident(s.table))); err != nil {
		return err
	}
	for i, ix := range s.indexes {
		q := fmt.Sprintf("ALTER INDEX %s.%s RENAME TO %s", ident(tx.db.schema), ident(ix), ident(s.final[i]))
		if _, err := tx.tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// copyGrants gives the built table the privileges the old one had (a BI
// server's role keeps reading across a reload).
func (tx *Tx) copyGrants(ctx context.Context, old, built string) error {
	rows, err := tx.tx.Query(ctx, `SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END,
			a.privilege_type, a.is_grantable
		FROM pg_class c, aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
		WHERE c.oid = $1::regclass AND a.grantee <> c.relowner`, old)
	if err != nil {
		return fmt.Errorf("read grants: %w", err)
	}
	var grants []string
	for rows.Next() {
		var who, priv string
		var opt bool
		if err := rows.Scan(&who, &priv, &opt); err != nil {
			rows.Close()
			return err
		}
		g := fmt.Sprintf("GRANT %s ON %s TO %s", priv, built, who)
		if opt {
			g += " WITH GRANT OPTION"
		}
		grants = append(grants, g)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, g := range grants {
		if _, err := tx.tx.Exec(ctx, g); err != nil {
			return fmt.Errorf("copy grants: %w", err)
		}
	}
	return nil
}

// maxIdent is PostgreSQL's longest identifier in bytes (NAMEDATALEN-1).
const maxIdent = 63

// shortName is name, or when it is longer than PostgreSQL keeps, its
// start and a hash of it.
func shortName(name string) string {
	if len(name) <= maxIdent {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return name[:maxIdent-9] + "_" + hex.EncodeToString(h[:4])
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
