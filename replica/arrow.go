//go:build duckdb_arrow

package replica

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ploti-replica/ploti-replica/storage"
)

// QueryArrow reads a query's rows as Arrow record batches, with
// ReadOnly()'s rules: one SELECT-like statement (ErrReadOnly otherwise),
// run in a READ ONLY transaction on a connection of the file's own that
// the reader holds until its last Release, which ends the transaction and
// gives the connection back: release every reader. A batch's values
// (strings too) are in memory that goes with the batch, at the next Next
// or the Release: copy what you keep. A replica kept in
// PostgreSQL has none (ErrFileOnly): query ReadOnly() there. Only in a
// build with -tags duckdb_arrow.
func (r *Replica) QueryArrow(ctx context.Context, query string, args ...any) (array.RecordReader, error) {
	return queryArrow(ctx, r.db, query, args...)
}

// QueryArrow is Replica.QueryArrow for a reader.
func (r *Reader) QueryArrow(ctx context.Context, query string, args ...any) (array.RecordReader, error) {
	return queryArrow(ctx, r.db, query, args...)
}

func queryArrow(ctx context.Context, db *storage.DB, query string, args ...any) (array.RecordReader, error) {
	a, err := storage.Can[storage.ArrowQuerier](db.Engine(), "Arrow record batches are")
	if err != nil {
		return nil, fmt.Errorf("query arrow: %w: query ReadOnly() with database/sql instead", err)
	}
	return a.QueryArrow(ctx, query, args...)
}
