package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// HistoryStates reads the state of every history the file keeps, by
// dataset id (a history set aside is under its relabelled id).
func (db *DB) HistoryStates(ctx context.Context) (map[string]storage.HistoryState, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT dataset_id, max(version), min(version), arg_max(source, version)
		FROM _ploti.history_versions GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("read the histories: %w", err)
	}
	defer rows.Close()
	out := map[string]storage.HistoryState{}
	for rows.Next() {
		var id string
		st := storage.HistoryState{Started: true}
		if err := rows.Scan(&id, &st.Last, &st.Oldest, &st.Source); err != nil {
			return nil, err
		}
		out[id] = st
	}
	return out, rows.Err()
}

// historyCut is what PruneHistory drops of one history: the rows that
// ended at or before version cut, the ends up to it, and the versions
// listed before it.
type historyCut struct {
	datasetID, table string
	cut              int
}

// PruneHistory bounds every history of a dataset in the registry: it keeps
// the answers as of each of a dataset's keepVersions latest recorded
// versions and as of every time after before (zero values: no bound of
// that kind; a version is dropped only when both bounds let it go). What
// can no longer be read as of a kept version goes: rows that ended at or
// before the oldest kept version, their ends, and the versions listed
// before it. A mark keeps what it has not seen (the holds say which). It
// returns how many rows it deleted.
func (tx *Tx) PruneHistory(ctx context.Context, keepVersions int, before time.Time) (int64, []storage.MarkHold, error) {
	if keepVersions <= 0 && before.IsZero() {
		return 0, nil, nil
	}
	tx.heavyWrite()
	var at any
	if !before.IsZero() {
		at = before
	}
	rows, err := tx.tx.QueryContext(ctx, `WITH v AS (
			SELECT dataset_id, version, max(coalesce(published_at, recorded_at)) AS t FROM _ploti.history_versions GROUP BY ALL),
		ranked AS (SELECT *, row_number() OVER (PARTITION BY dataset_id ORDER BY version DESC) AS rank FROM v),
		bounds AS (SELECT dataset_id, min(version) AS oldest,
				max(version) FILTER (WHERE ? > 0 AND rank = ?) AS by_count,
				max(version) FILTER (WHERE t <= ?) AS by_age
			FROM ranked GROUP BY 1),
		cut AS (SELECT dataset_id, oldest, CASE WHEN ? > 0 AND by_count IS NULL OR ? IS NOT NULL AND by_age IS NULL THEN NULL
				ELSE least(by_count, by_age) END AS cut FROM bounds),
		marks AS (SELECT dataset_id, arg_min(name, version) AS mark, min(version) AS seen FROM _ploti.marks GROUP BY 1)
		SELECT c.dataset_id, d.table_name, c.cut, m.mark, m.seen, c.oldest
		FROM cut c JOIN _ploti.datasets d USING (dataset_id) LEFT JOIN marks m USING (dataset_id)
		WHERE c.cut > c.oldest ORDER BY 1`,
		keepVersions, keepVersions, at, keepVersions, at)
	if err != nil {
		return 0, nil, fmt.Errorf("prune the histories: %w", err)
	}
	var cuts []historyCut
	var holds []storage.MarkHold
	for rows.Next() {
		var c historyCut
		var mark sql.NullString
		var seen sql.NullInt64
		var oldest int
		if err := rows.Scan(&c.datasetID, &c.table, &c.cut, &mark, &seen, &oldest); err != nil {
			rows.Close()
			return 0, nil, err
		}
		if seen.Valid && int(seen.Int64) < c.cut {
			holds = append(holds, storage.MarkHold{Mark: mark.String, DatasetID: c.datasetID, Version: int(seen.Int64)})
			c.cut = int(seen.Int64)
		}
		if c.cut > oldest {
			cuts = append(cuts, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	var total int64
	for _, c := range cuts {
		n, err := tx.pruneHistoryTo(ctx, c)
		if err != nil {
			return total, holds, err
		}
		total += n
	}
	return total, holds, nil
}

// pruneHistoryTo drops what one history cannot show as of c.cut or later.
func (tx *Tx) pruneHistoryTo(ctx context.Context, c historyCut) (int64, error) {
	rowsT := historyRows + "." + storage.Ident(c.table)
	res, err := tx.tx.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %[1]s r WHERE EXISTS (SELECT 1 FROM _ploti.history_ends e
		WHERE e.dataset_id = ? AND e.record_id = r.%[2]s AND e.valid_to > r.%[3]s AND e.valid_to <= ?)`,
		rowsT, storage.Ident(storage.ColRecordID), storage.Ident(storage.ColValidFrom)), c.datasetID, c.cut)
	if err != nil {
		return 0, fmt.Errorf("prune the history of %s before v%d: %w", c.datasetID, c.cut, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	for _, q := range []string{
		"DELETE FROM _ploti.history_ends WHERE dataset_id = ? AND valid_to <= ?",
		"DELETE FROM _ploti.history_versions WHERE dataset_id = ? AND version < ?",
	} {
		if _, err := tx.tx.ExecContext(ctx, q, c.datasetID, c.cut); err != nil {
			return n, fmt.Errorf("prune the history of %s before v%d: %w", c.datasetID, c.cut, err)
		}
	}
	return n, nil
}
