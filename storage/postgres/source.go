package postgres

import (
	"bufio"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// fileColumns lists the columns of Parquet files (of the first, when
// several parts must agree), with the DuckDB type each is read as.
func (db *DB) fileColumns(ctx context.Context, src string) ([]string, map[string]string, error) {
	return duckread.SourceColumns(ctx, db.duck, src)
}

// errCopyEnded ends the DuckDB side of a COPY that PostgreSQL stopped.
var errCopyEnded = errors.New("copy ended")

// copyFrom runs query (exportSelect's) in the in-memory DuckDB and streams
// its rows to copySQL (a COPY … FROM STDIN (FORMAT binary)) on the writer's
// session: DuckDB reads and casts, Go writes the binary format through a
// pipe, PostgreSQL parses it, all at once. An error on the DuckDB side
// (a value that does not cast) is returned as DuckDB's, and PostgreSQL's
// COPY is cancelled; an error on PostgreSQL's side as its.
func (tx *Tx) copyFrom(ctx context.Context, copySQL, query string, args []any, encs []encoding) (int64, error) {
	pr, pw := io.Pipe()
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := tx.db.encode(ctx, query, args, encs, pw)
		pw.CloseWithError(err) // nil: EOF
		done <- result{n, err}
	}()
	_, cerr := tx.conn.PgConn().CopyFrom(ctx, pr, copySQL)
	pr.CloseWithError(errCopyEnded)
	res := <-done
	if res.err != nil && !errors.Is(res.err, errCopyEnded) && !errors.Is(res.err, io.ErrClosedPipe) {
		return 0, &duckError{res.err}
	}
	if cerr != nil {
		return 0, cerr
	}
	return res.n, nil
}

// duckError is an error of the DuckDB that reads the files.
type duckError struct{ err error }

func (e *duckError) Error() string { return e.err.Error() }
func (e *duckError) Unwrap() error { return e.err }

// encode runs query in the in-memory DuckDB and writes its rows to w in
// the binary COPY format, reading DuckDB's values at the driver's level
// (no database/sql conversions on the way).
func (db *DB) encode(ctx context.Context, query string, args []any, encs []encoding, w io.Writer) (int64, error) {
	conn, err := db.duck.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var n int64
	err = conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("the DuckDB driver does not query")
		}
		named := make([]driver.NamedValue, len(args))
		for i, a := range args {
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rows, err := q.QueryContext(ctx, query, named)
		if err != nil {
			return err
		}
		defer rows.Close()
		if got := len(rows.Columns()); got != len(encs) {
			return fmt.Errorf("export has %d columns, COPY %d", got, len(encs))
		}
		cw := newCopyWriter(bufio.NewWriterSize(w, 256<<10), encs)
		if err := cw.header(); err != nil {
			return err
		}
		vals := make([]driver.Value, len(encs))
		for {
			err := rows.Next(vals)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if err := cw.row(vals); err != nil {
				return err
			}
			n++
		}
		return cw.trailer()
	})
	return n, err
}

// copySQL is the COPY statement of a table's columns in the binary format.
func copySQL(table, columns string) string {
	return fmt.Sprintf("COPY %s (%s) FROM STDIN (FORMAT binary)", table, columns)
}

// isConversion tells a DuckDB error about a value that does not cast.
func isConversion(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Conversion Error") || strings.Contains(msg, "Invalid Input Error") || strings.Contains(msg, "Out of Range Error")
}

// dataFault tells whether a PostgreSQL error is about the rows' values
// (a data exception, class 22, or an integrity violation, class 23) or a
// geometry PostGIS refuses, rather than about the server.
func dataFault(err error) bool {
	pe := pgError(err)
	if pe == nil {
		return false
	}
	if strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23") {
		return true
	}
	m := strings.ToLower(pe.Message)
	return pe.Code == "XX000" && (strings.Contains(m, "geometry") || strings.Contains(m, "srid"))
}
