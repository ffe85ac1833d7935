package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// ChangesIDChecker is the Tables of an engine that checks a version's
// changes files (its parts) together: both engines. Each merge checks
// its own file's ids; a record id listed in two parts of one version
// would be applied twice (the second part winning, silently) and logged
// twice in _ploti.changes.
type ChangesIDChecker interface {
	// CheckChangesIDs refuses, with a DataError, the changes files of one
	// version when a record id is listed in more than one of them
	// (docs/wire.md 5: a record id is unique in a version). One file, or
	// none, has nothing to check.
	CheckChangesIDs(ctx context.Context, files []string) error
}

// ChangesIDsAcrossFiles is CheckChangesIDs's read, in the DuckDB q (the
// file's transaction, or the in-memory DuckDB that reads another
// engine's files): the same refusal, in the same words, on both engines.
func ChangesIDsAcrossFiles(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}, files []string) error {
	if len(files) < 2 {
		return nil
	}
	id := Ident(ColRecordID)
	var repeated int64
	var first *string
	err := q.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*), min(%[1]s) FROM (
			SELECT %[1]s FROM %[2]s WHERE %[1]s IS NOT NULL GROUP BY %[1]s HAVING count(DISTINCT zz_ploti_file) > 1)`,
		id, ByFile(files, ColRecordID))).Scan(&repeated, &first)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("check record ids of %d changes files: %w: %w", len(files), cerr, err)
		}
		return &DataError{File: baseNames(files), Detail: "read: " + err.Error()}
	}
	if repeated > 0 {
		return &DataError{File: baseNames(files), Detail: fmt.Sprintf("changes files list %d _ploti_record_id values in more than one file (e.g. %s)", repeated, *first)}
	}
	return nil
}
