package duckdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// originsSQL is a relation (id, origin) of the records of a history rows
// table whose history began under another id. Most tables have none, and
// the filter on _ploti_origin_id skips their row groups by statistics.
func originsSQL(rowsT string) string {
	return fmt.Sprintf(`(SELECT %[1]s AS id, arg_max(%[2]s, %[3]s) AS origin FROM %[4]s WHERE %[2]s IS NOT NULL GROUP BY 1)`,
		storage.Ident(storage.ColRecordID), storage.Ident(storage.ColOriginID), storage.Ident(storage.ColValidFrom), rowsT)
}

// historyInsertColumns lists the columns a history row is inserted with:
// the dataset's, then the meta columns.
func historyInsertColumns(cols []ploti.Column) string {
	return duckread.ColumnNames(cols) + ", " + strings.Join([]string{storage.Ident(storage.ColValidFrom), storage.Ident(storage.ColValidFromAt), storage.Ident(storage.ColHistChange), storage.Ident(storage.ColOriginID)}, ", ")
}

// MergeHistory records a changes merge of files (the version's changes
// files, already merged into the table) in the dataset's history, in the
// merge's transaction: each changed and removed id ends its row, and each
// added and changed row is appended, read again from the file (it is
// small; the table is not). A changed record keeps the origin of its
// history. The history must have cols.
func (tx *Tx) MergeHistory(ctx context.Context, hv storage.HistoryVersion, cols []ploti.Column, files []string) error {
	// Small files keep the threads their merge just fitted (one for a
	// small table's): a walk of small merges would otherwise switch
	// DuckDB's threads twice a version.
	if !smallFiles(files) {
		if err := tx.fitThreads(ctx, false); err != nil {
			return err
		}
	}
	rowsT := rowsTable(hv)
	for _, file := range files {
		fs := []string{file}
		_, types, err := tx.fileColumns(ctx, fs)
		if err != nil {
			return fmt.Errorf("record %s v%d in its history: %w", hv.DatasetID, hv.Version, duckread.FileError(fs, err))
		}
		sel, err := duckread.SelectList(cols, types)
		if err != nil {
			return err
		}
		src := duckread.ParquetSource(fs)
		if _, err := tx.tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO _ploti.history_ends (dataset_id, record_id, valid_to, valid_to_at)
			SELECT ?, %s, ?, ? FROM %s WHERE %s IN ('changed', 'removed')`, storage.Ident(storage.ColRecordID), duckread.FileIDsSQL(src), storage.Ident(storage.ColChange)),
			hv.DatasetID, hv.Version, hv.PublishedAt); err != nil {
			return fmt.Errorf("record %s v%d in its history: ends: %w", hv.DatasetID, hv.Version, err)
		}
		casts, err := tx.historyCasts(ctx, hv.Table, cols)
		if err != nil {
			return err
		}
		rowsQ := tx.db.stored(fmt.Sprintf(`SELECT %[1]s, CAST(%[2]s AS VARCHAR) AS __change FROM %[3]s WHERE CAST(%[2]s AS VARCHAR) IN ('added', 'changed')`,
			sel, storage.Ident(storage.ColChange), src), cols)
		q := fmt.Sprintf(`INSERT INTO %[1]s (%[2]s)
			SELECT %[3]s, ?, ?, f.__change, CASE WHEN f.__change = 'changed' THEN o.origin END
			FROM (%[4]s) f LEFT JOIN %[5]s o ON o.id = f.%[6]s`,
			rowsT, historyInsertColumns(cols), castedColumns("f.", cols, casts), rowsQ, originsSQL(rowsT), storage.Ident(storage.ColRecordID))
		res, err := tx.tx.ExecContext(ctx, q, hv.Version, hv.PublishedAt)
		if err != nil {
			return fmt.Errorf("record %s v%d in its history: rows: %w", hv.DatasetID, hv.Version, err)
		}
		// The rows appended count toward a light checkpoint as a merge's
		// own do (light.go); an unknown count makes it heavy.
		n, err := res.RowsAffected()
		if err != nil {
			tx.heavyWrite()
		}
		tx.touched(rowsT, n)
	}
	return tx.recordVersion(ctx, hv, storage.VersionMerge)
}

// ReloadHistory records a reload in the dataset's history, in the
// reload's transaction, once the table holds the new version (hv, of
// columns cols): the rows the history says are current (the held
// version's) are compared with the table's by record id, through the id
// maps of mapVersions (oldest first) when the version replaced ids, and
// only what differs is recorded: a held id gone ends its row; a new id
// opens one (added); a held record whose values differ, or that now
// carries another id, ends its row and opens another (changed, renamed:
// its history goes on under the new id). Values are compared over every
// column the history has: a column the version no longer has is NULL in
// its rows. With logChanges the changes also go to _ploti.changes (marks
// read them). Re-recording the version last recorded (a repair, a
// rebootstrap) replaces what that version opened for the records that
// differ. It returns how many records differed.
func (tx *Tx) ReloadHistory(ctx context.Context, hv storage.HistoryVersion, cols []ploti.Column, mapVersions []int, logChanges bool) (int64, error) {
	tx.heavyWrite()
	if err := tx.fitThreads(ctx, false); err != nil {
		return 0, err
	}
	if err := tx.WidenHistory(ctx, hv.DatasetID, hv.Table, cols); err != nil {
		return 0, err
	}
	have, err := tx.historyColumns(ctx, hv.Table)
	if err != nil {
		return 0, err
	}
	rowsT := rowsTable(hv)
	data, differs := reloadCompare(have, cols)
	// The held rows: current in the history (no end after them).
	held := fmt.Sprintf(`(SELECT %[1]s, r.%[2]s AS __from, r.%[3]s AS __origin FROM %[4]s r WHERE NOT EXISTS (SELECT 1 FROM _ploti.history_ends e
		WHERE e.dataset_id = %[5]s AND e.record_id = r.%[6]s AND e.valid_to > r.%[2]s))`,
		strings.Join(data, ", "), storage.Ident(storage.ColValidFrom), storage.Ident(storage.ColOriginID), rowsT, storage.Literal(hv.DatasetID), storage.Ident(storage.ColRecordID))
	heldTemp := tempName("held_rows")
	if _, err := tx.tx.ExecContext(ctx, fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT * FROM %s", storage.Ident(heldTemp), held)); err != nil {
		return 0, fmt.Errorf("record the reload of %s v%d in its history: %w", hv.DatasetID, hv.Version, err)
	}
	defer tx.tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+storage.Ident(heldTemp))
	ids, drop, err := tx.heldIDs(ctx, fmt.Sprintf("(SELECT %s AS id FROM %s)", storage.Ident(storage.ColRecordID), storage.Ident(heldTemp)), hv.DatasetID, mapVersions)
	if err != nil {
		return 0, err
	}
	defer drop()
	diff := tempName("diff")
	q := fmt.Sprintf(`CREATE TEMP TABLE %[1]s AS
		SELECT coalesce(n.%[2]s, o.held) AS id, o.held AS held_id, o.__from AS held_from,
			CASE WHEN o.held IS NULL THEN 'added' WHEN n.%[2]s IS NULL THEN 'removed' WHEN o.held <> o.now THEN 'renamed' ELSE 'changed' END AS change,
			CASE WHEN o.held IS NULL OR n.%[2]s IS NULL THEN NULL WHEN o.held <> o.now THEN coalesce(o.__origin, o.held) ELSE o.__origin END AS origin
		FROM main.%[3]s n
		FULL JOIN (SELECT h.*, m.held, m.now FROM %[4]s h JOIN %[5]s m ON m.held = h.%[2]s) o ON n.%[2]s = o.now
		WHERE o.held IS NULL OR n.%[2]s IS NULL OR o.held <> o.now OR %[6]s`,
		storage.Ident(diff), storage.Ident(storage.ColRecordID), storage.Ident(hv.Table), storage.Ident(heldTemp), ids, strings.Join(append(differs, "false"), " OR "))
	if _, err := tx.tx.ExecContext(ctx, q); err != nil {
		return 0, fmt.Errorf("compare %s v%d with the rows its history holds: %w", hv.DatasetID, hv.Version, err)
	}
	defer tx.tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+storage.Ident(diff))
	casts, err := tx.historyCasts(ctx, hv.Table, cols)
	if err != nil {
		return 0, err
	}
	return tx.recordDiff(ctx, hv, cols, casts, diff, logChanges)
}

// reloadCompare is, for a reload to cols of a history whose columns are
// have, the history rows' data columns (as r.<column>) and the terms that
// tell a held row (o) from the new one (n): a column of the version
// compared by value, a column it lacks as not NULL before.
func reloadCompare(have []historyColumn, cols []ploti.Column) (data, differs []string) {
	inSchema := map[string]bool{storage.ColRecordID: true, storage.ColPlaceID: true}
	for _, c := range cols {
		inSchema[c.Name] = true
	}
	for _, c := range have {
		if metaColumns[c.name] {
			continue
		}
		data = append(data, "r."+storage.Ident(c.name))
		switch {
		case c.name == storage.ColRecordID:
		case inSchema[c.name]:
			differs = append(differs, fmt.Sprintf("CAST(n.%[1]s AS %[2]s) IS DISTINCT FROM o.%[1]s", storage.Ident(c.name), c.typ))
		default: // a column the version lacks: NULL now
			differs = append(differs, fmt.Sprintf("o.%s IS NOT NULL", storage.Ident(c.name)))
		}
	}
	return data, differs
}

// recordDiff writes a reload's differences (the temporary table diff: id,
// held_id, held_from, change, origin) to the history: rows the version
// itself had opened are replaced, others ended; the new rows appended.
func (tx *Tx) recordDiff(ctx context.Context, hv storage.HistoryVersion, cols []ploti.Column, casts map[string]string, diff string, logChanges bool) (int64, error) {
	rowsT, d := rowsTable(hv), storage.Ident(diff)
	stmts := []struct {
		what, q string
		args    []any
	}{
		{"replace", fmt.Sprintf(`DELETE FROM %[1]s WHERE %[2]s = ? AND %[3]s IN (SELECT held_id FROM %[4]s WHERE held_from = ?)`,
			rowsT, storage.Ident(storage.ColValidFrom), storage.Ident(storage.ColRecordID), d), []any{hv.Version, hv.Version}},
		{"end", fmt.Sprintf(`INSERT INTO _ploti.history_ends (dataset_id, record_id, valid_to, valid_to_at)
			SELECT ?, held_id, ?, ? FROM %s WHERE held_id IS NOT NULL AND held_from < ?`, d), []any{hv.DatasetID, hv.Version, hv.PublishedAt, hv.Version}},
		{"append", fmt.Sprintf(`INSERT INTO %[1]s (%[2]s) SELECT %[3]s, ?, ?, d.change, d.origin FROM main.%[4]s n JOIN %[5]s d ON d.id = n.%[6]s
			WHERE d.change <> 'removed'`, rowsT, historyInsertColumns(cols), castedColumns("n.", cols, casts), storage.Ident(hv.Table), d, storage.Ident(storage.ColRecordID)),
			[]any{hv.Version, hv.PublishedAt}},
	}
	if logChanges {
		for _, q := range storage.LogOneSetSQL(hv.DatasetID, hv.Version, "id, change FROM "+d) {
			stmts = append(stmts, struct {
				what, q string
				args    []any
			}{"log", q, nil})
		}
	}
	for _, s := range stmts {
		if _, err := tx.tx.ExecContext(ctx, s.q, s.args...); err != nil {
			return 0, fmt.Errorf("record the reload of %s v%d in its history: %s: %w", hv.DatasetID, hv.Version, s.what, err)
		}
	}
	var n int64
	if err := tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM "+d).Scan(&n); err != nil {
		return 0, err
	}
	return n, tx.recordVersion(ctx, hv, storage.VersionReload)
}
