package duckread

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ploti-replica/ploti-replica/storage"
)

// ChangesIDsAcrossFiles is CheckChangesIDs's read, in the DuckDB q (the
// file's transaction, or the in-memory DuckDB that reads another
// engine's files): the same refusal, in the same words, on both engines.
func ChangesIDsAcrossFiles(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}, files []string) error {
	if len(files) < 2 {
		return nil
	}
	id := storage.Ident(storage.ColRecordID)
	var repeated int64
	var first *string
	err := q.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*), min(%[1]s) FROM (
			SELECT %[1]s FROM %[2]s WHERE %[1]s IS NOT NULL GROUP BY %[1]s HAVING count(DISTINCT zz_ploti_file) > 1)`,
		id, ByFile(files, storage.ColRecordID))).Scan(&repeated, &first)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("check record ids of %d changes files: %w: %w", len(files), cerr, err)
		}
		return &storage.DataError{File: BaseNames(files), Detail: "read: " + err.Error()}
	}
	if repeated > 0 {
		return &storage.DataError{File: BaseNames(files), Detail: fmt.Sprintf("changes files list %d _ploti_record_id values in more than one file (e.g. %s)", repeated, *first)}
	}
	return nil
}
