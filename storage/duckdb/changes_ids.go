package duckdb

import (
	"context"

	"github.com/ploti-replica/ploti-replica/storage"
)

// CheckChangesIDs is ChangesIDChecker's, for the DuckDB file.
func (tx *Tx) CheckChangesIDs(ctx context.Context, files []string) error {
	return storage.ChangesIDsAcrossFiles(ctx, tx.tx, files)
}
