package duckdb

import (
	"context"
	"database/sql/driver"
	"errors"
	"reflect"

	ddb "github.com/duckdb/duckdb-go/v2"
)

// roConn is one of the read-only handle's connections: a connection of
// the engine's DuckDB whose queries readsOnly lets through, each run in a
// READ ONLY transaction (its own, or the caller's from BeginTx).
type roConn struct {
	c    *ddb.Conn
	tx   bool // the caller's transaction (BeginTx) is open
	auto bool // a query's own transaction is open, until its rows close
}

var (
	_ driver.QueryerContext     = (*roConn)(nil)
	_ driver.ExecerContext      = (*roConn)(nil)
	_ driver.ConnPrepareContext = (*roConn)(nil)
	_ driver.ConnBeginTx        = (*roConn)(nil)
	_ driver.NamedValueChecker  = (*roConn)(nil)
	_ driver.SessionResetter    = (*roConn)(nil)
)

func (c *roConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if err := readsOnly(ctx, c.c, q); err != nil {
		return nil, err
	}
	return c.query(ctx, func() (driver.Rows, error) { return c.c.QueryContext(ctx, q, args) })
}

func (c *roConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if err := readsOnly(ctx, c.c, q); err != nil {
		return nil, err
	}
	return c.exec(ctx, func() (driver.Result, error) { return c.c.ExecContext(ctx, q, args) })
}

// PrepareContext checks q once; each execution of the statement runs in
// a read-only transaction. q is one statement, so preparing it runs
// nothing.
func (c *roConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if err := readsOnly(ctx, c.c, q); err != nil {
		return nil, err
	}
	st, err := c.c.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &roStmt{st: st, c: c}, nil
}

func (c *roConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

// BeginTx begins a READ ONLY transaction whatever opts say: the queries
// in it read one snapshot.
func (c *roConn) BeginTx(ctx context.Context, _ driver.TxOptions) (driver.Tx, error) {
	if c.tx || c.auto {
		return nil, errors.New("read-only handle: a transaction is already open on the connection")
	}
	if err := beginReadOnly(ctx, c.c); err != nil {
		return nil, err
	}
	c.tx = true
	return roTx{c}, nil
}

func (c *roConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// CheckNamedValue is duckdb-go's, so that its argument types work.
func (c *roConn) CheckNamedValue(nv *driver.NamedValue) error { return c.c.CheckNamedValue(nv) }

// ResetSession drops a connection left inside a transaction (it never
// is: rows and transactions end theirs).
func (c *roConn) ResetSession(context.Context) error {
	if c.tx || c.auto {
		return driver.ErrBadConn
	}
	return nil
}

func (c *roConn) Close() error { return c.c.Close() }

// query runs a query that returns rows, in the caller's transaction or in
// one of its own that the rows' Close commits.
func (c *roConn) query(ctx context.Context, run func() (driver.Rows, error)) (driver.Rows, error) {
	if c.tx {
		rows, err := run()
		return rows, readOnlyErr(err)
	}
	if err := beginReadOnly(ctx, c.c); err != nil {
		return nil, err
	}
	c.auto = true
	rows, err := run()
	if err != nil {
		return nil, errors.Join(readOnlyErr(err), c.end(false))
	}
	return &roRows{Rows: rows, c: c}, nil
}

// exec runs a statement, in the caller's transaction or in one of its own.
func (c *roConn) exec(ctx context.Context, run func() (driver.Result, error)) (driver.Result, error) {
	if c.tx {
		res, err := run()
		return res, readOnlyErr(err)
	}
	if err := beginReadOnly(ctx, c.c); err != nil {
		return nil, err
	}
	c.auto = true
	res, err := run()
	if err != nil {
		return nil, errors.Join(readOnlyErr(err), c.end(false))
	}
	return res, c.end(true)
}

// end ends the query's own transaction.
func (c *roConn) end(commit bool) error {
	c.auto = false
	return endReadOnly(c.c, commit)
}

// roStmt is a statement prepared on the handle: each execution runs as
// the connection's queries do.
type roStmt struct {
	st driver.Stmt
	c  *roConn
}

func (s *roStmt) Close() error  { return s.st.Close() }
func (s *roStmt) NumInput() int { return s.st.NumInput() }

func (s *roStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.query(ctx, func() (driver.Rows, error) { return s.st.(driver.StmtQueryContext).QueryContext(ctx, args) })
}

func (s *roStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.exec(ctx, func() (driver.Result, error) { return s.st.(driver.StmtExecContext).ExecContext(ctx, args) })
}

// Exec and Query are database/sql's older calls, which it makes only
// without the Context ones.
func (s *roStmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, errors.New("read-only handle: Stmt.Exec without a context")
}

func (s *roStmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, errors.New("read-only handle: Stmt.Query without a context")
}

// roRows are a query's rows; their Close ends the query's own
// transaction, if it has one.
type roRows struct {
	driver.Rows
	c *roConn
}

func (r *roRows) Close() error {
	err := r.Rows.Close()
	return errors.Join(err, r.c.end(true))
}

func (r *roRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *roRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// roTx is the caller's READ ONLY transaction.
type roTx struct{ c *roConn }

func (t roTx) Commit() error {
	t.c.tx = false
	return endReadOnly(t.c.c, true)
}

func (t roTx) Rollback() error {
	t.c.tx = false
	return endReadOnly(t.c.c, false)
}
