package postgres

import (
	"context"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// The second implementation of the seam (storage.Tables, documented
// there once).
var _ storage.Tables = (*Tx)(nil)

// MergeDeferred is MergeChanges: PostgreSQL checks a changes file as it
// merges it (the statement that updates and deletes also tells whether
// it fits), so there is nothing for FinishMerged to do. A changed row
// counts as deleted and inserted, as on the DuckDB engine.
func (tx *Tx) MergeDeferred(ctx context.Context, datasetID string, version int, table string, cols []ploti.Column, file string, rowsBefore int64) (storage.Merged, error) {
	st, err := tx.MergeChanges(ctx, datasetID, version, table, cols, file, rowsBefore)
	return storage.Merged{DatasetID: datasetID, Version: version, File: file,
		Deleted: st.Changed + st.Removed, Inserted: st.Added + st.Changed, Rows: st.Rows}, err
}

// FinishMerged does nothing: MergeDeferred checked and logged each file.
func (tx *Tx) FinishMerged(context.Context, []storage.Merged) error { return nil }

// LoadScratch builds a table from the snapshot as LoadSnapshot does, and
// leaves it out of the swaps: it is never renamed into place, and the
// caller's rollback drops it.
func (tx *Tx) LoadScratch(ctx context.Context, cols []ploti.Column, files []string) (string, int64, error) {
	n, err := tx.loadSnapshot(ctx, "_ploti_verify_snapshot", cols, files, true)
	if err != nil {
		return "", 0, err
	}
	s := tx.swaps[len(tx.swaps)-1]
	tx.swaps = tx.swaps[:len(tx.swaps)-1]
	return tx.db.table(s.built), n, nil
}

// The changes files of one version are checked together, as in a file.
var _ storage.ChangesIDChecker = (*Tx)(nil)

// CheckChangesIDs refuses a version's changes files that list a record id
// in more than one of them, read by the in-memory DuckDB as the DuckDB
// file reads them (duckread.ChangesIDsAcrossFiles).
func (tx *Tx) CheckChangesIDs(ctx context.Context, files []string) error {
	return duckread.ChangesIDsAcrossFiles(ctx, tx.db.duck, files)
}
