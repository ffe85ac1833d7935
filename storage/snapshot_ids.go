package storage

import (
	"context"
	"fmt"
)

// SnapshotIDChecker is the Tables of an engine that can check the record
// ids of many snapshots with one read of them all: the DuckDB file.
// PostgreSQL's loads check each snapshot as it loads it.
type SnapshotIDChecker interface {
	// CheckSnapshotIDs counts the null and repeated record ids of
	// one-file snapshots with one read of them all and keeps the counts
	// for the transaction: a LoadSnapshot or CreateSnapshot of one of
	// those files later in it refuses on them, in its own words, instead
	// of reading the ids again. A failure (a file unreadable) leaves the
	// transaction to the caller's rollback.
	CheckSnapshotIDs(ctx context.Context, files []string) error
}

var _ SnapshotIDChecker = (*Tx)(nil)

// idCounts are a snapshot's rows, null record ids and repeated ones.
type idCounts struct{ n, nulls, dups int64 }

// CheckSnapshotIDs is SnapshotIDChecker's, for the DuckDB file. Issue 18:
// a bootstrap's shared load of 400 small snapshots (1k–20k rows) spent
// 1.8–2.0 s in their checks one statement each, about 4.5 ms a snapshot,
// a third of the engine's statements; read together they took 0.8–1.0 s
// on one thread.
func (tx *Tx) CheckSnapshotIDs(ctx context.Context, files []string) error {
	if len(files) == 0 {
		return nil
	}
	if err := tx.fitThreads(ctx, false); err != nil {
		return err
	}
	id := Ident(ColRecordID)
	rows, err := tx.tx.QueryContext(ctx, fmt.Sprintf(`SELECT zz_ploti_file, count(*), count(*) - count(%[1]s), count(%[1]s) - count(DISTINCT %[1]s)
		FROM (SELECT CAST(%[1]s AS VARCHAR) AS %[1]s, zz_ploti_file
			FROM read_parquet(%[2]s, hive_partitioning = false, union_by_name = true, filename = 'zz_ploti_file'))
		GROUP BY zz_ploti_file`, id, fileList(files)))
	if err != nil {
		return fmt.Errorf("check record ids of %d snapshots: %w", len(files), err)
	}
	defer rows.Close()
	asked := make(map[string]bool, len(files))
	for _, f := range files {
		asked[f] = true
	}
	// Only a file DuckDB names as it was asked for is kept; any other
	// (a file of no rows has no group) is checked by its own load.
	got := make(map[string]idCounts, len(files))
	for rows.Next() {
		var f string
		var c idCounts
		if err := rows.Scan(&f, &c.n, &c.nulls, &c.dups); err != nil {
			return fmt.Errorf("check record ids of %d snapshots: %w", len(files), err)
		}
		if asked[f] {
			got[f] = c
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check record ids of %d snapshots: %w", len(files), err)
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
	return tx.checkRecordIDs(ctx, fmt.Sprintf("(SELECT CAST(%[1]s AS VARCHAR) AS %[1]s FROM %[2]s)", Ident(ColRecordID), parquetSource(files)))
}
