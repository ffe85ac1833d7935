//go:build duckdb_arrow

package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	ddb "github.com/duckdb/duckdb-go/v2"

	"github.com/ploti-replica/ploti-replica/storage"
)

var _ storage.ArrowQuerier = (*DB)(nil)

// QueryArrow runs q as the read-only handle runs a query (one SELECT-like
// statement, in a READ ONLY transaction) on a connection of the file's own
// pool, held until the reader's last Release, which ends the transaction
// and gives the connection back: the record batches are duckdb-go's,
// read from DuckDB's result as they are asked for.
func (db *DB) QueryArrow(ctx context.Context, q string, args ...any) (array.RecordReader, error) {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var rr array.RecordReader
	err = conn.Raw(func(dc any) error {
		c := dc.(*ddb.Conn)
		if err := readsOnly(ctx, c, q); err != nil {
			return err
		}
		if err := beginReadOnly(ctx, c); err != nil {
			return err
		}
		a, err := ddb.NewArrowFromConn(c)
		if err == nil {
			rr, err = a.QueryContext(ctx, q, args...)
		}
		if err != nil {
			return errors.Join(readOnlyErr(err), endReadOnly(c, false))
		}
		return nil
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	ar := &arrowReader{RecordReader: rr, conn: conn}
	ar.refs.Store(1)
	return ar, nil
}

// arrowReader is duckdb-go's reader of a query's batches, whose last
// Release also commits the query's transaction and closes its connection.
type arrowReader struct {
	array.RecordReader
	conn *sql.Conn
	refs atomic.Int64
	once sync.Once
	err  error
}

func (r *arrowReader) Retain() {
	r.refs.Add(1)
	r.RecordReader.Retain()
}

func (r *arrowReader) Release() {
	r.RecordReader.Release()
	if r.refs.Add(-1) != 0 {
		return
	}
	r.once.Do(func() {
		err := r.conn.Raw(func(dc any) error { return endReadOnly(dc.(*ddb.Conn), true) })
		r.err = errors.Join(err, r.conn.Close())
	})
}

// Err is the reader's error, or the end of its transaction's once
// released.
func (r *arrowReader) Err() error {
	if err := r.RecordReader.Err(); err != nil {
		return err
	}
	return r.err
}
