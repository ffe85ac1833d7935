package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Tx is a transaction on the writer's session with a fixed now. Tables
// that loads build in it are swapped in by Commit (see swapIn).
type Tx struct {
	conn  *pgx.Conn // the writer's session, in BEGIN … COMMIT of our own (the swap's last round trip commits)
	db    *DB
	done  bool
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
	if _, err := db.conn.Exec(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return &Tx{conn: db.conn, db: db, Now: db.Now()}, nil
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
	if tx.done {
		return errors.New("commit: the transaction has ended")
	}
	if err := tx.swapIn(ctx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	if tx.done { // the swap committed
		return nil
	}
	tx.done = true
	tag, err := tx.conn.Exec(ctx, "COMMIT")
	if err == nil && tag.String() == "ROLLBACK" {
		err = errors.New("commit: the transaction was rolled back (an earlier statement failed)")
	}
	return err
}

// Rollback aborts the transaction; after Commit it does nothing.
func (tx *Tx) Rollback(ctx context.Context) error {
	if tx.done {
		return nil
	}
	tx.done = true
	_, err := tx.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	return err
}

// Exec runs a statement in the transaction.
func (tx *Tx) Exec(ctx context.Context, q string, args ...any) (pgconn.CommandTag, error) {
	return tx.conn.Exec(ctx, q, args...)
}

// QueryRow runs a query returning one row in the transaction.
func (tx *Tx) QueryRow(ctx context.Context, q string, args ...any) pgx.Row {
	return tx.conn.QueryRow(ctx, q, args...)
}

// Query runs a query in the transaction.
func (tx *Tx) Query(ctx context.Context, q string, args ...any) (pgx.Rows, error) {
	return tx.conn.Query(ctx, q, args...)
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
	// Everything but the lock is worked out first, so that the locks are
	// held for one round trip of statements that ends with the commit.
	var names, stmts []string
	for _, s := range tx.swaps {
		var exists bool
		t, built := tx.db.table(s.table), tx.db.table(s.built)
		if err := tx.conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", t).Scan(&exists); err != nil {
			return fmt.Errorf("swap in %s: %w", s.table, err)
		}
		if exists {
			grants, err := tx.grants(ctx, t, built)
			if err != nil {
				return fmt.Errorf("swap in %s: %w", s.table, err)
			}
			names = append(names, t)
			stmts = append(append(stmts, grants...), "DROP TABLE "+t)
		}
		stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s RENAME TO %s", built, ident(s.table)))
		for i, ix := range s.indexes {
			stmts = append(stmts, fmt.Sprintf("ALTER INDEX %s.%s RENAME TO %s", ident(tx.db.schema), ident(ix), ident(s.final[i])))
		}
	}
	// The commit goes in the same round trip: the server holds the locks
	// only while it renames and commits, whatever the client's machine
	// does meanwhile.
	err := tx.lockTables(ctx, names, strings.Join(append(stmts, "COMMIT"), ";\n"))
	if pe := pgError(err); pe != nil && pe.Code == "2BP01" { // dependent_objects_still_exist
		return fmt.Errorf("swap in: a table has objects that depend on it (%s): a reload replaces the table, so drop them, or build them on a copy: %w",
			firstLine(pe.Detail), err)
	}
	if err != nil {
		return fmt.Errorf("swap in: %w", err)
	}
	tx.swaps, tx.done = nil, true
	return nil
}

// lockTables takes the ACCESS EXCLUSIVE locks of tables (qualified names)
// for the rest of the transaction and runs then (statements) in the same
// round trip; each try waits at most SwapWait for the locks, and while
// readers hold them it lets the readers queued behind it go on and tries
// again.
func (tx *Tx) lockTables(ctx context.Context, tables []string, then string) error {
	if then != "" {
		then = ";\n" + then
	}
	if len(tables) == 0 {
		if then == "" {
			return nil
		}
		_, err := tx.conn.Exec(ctx, then[2:])
		return err
	}
	// First tries: NOWAIT, which never queues readers behind the
	// writer; it succeeds in a moment when no query reads the table. A
	// table that is never free of readers that long gets tries that wait
	// up to SwapWait each (the readers that come meanwhile queue behind).
	batch := func(wait string) string {
		return fmt.Sprintf(`SET LOCAL lock_timeout = %d; SAVEPOINT ploti_lock;
		LOCK TABLE %s IN ACCESS EXCLUSIVE MODE%s;
		RELEASE SAVEPOINT ploti_lock; SET LOCAL lock_timeout TO DEFAULT%s`,
			max(1, tx.db.swapWait.Milliseconds()), strings.Join(tables, ", "), wait, then)
	}
	nowait, waiting := batch(" NOWAIT"), batch("")
	patient := time.Now().Add(swapNoWaitFor)
	for attempt := 0; ; attempt++ {
		q, pause := nowait, time.Duration(1+rand.Int64N(3))*time.Millisecond
		if time.Now().After(patient) {
			q, pause = waiting, time.Duration(5+rand.Int64N(20))*time.Millisecond
		}
		_, err := tx.conn.Exec(ctx, q)
		if err == nil {
			return nil
		}
		if pe := pgError(err); pe == nil || pe.Code != "55P03" { // lock_not_available
			return err
		}
		if _, err := tx.conn.Exec(ctx, "ROLLBACK TO SAVEPOINT ploti_lock; SET LOCAL lock_timeout TO DEFAULT"); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

// swapNoWaitFor is how long a swap tries to take its tables with NOWAIT
// before it waits (SwapWait) in the readers' queue.
const swapNoWaitFor = 2 * time.Second

// grants are the GRANT statements that give built the privileges old
// has (a BI server's role keeps reading across a reload).
func (tx *Tx) grants(ctx context.Context, old, built string) ([]string, error) {
	rows, err := tx.conn.Query(ctx, `SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END,
			a.privilege_type, a.is_grantable
		FROM pg_class c, aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
		WHERE c.oid = $1::regclass AND a.grantee <> c.relowner`, old)
	if err != nil {
		return nil, fmt.Errorf("read grants: %w", err)
	}
	defer rows.Close()
	var grants []string
	for rows.Next() {
		var who, priv string
		var opt bool
		if err := rows.Scan(&who, &priv, &opt); err != nil {
			return nil, err
		}
		g := fmt.Sprintf("GRANT %s ON %s TO %s", priv, built, who)
		if opt {
			g += " WITH GRANT OPTION"
		}
		grants = append(grants, g)
	}
	return grants, rows.Err()
}

// maxIdent is PostgreSQL's longest identifier in bytes (NAMEDATALEN-1).
const maxIdent = 63

// shortName is name, or when it is longer than PostgreSQL keeps, its
// start and a hash of it.
func shortName(name string) string { return storage.CutIdent(name, name, maxIdent) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
