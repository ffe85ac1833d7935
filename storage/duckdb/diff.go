package duckdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// LogSnapshotDiff records in _ploti.changes, under version, how the rows
// of a version's snapshot files differ from the rows table holds: an id
// only in the files is added, one only in the table removed, one in both
// with any value different changed. It is what a dataset caught up from a
// later snapshot logs in place of each skipped version's changes
// (docs/decisions.md 34). Call it before the snapshot replaces the table;
// the files' ids are checked by the load that follows, in the same
// transaction. It returns how many changes it logged.
func (tx *Tx) LogSnapshotDiff(ctx context.Context, datasetID string, version int, table string, cols []ploti.Column, files []string) (int64, error) {
	tx.heavyWrite()
	if err := tx.fitThreads(ctx, smallFiles(files)); err != nil {
		return 0, err
	}
	_, types, err := tx.fileColumns(ctx, files)
	if err != nil {
		return 0, &storage.DataError{File: duckread.BaseNames(files), Detail: "not a readable Parquet snapshot: " + err.Error()}
	}
	sel, err := duckread.SelectList(cols, types)
	if err != nil {
		return 0, err
	}
	id := storage.Ident(storage.ColRecordID)
	differs := []string{fmt.Sprintf("n.%[1]s IS DISTINCT FROM o.%[1]s", storage.Ident(storage.ColPlaceID))}
	for _, c := range cols {
		differs = append(differs, fmt.Sprintf("n.%[1]s IS DISTINCT FROM o.%[1]s", storage.Ident(c.Name)))
	}
	n, err := tx.logSet(ctx, datasetID, version, fmt.Sprintf(`coalesce(n.%[1]s, o.%[1]s),
			CASE WHEN o.%[1]s IS NULL THEN 'added' WHEN n.%[1]s IS NULL THEN 'removed' ELSE 'changed' END
		FROM (%[2]s) n FULL OUTER JOIN main.%[3]s o ON n.%[1]s = o.%[1]s
		WHERE n.%[1]s IS NULL OR o.%[1]s IS NULL OR %[4]s`,
		id, tx.db.stored(fmt.Sprintf("SELECT %s FROM %s", sel, duckread.ParquetSource(files)), cols), storage.Ident(table), strings.Join(differs, " OR ")))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, fmt.Errorf("log changes of %s v%d: %w: %w", datasetID, version, cerr, err)
		}
		return 0, &storage.DataError{File: duckread.BaseNames(files), Detail: "compare with the table: " + err.Error()}
	}
	return n, nil
}
