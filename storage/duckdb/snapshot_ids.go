package duckdb

import (
	"context"
	"fmt"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

var _ storage.SnapshotIDChecker = (*Tx)(nil)

// idCounts are a snapshot's rows, null record ids and repeated ones.
type idCounts struct{ n, nulls, dups int64 }

// CheckSnapshotIDs is SnapshotIDChecker's, for the DuckDB file.
// a bootstrap's shared load of 400 small snapshots (1k–20k rows) spent
// 1.8–2.0 s in their checks one statement each, about 4.5 ms a snapshot,
// a third of the engine's statements; read together they took 0.8–1.0 s
// on one thread. The read runs on the file's own thread count: across
// many files it is work to share.
//
// A file asked for twice is read once; the first load of it uses the
// count and any other checks itself. The files' id columns are read by
// name under one type (union_by_name): one that loses precision (BIGINT
// ids beside another dataset's DOUBLE) can make two ids look equal, a
// refusal that fails the shared transaction and sends each load to its
// own check; it cannot hide a repeated id.
func (tx *Tx) CheckSnapshotIDs(ctx context.Context, files []string) error {
	if len(files) == 0 {
		return nil
	}
	asked := make(map[string]bool, len(files))
	var once []string
	for _, f := range files {
		if !asked[f] {
			asked[f] = true
			once = append(once, f)
		}
	}
	if err := tx.fitThreads(ctx, false); err != nil {
		return err
	}
	id := storage.Ident(storage.ColRecordID)
	rows, err := tx.tx.QueryContext(ctx, fmt.Sprintf(`SELECT zz_ploti_file, count(*), count(*) - count(%[1]s), count(%[1]s) - count(DISTINCT %[1]s)
		FROM %[2]s GROUP BY zz_ploti_file`, id, duckread.ByFile(once, storage.ColRecordID)))
	if err != nil {
		return fmt.Errorf("check record ids of %d snapshots: %w", len(once), err)
	}
	defer rows.Close()
	// Only a file DuckDB names as it was asked for is kept; any other
	// (a file of no rows has no group) is checked by its own load.
	got := make(map[string]idCounts, len(files))
	for rows.Next() {
		var f string
		var c idCounts
		if err := rows.Scan(&f, &c.n, &c.nulls, &c.dups); err != nil {
			return fmt.Errorf("check record ids of %d snapshots: %w", len(once), err)
		}
		if asked[f] {
			got[f] = c
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check record ids of %d snapshots: %w", len(once), err)
	}
	tx.ids = got
	return nil
}

// snapshotIDs counts a snapshot's rows and its null and repeated record
// ids: from CheckSnapshotIDs's counts when it read them, else from the
// files.
func (tx *Tx) snapshotIDs(ctx context.Context, files []string) (n, nulls, dups int64, err error) {
	if len(files) == 1 {
		if c, ok := tx.ids[files[0]]; ok {
			delete(tx.ids, files[0])
			return c.n, c.nulls, c.dups, nil
		}
	}
	return tx.checkRecordIDs(ctx, recordIDsOf(duckread.ParquetSource(files)))
}

// recordIDsOf is a query of rel's record ids as VARCHAR, for checkRecordIDs.
func recordIDsOf(rel string) string {
	return fmt.Sprintf("(SELECT CAST(%[1]s AS VARCHAR) AS %[1]s FROM %[2]s)", storage.Ident(storage.ColRecordID), rel)
}
