package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ploti-replica/ploti-replica/storage"
)

// roConn is a session of the read-only pool: its queries run in a READ
// ONLY transaction, their own or the caller's (BeginTx).
type roConn struct {
	*sqlConn
	tx pgx.Tx // the caller's transaction, while open
}

func (c *roConn) pgx() *pgx.Conn { return c.sqlConn.Conn.Conn() }

// CheckNamedValue refuses pgx's query options as arguments: one of them
// could ask for the simple protocol, which runs several statements.
func (c *roConn) CheckNamedValue(nv *driver.NamedValue) error {
	if pgxOption(nv.Value) {
		return fmt.Errorf("%w: pgx's query options (%T) are not taken", storage.ErrReadOnly, nv.Value)
	}
	return c.sqlConn.CheckNamedValue(nv)
}

func (c *roConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	tx, own, err := c.within(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.sqlConn.QueryContext(ctx, q, args)
	if err != nil {
		return nil, errors.Join(readOnlyErr(err), c.endOwn(tx, own, false))
	}
	if !own {
		return rows, nil
	}
	return &roRows{Rows: rows.(*stdlib.Rows), tx: tx}, nil
}

// ExecContext runs q by the extended protocol (pgx's Exec without
// arguments would use the simple one).
func (c *roConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	tx, own, err := c.within(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.pgx().Query(ctx, placeholders(q), values(args)...)
	if err == nil {
		for rows.Next() {
		}
		rows.Close()
		err = rows.Err()
	}
	if err != nil {
		return nil, errors.Join(readOnlyErr(err), c.endOwn(tx, own, false))
	}
	return driver.RowsAffected(rows.CommandTag().RowsAffected()), c.endOwn(tx, own, true)
}

func (c *roConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := c.sqlConn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &roStmt{st: st.(*stdlib.Stmt), c: c}, nil
}

func (c *roConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

// BeginTx begins a READ ONLY transaction at one snapshot (beginTx),
// whatever opts say.
func (c *roConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.tx != nil {
		return nil, errors.New("read-only handle: a transaction is already open on the session")
	}
	tx, err := beginTx(ctx, c.pgx(), opts)
	if err != nil {
		return nil, err
	}
	c.tx = tx
	return roTx{c}, nil
}

func (c *roConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// within is the transaction a query runs in: the caller's (own false),
// refused once a query of it ended it, or one of the query's own.
func (c *roConn) within(ctx context.Context) (tx pgx.Tx, own bool, err error) {
	if c.tx != nil {
		if c.pgx().PgConn().TxStatus() == 'I' {
			return nil, false, errTxEnded
		}
		return c.tx, false, nil
	}
	tx, err = c.pgx().BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, false, err
	}
	return tx, true, nil
}

// endOwn ends the query's own transaction; the caller's is left open.
func (c *roConn) endOwn(tx pgx.Tx, own, commit bool) error {
	if !own {
		return nil
	}
	return endTx(tx, commit)
}

// roRows are a query's rows; their Close commits its own transaction.
type roRows struct {
	*stdlib.Rows
	tx pgx.Tx
}

func (r *roRows) Close() error {
	err := r.Rows.Close()
	return errors.Join(err, endTx(r.tx, err == nil))
}

// roStmt is a prepared statement of the read-only pool: each execution
// runs as the session's queries do (by its name: one statement).
type roStmt struct {
	st *stdlib.Stmt
	c  *roConn
}

func (s *roStmt) Close() error  { return s.st.Close() }
func (s *roStmt) NumInput() int { return s.st.NumInput() }

func (s *roStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	tx, own, err := s.c.within(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.QueryContext(ctx, args)
	if err != nil {
		return nil, errors.Join(readOnlyErr(err), s.c.endOwn(tx, own, false))
	}
	if !own {
		return rows, nil
	}
	return &roRows{Rows: rows.(*stdlib.Rows), tx: tx}, nil
}

func (s *roStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	tx, own, err := s.c.within(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.st.ExecContext(ctx, args)
	if err != nil {
		return nil, errors.Join(readOnlyErr(err), s.c.endOwn(tx, own, false))
	}
	return res, s.c.endOwn(tx, own, true)
}

func (s *roStmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, errors.New("read-only handle: Stmt.Exec without a context")
}

func (s *roStmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, errors.New("read-only handle: Stmt.Query without a context")
}

// roTx is the caller's transaction.
type roTx struct{ c *roConn }

func (t roTx) Commit() error {
	tx := t.c.tx
	t.c.tx = nil
	return endTx(tx, true)
}

func (t roTx) Rollback() error {
	tx := t.c.tx
	t.c.tx = nil
	return endTx(tx, false)
}
