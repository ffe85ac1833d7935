package storage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// What another engine needs to read downloaded files through an in-memory
// DuckDB exactly as this package reads them into the file (storage/postgres
// reads Parquet and NDJSON with DuckDB and COPYs the rows to PostgreSQL):
// the same select lists, casts, checks and refusals, so both engines refuse
// the same files in the same words.

// FitMark starts the engine's own errors raised inside DuckDB statements
// (error(...) in a cast, a MERGE's ERROR clause), to tell them from DuckDB's.
const FitMark = fitMark

// ParquetSource is the read_parquet call that reads files (hive
// partitioning off).
func ParquetSource(files []string) string { return parquetSource(files) }

// SelectList is the select list that reads a file's columns as a dataset
// table's: system columns, then schema columns cast to their DuckDB types
// (fileTypes: the types DuckDB reads the file's columns as).
func SelectList(cols []ploti.Column, fileTypes map[string]string) (string, error) {
	return selectList(cols, fileTypes)
}

// CheckColumns makes sure a file has every column the table needs; extra
// lists the further columns it must carry.
func CheckColumns(have []string, cols []ploti.Column, extra ...string) error {
	return checkColumns(have, cols, extra...)
}

// ColumnsFromFile is the schema used when none is known: every column the
// file has but the system ones, typed as DuckDB reads them.
func ColumnsFromFile(have []string) []ploti.Column { return columnsFromFile(have) }

// BaseNames joins the files' base names, for errors.
func BaseNames(files []string) string { return baseNames(files) }

// FileIDsSQL is a query of a changes file's record ids and kinds of change
// from src, a read_parquet call.
func FileIDsSQL(src string) string { return fileIDsSQL(src) }

// FileFaults refuses a changes file with null or repeated record ids or
// unknown kinds of change.
func FileFaults(name string, nulls, dups, bad int64) error { return fileFaults(name, nulls, dups, bad) }

// JSONRowsQuery is the SELECT of NDJSON row files as a dataset table's
// rows (see rows.go); where, when set, filters the rows read.
func JSONRowsQuery(files []string, cols []ploti.Column, where string) (string, error) {
	return jsonRowsQuery(files, cols, where)
}

// JSONError tells a row that does not fit (a DataError) from any other
// failure of a statement that read NDJSON rows.
func JSONError(file string, err error) error { return jsonError(file, err) }

// CheckRecordIDs counts the rows of rel (a table or a subquery), its null
// record ids and its repeated ones, as a snapshot load checks them (see
// Tx.checkRecordIDs, which it mirrors for a DuckDB that is not the file).
func CheckRecordIDs(ctx context.Context, db *sql.DB, rel string) (n, nulls, dups int64, err error) {
	id := Ident(ColRecordID)
	var hashDups int64
	err = db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*), count(*) - count(%[1]s),
		(SELECT count(*) FROM (SELECT h = lag(h) OVER (ORDER BY h) AS same FROM (SELECT hash(%[1]s) AS h FROM %[2]s WHERE %[1]s IS NOT NULL)) WHERE same)
		FROM %[2]s`, id, rel)).Scan(&n, &nulls, &hashDups)
	if err == nil && hashDups > 0 {
		err = db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(%[1]s) - count(DISTINCT %[1]s) FROM %[2]s`, id, rel)).Scan(&dups)
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("check record ids: %w", err)
	}
	return n, nulls, dups, nil
}
