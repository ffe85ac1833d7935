package duckdb

import (
	"context"

	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// CheckChangesIDs is ChangesIDChecker's, for the DuckDB file.
func (tx *Tx) CheckChangesIDs(ctx context.Context, files []string) error {
	return duckread.ChangesIDsAcrossFiles(ctx, tx.tx, files)
}
