// Package duckread is DuckDB as the reader of Ploti's files, for every
// engine: the connector each DuckDB of the engines opens with (no
// extension downloads, UTC, storage that every DuckDB 1.x reads), the
// select lists and casts that read a snapshot or changes file (Parquet) or
// a watched dataset's rows (NDJSON) as a dataset table's rows, and the
// checks and refusals of what is read, so that the DuckDB file
// (storage/duckdb) and a PostgreSQL database (storage/postgres, which
// reads the files with an in-memory DuckDB and copies the rows) refuse the
// same files in the same words. It imports storage for the words (column
// names, DataError) and neither engine.
package duckread

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ploti-replica/ploti-replica/storage"
)

// RowQuerier runs a query of one row: a *sql.DB, *sql.Conn or *sql.Tx.
type RowQuerier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// CheckRecordIDs counts the rows of rel (a table or a subquery), its null
// record ids and its repeated ones, as a snapshot load checks them, in db
// (the DuckDB file's transaction, or the in-memory DuckDB that reads
// another engine's files). Repeats are looked for first among the ids'
// 64-bit hashes, sorted: no two equal hashes means no two equal ids, and
// at 10M rows this takes half the time of count(DISTINCT) over the strings
// (which was a sixth of a snapshot load). Equal hashes, a repeat or a
// collision, are settled by the exact count.
func CheckRecordIDs(ctx context.Context, db RowQuerier, rel string) (n, nulls, dups int64, err error) {
	id := storage.Ident(storage.ColRecordID)
	var hashDups int64
	err = db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*), count(*) - count(%[1]s),
		(SELECT count(*) FROM (SELECT h = lag(h) OVER (ORDER BY h) AS same FROM (SELECT hash(%[1]s) AS h FROM %[2]s WHERE %[1]s IS NOT NULL)) WHERE same)
		FROM %[2]s`, id, rel)).Scan(&n, &nulls, &hashDups)
	if err == nil && hashDups > 0 {
		dups, err = RepeatedIDs(ctx, db, rel)
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("check record ids: %w", err)
	}
	return n, nulls, dups, nil
}

// RepeatedIDs is the exact count of rel's repeated record ids (the ids
// that are not null, less the distinct ones), for a check whose hashes
// repeated.
func RepeatedIDs(ctx context.Context, db RowQuerier, rel string) (int64, error) {
	var dups int64
	err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(%[1]s) - count(DISTINCT %[1]s) FROM %[2]s`, storage.Ident(storage.ColRecordID), rel)).Scan(&dups)
	return dups, err
}

// SnapshotIDFaults refuses a snapshot whose record ids are null or repeat
// (nulls, dups), naming its files (names), in the same words on every
// engine; nil when there are none.
func SnapshotIDFaults(names string, nulls, dups int64) error {
	if nulls == 0 && dups == 0 {
		return nil
	}
	return &storage.DataError{File: names, Detail: fmt.Sprintf("snapshot has %d null and %d duplicate _ploti_record_id values", nulls, dups)}
}

// ExtraColumn refuses a file's column that the table's schema does not
// have, in the same words on every engine.
func ExtraColumn(name, col string) error {
	return &storage.DataError{File: name, Detail: fmt.Sprintf("has column %s that the table's schema does not", col)}
}
