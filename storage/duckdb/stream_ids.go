package duckdb

import (
	"context"
	"fmt"

	"github.com/ploti-replica/ploti-replica/storage"
)

// streamIDs gathers a streamed load's record ids, hashed, as each run of
// row groups is inserted, in a temporary table of the load's connection.
// A load over a link waits for the wire between its runs, so the hashing
// costs nothing there; what is left after the last byte is the sort that
// finds a repeated hash, instead of reading, casting and hashing every
// id of the table then (about 0.8 s at 10M rows on two busy cores).
// Only a repeated hash sends the check to the table's ids themselves, so
// a hash collision never refuses a good snapshot.
type streamIDs struct {
	tx   *Tx
	name string
}

// newStreamIDs makes the temporary table.
func (tx *Tx) newStreamIDs(ctx context.Context) (streamIDs, error) {
	s := streamIDs{tx: tx, name: "temp.zz_ploti_stream_ids"}
	if _, err := tx.tx.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE zz_ploti_stream_ids (h UBIGINT)"); err != nil {
		return s, fmt.Errorf("stream load: %w", err)
	}
	return s, nil
}

// insertSQL adds the hashes of the record ids of rows (a query of the rows
// as stored; DuckDB reads only its id column), a null id as NULL.
func (s streamIDs) insertSQL(rows string) string {
	return fmt.Sprintf("INSERT INTO %[2]s SELECT CASE WHEN %[1]s IS NULL THEN NULL ELSE hash(CAST(%[1]s AS VARCHAR)) END FROM (%[3]s)",
		storage.Ident(storage.ColRecordID), s.name, rows)
}

// check counts the table's rows and the gathered null and repeated ids;
// a repeated hash is counted again on table, exactly (checkRecordIDs).
func (s streamIDs) check(ctx context.Context, table string) (n, nulls, dups int64, err error) {
	var hashDups int64
	err = s.tx.tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s), count(*) - count(h),
		(SELECT count(*) FROM (SELECT h = lag(h) OVER (ORDER BY h) AS same FROM %[2]s WHERE h IS NOT NULL) WHERE same)
		FROM %[2]s`, table, s.name)).Scan(&n, &nulls, &hashDups)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("check record ids: %w", err)
	}
	if hashDups > 0 {
		return s.tx.checkRecordIDs(ctx, recordIDsOf(table))
	}
	return n, nulls, 0, nil
}

// drop removes the temporary table (a rolled-back load's goes with its
// transaction's connection anyway).
func (s streamIDs) drop(ctx context.Context) {
	s.tx.tx.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+s.name)
}
