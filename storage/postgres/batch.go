package postgres

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// batch runs statements without arguments in one round trip, by the
// simple protocol, in order, and returns each one's result (values in
// text; empty statements are left out); the first that fails stops the rest and its error is returned
// with the results before it. A statement whose values must be given
// puts them in as literals (storage.Literal): every statement of a
// writer's transaction costs a round trip, and two when pgx describes
// it first, which on a busy machine is a wait for the server's process
// and then for this one's, each time.
func batch(ctx context.Context, conn *pgx.Conn, stmts ...string) ([]*pgconn.Result, error) {
	results, err := conn.PgConn().Exec(ctx, joinStatements(stmts...)).ReadAll()
	for _, r := range results {
		if r.Err != nil && err == nil {
			err = r.Err
		}
	}
	return results, err
}

// textValue is one value of a result row in text: nil for NULL.
type textValue []byte

// int64 reads the value as an integer (0 for NULL).
func (v textValue) int64() (int64, error) {
	if v == nil {
		return 0, nil
	}
	return strconv.ParseInt(string(v), 10, 64)
}

// str reads the value as text (nil for NULL).
func (v textValue) str() *string {
	if v == nil {
		return nil
	}
	s := string(v)
	return &s
}

// firstRow is the first row of the result at i, or an error when it has
// none.
func firstRow(results []*pgconn.Result, i int) ([]textValue, error) {
	if i >= len(results) || len(results[i].Rows) == 0 {
		return nil, errors.New("a statement of the batch returned no row")
	}
	row := make([]textValue, len(results[i].Rows[0]))
	for j, v := range results[i].Rows[0] {
		row[j] = v
	}
	return row, nil
}
