//go:build duckdb_arrow

package storage

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// ArrowQuerier is an engine that reads a query's rows as Arrow record
// batches, with the read-only handle's rules (ReadOnlyQuerier): the
// DuckDB file, when built with -tags duckdb_arrow (duckdb-go's Arrow
// interface is behind that tag).
type ArrowQuerier interface {
	// QueryArrow runs q, one SELECT-like statement, in a READ ONLY
	// transaction on a connection of its own; the reader's last Release
	// ends the transaction and gives the connection back.
	QueryArrow(ctx context.Context, q string, args ...any) (array.RecordReader, error)
}
