package postgres

import (
	"context"
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

// copyFrom runs query (exportSelect's) in the in-memory DuckDB of the
// exports and streams its rows to copySQL (a COPY … FROM STDIN (FORMAT
// binary)) on the writer's session: DuckDB reads and casts, Go writes the
// binary format from DuckDB's data chunks through a pipe, PostgreSQL
// parses it, all at once. An error on the DuckDB side
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

// encode runs query in the DuckDB of the exports and writes its rows to
// w in the binary COPY format, from its data chunks (copyWriter).
func (db *DB) encode(ctx context.Context, query string, args []any, encs []encoding, w io.Writer) (int64, error) {
	cw := newCopyWriter(w, encs)
	if err := db.chunks.stream(ctx, query, args, cw); err != nil {
		return cw.rows, err
	}
	return cw.rows, cw.trailer()
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
