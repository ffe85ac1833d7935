package postgres

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// MergeWatch applies a storage.WatchMerge (recorded watch versions worked
// out by apply) to its table in the transaction, as the DuckDB engine
// does: one DELETE removes the held ids the versions touched and tells
// whether they fit (each held, no added id held); the touched records'
// rows are read from their NDJSON files by the in-memory DuckDB and
// COPY'd in; each version's changes, renames and id references follow.
// Rows that do not fit, an added id the table holds, a touched id it does
// not hold, or a row missing from its file are refused with a
// storage.DataError, and the caller's rollback leaves the held version.
func (tx *Tx) MergeWatch(ctx context.Context, m storage.WatchMerge) (storage.MergeStats, error) {
	var st storage.MergeStats
	t := tx.rel(m.Table)
	if len(m.Held)+len(m.New) > 0 {
		n, err := tx.deleteTouched(ctx, t, m)
		if err != nil {
			return st, err
		}
		st.Removed = n
	}
	for _, src := range m.Rows {
		n, err := tx.insertRows(ctx, t, m.Columns, src)
		if err != nil {
			return st, err
		}
		st.Added += n
	}
	if err := tx.logWatch(ctx, m); err != nil {
		return st, err
	}
	st.Rows = -1
	if m.RowsBefore >= 0 {
		st.Rows = m.RowsBefore - st.Removed + st.Added
	} else if err := tx.conn.QueryRow(ctx, "SELECT count(*) FROM "+t).Scan(&st.Rows); err != nil {
		return st, err
	}
	return st, nil
}

// deleteTouched deletes the held ids a watch merge touched, in one pass
// that refuses an added id the table holds and a touched id it does not.
func (tx *Tx) deleteTouched(ctx context.Context, t string, m storage.WatchMerge) (int64, error) {
	ids, kinds := make([]string, 0, len(m.Held)+len(m.New)), make([]string, 0, len(m.Held)+len(m.New))
	for _, h := range m.Held {
		ids, kinds = append(ids, h.ID), append(kinds, "held")
	}
	for _, h := range m.New {
		ids, kinds = append(ids, h.ID), append(kinds, "new")
	}
	var newHeld, deleted int64
	var firstNew, notHeld *string
	err := tx.conn.QueryRow(ctx, fmt.Sprintf(`WITH m AS (SELECT * FROM unnest($1::text[], $2::text[]) AS m(id, k)),
			d AS (DELETE FROM %[1]s t USING m WHERE t.%[2]s = m.id RETURNING m.id, m.k)
		SELECT count(*) FILTER (WHERE k = 'new'), min(id) FILTER (WHERE k = 'new'), count(*) FILTER (WHERE k = 'held'),
			CASE WHEN count(*) FILTER (WHERE k = 'held') <> $3 THEN
				(SELECT min(x.id) FROM m x WHERE x.k = 'held' AND NOT EXISTS (SELECT 1 FROM d WHERE d.id = x.id))
			END
		FROM d`, t, ident(storage.ColRecordID)), ids, kinds, int64(len(m.Held))).Scan(&newHeld, &firstNew, &deleted, &notHeld)
	if err != nil {
		return 0, fmt.Errorf("merge %s: delete: %w", m.DatasetID, err)
	}
	switch {
	case newHeld > 0:
		return 0, &storage.DataError{Detail: "changes do not fit the held version: " + describeTouch(m.New, deref(firstNew)) + " is already held"}
	case deleted != int64(len(m.Held)):
		detail := fmt.Sprintf("%d of the %d ids the changes touch are held", deleted, len(m.Held))
		if notHeld != nil {
			detail = describeTouch(m.Held, *notHeld) + " is not held"
		}
		return 0, &storage.DataError{Detail: "changes do not fit the held version: " + detail}
	}
	return deleted, nil
}

// describeTouch names what a version did to id: "id r7 that version 13
// renamed" (as the DuckDB engine's refusals do).
func describeTouch(ts []storage.Touch, id string) string {
	for _, t := range ts {
		if t.ID == id {
			return fmt.Sprintf("id %s that version %d %s", id, t.Version, t.Change)
		}
	}
	return "id " + id
}

// insertRows COPYs the rows of src's ids from its NDJSON file into t, and
// makes sure each id came exactly once.
func (tx *Tx) insertRows(ctx context.Context, t string, cols []ploti.Column, src storage.RowSource) (int64, error) {
	if len(src.IDs) == 0 {
		return 0, nil
	}
	name := filepath.Base(src.Path)
	q, err := duckread.JSONRowsQuery([]string{src.Path}, cols, storage.Ident(storage.ColRecordID)+" IN (SELECT unnest(?::VARCHAR[]))")
	if err != nil {
		return 0, err
	}
	encs, err := encodings(cols, tx.db.geomOID)
	if err != nil {
		return 0, err
	}
	n, after, err := tx.copyRows(ctx, "SAVEPOINT ploti_rows", t, cols, nil, exportSelect(q, cols), []any{src.IDs}, encs)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
		var de *duckError
		if errors.As(err, &de) {
			return 0, duckread.JSONError(name, de.err)
		}
		if pe := pgError(err); pe != nil && pe.Code == "23505" { // a row repeated
			n = -1
		} else if dataFault(err) {
			return 0, &storage.DataError{File: name, Detail: "row does not fit the schema: " + pgMessage(err)}
		} else {
			return 0, fmt.Errorf("insert rows of %s: %w", name, err)
		}
	}
	if n != int64(len(src.IDs)) {
		return 0, &storage.DataError{File: name, Detail: fmt.Sprintf("has %s rows for the %d ids it should give once each (a row missing or repeated)", countWord(n), len(src.IDs))}
	}
	_, err = tx.conn.Exec(ctx, joinStatements(after, "RELEASE SAVEPOINT ploti_rows"))
	return n, err
}

func countWord(n int64) string {
	if n < 0 {
		return "repeated"
	}
	return fmt.Sprint(n)
}

// logWatch records the versions' changes, their renames in the id map,
// and rewrites the renamed ids in the IDRefs columns, oldest version first.
func (tx *Tx) logWatch(ctx context.Context, m storage.WatchMerge) error {
	if len(m.Log) > 0 {
		versions, ids, kinds := make([]int32, len(m.Log)), make([]string, len(m.Log)), make([]string, len(m.Log))
		for i, l := range m.Log {
			versions[i], ids[i], kinds[i] = int32(l.Version), l.ID, l.Change
		}
		log := `(SELECT $1::text AS dataset_id, l.* FROM unnest($2::integer[], $3::text[], $4::text[]) l(version, id, change)) l`
		if _, err := tx.conn.Exec(ctx, storage.VersionSetsSQL(m.DatasetID, versions)); err != nil {
			return fmt.Errorf("log changes of %s: %w", m.DatasetID, err)
		}
		if _, err := tx.conn.Exec(ctx, storage.LogRowsSQL(log, "CAST(l.change AS _ploti.change_kind)"), m.DatasetID, versions, ids, kinds); err != nil {
			return fmt.Errorf("log changes of %s: %w", m.DatasetID, err)
		}
	}
	if len(m.Renames) == 0 {
		return nil
	}
	versions, from, to := make([]int32, len(m.Renames)), make([]string, len(m.Renames)), make([]string, len(m.Renames))
	var order []int
	for i, r := range m.Renames {
		versions[i], from[i], to[i] = int32(r.Version), r.From, r.To
		if len(order) == 0 || order[len(order)-1] != r.Version {
			order = append(order, r.Version)
		}
	}
	_, err := tx.conn.Exec(ctx, `INSERT INTO _ploti.id_map (dataset_id, version, from_id, to_id)
		SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[])`, m.DatasetID, versions, from, to)
	if err != nil {
		return fmt.Errorf("record renamed ids of %s: %w", m.DatasetID, err)
	}
	for _, v := range order {
		if err := tx.rewriteIDRefs(ctx, m.DatasetID, v, m.IDRefs); err != nil {
			return err
		}
	}
	return nil
}
