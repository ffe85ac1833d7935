package postgres

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// mergeTemp is the temporary table a merge COPYs a changes file into.
const mergeTemp = "_ploti_merge"

// MergeChanges applies a changes file to table by _ploti_record_id in the
// transaction, as the DuckDB engine's MergeChanges does: the
// in-memory DuckDB reads and checks the file (columns, null or repeated
// ids, kinds of change) and COPYs its rows into a temporary table; one
// statement updates the changed rows in place, deletes the removed ones
// and tells whether the file fits the held version (an added id must not
// be held, every changed or removed one must be); one INSERT adds the
// added rows; each change goes to _ploti.changes. The table holds the
// same rows as after the DuckDB engine's delete and insert. A file that
// does not fit is refused with a storage.DataError and the caller's
// rollback changes nothing. Readers never wait: they see the held
// version until the commit.
func (tx *Tx) MergeChanges(ctx context.Context, datasetID string, version int, table string, cols []ploti.Column, file string, rowsBefore int64) (storage.MergeStats, error) {
	var st storage.MergeStats
	name := filepath.Base(file)
	src := duckread.ParquetSource([]string{file})
	sel, err := tx.probeChanges(ctx, cols, file, src)
	if err != nil {
		return st, err
	}
	// The file's checks run on the DuckDB that reads files while the
	// other one exports its rows into the temporary table: the server
	// makes the table (its first use of PostGIS, a few milliseconds) and
	// takes the COPY meanwhile. A file the checks refuse is refused
	// whatever the COPY did; the caller's rollback drops the table.
	checked := make(chan error, 1)
	go func() { checked <- tx.checkChanges(ctx, src, name, &st) }()
	after, err := tx.copyChanges(ctx, cols, sel, src, name)
	if cerr := <-checked; cerr != nil {
		return st, cerr
	}
	if err != nil {
		return st, err
	}
	t := tx.rel(table)
	if err := tx.applyChanges(ctx, after, t, table, cols, datasetID, version, name, st.Changed+st.Removed); err != nil {
		return st, err
	}
	if rowsBefore >= 0 {
		st.Rows = rowsBefore + st.Added - st.Removed
		return st, nil
	}
	err = tx.conn.QueryRow(ctx, "SELECT count(*) FROM "+t).Scan(&st.Rows)
	return st, err
}

// checkChanges counts the changes file's rows by kind into st and
// refuses a file with null or repeated ids or an unknown kind of change.
func (tx *Tx) checkChanges(ctx context.Context, src, name string, st *storage.MergeStats) error {
	id, change := storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange)
	var nulls, dups, bad int64
	err := tx.db.duck.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FILTER (WHERE %[1]s IS NULL),
			count(%[1]s) - count(DISTINCT %[1]s),
			count(*) FILTER (WHERE %[2]s IS NULL OR %[2]s NOT IN ('added', 'changed', 'removed')),
			count(*) FILTER (WHERE %[2]s = 'added'),
			count(*) FILTER (WHERE %[2]s = 'changed'),
			count(*) FILTER (WHERE %[2]s = 'removed')
		FROM %[3]s`, id, change, duckread.FileIDsSQL(src))).Scan(&nulls, &dups, &bad, &st.Added, &st.Changed, &st.Removed)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("check changes %s: %w", name, cerr)
		}
		return &storage.DataError{File: name, Detail: "read: " + err.Error()}
	}
	return duckread.FileFaults(name, nulls, dups, bad)
}

// probeChanges refuses a changes file that lacks a column of the schema
// or has one the schema does not, and returns the select list that reads
// it into the table.
func (tx *Tx) probeChanges(ctx context.Context, cols []ploti.Column, file, src string) (string, error) {
	name := filepath.Base(file)
	have, types, err := tx.db.fileColumns(ctx, src)
	if err != nil {
		return "", &storage.DataError{File: name, Detail: "not a readable Parquet changes file: " + err.Error()}
	}
	if err := duckread.CheckColumns(have, cols, storage.ColChange); err != nil {
		return "", &storage.DataError{File: name, Detail: err.Error()}
	}
	known := map[string]bool{storage.ColRecordID: true, storage.ColPlaceID: true, storage.ColChange: true}
	for _, c := range cols {
		known[c.Name] = true
	}
	for _, c := range have {
		if !known[c] {
			return "", duckread.ExtraColumn(name, c)
		}
	}
	return duckread.SelectList(cols, types)
}

// copyChanges creates the merge's temporary table and COPYs the changes
// file's rows, cast to the schema's types, into it; it returns the
// statement to run next (copyRows' after).
func (tx *Tx) copyChanges(ctx context.Context, cols []ploti.Column, sel, src, name string) (string, error) {
	defs, err := columnDefs(cols)
	if err != nil {
		return "", err
	}
	change := storage.Ident(storage.ColChange)
	encs, err := encodings(cols, tx.db.geomOID)
	if err != nil {
		return "", err
	}
	encs = append(encs, encoding{kind: kindText, oid: oidText})
	create := fmt.Sprintf("CREATE TEMPORARY TABLE %s (%s, %s text) ON COMMIT DROP", mergeTemp, defs, change)
	rel := fmt.Sprintf("SELECT %s, CAST(%s AS VARCHAR) AS %s FROM %s WHERE CAST(%s AS VARCHAR) IN ('added', 'changed', 'removed')", sel, change, change, src, change)
	_, after, err := tx.copyRows(ctx, create, mergeTemp, cols, []string{change}, exportSelect(rel, cols, change), nil, encs)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return "", fmt.Errorf("merge %s: %w", name, cerr)
		}
		var de *duckError
		if errors.As(err, &de) && isConversion(de.err) {
			return "", &storage.DataError{File: name, Detail: "read: " + firstLine(de.err.Error())}
		}
		if dataFault(err) {
			return "", &storage.DataError{File: name, Detail: "read: " + pgMessage(err)}
		}
		return "", fmt.Errorf("merge %s: copy: %w", name, err)
	}
	return after, nil
}

// applyChanges applies the staged changes to t (table, as this
// transaction has it) in one round trip, after pre: one statement that
// updates the changed rows in place, deletes the removed ones and checks
// that the file fits the held version (no added id is held, and want
// rows were updated or deleted); one INSERT of the added rows; the
// changes logged in _ploti.changes; the staged rows dropped. A misfit
// names one id, as the DuckDB engine's refusal does; the caller's
// rollback undoes the rest.
//
// A changed row is updated rather than deleted and inserted again: the
// table keeps free room on its pages (tableOptions' fillfactor), so an
// update that leaves the indexed columns (the id, a geometry) as they
// were stays on its page without a new entry in any index (a HOT
// update), where a DELETE and an INSERT look the id up, then write the
// row and an entry in every index again. On a 1% merge of 1M permits
// that is about a third less of the server's time.
func (tx *Tx) applyChanges(ctx context.Context, pre, t, table string, cols []ploti.Column, datasetID string, version int, name string, want int64) error {
	id, change := storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange)
	names := columnNames(cols)
	// An added id must not be held. The table's primary key on the id
	// (every table a load makes has it) refuses one at the INSERT, so the
	// DELETE looks up the added ids only in a table without it (a user
	// dropped it). The check returns the key's name (k, asked of the
	// catalog once), which the INSERT's refusal then names. The UPDATE
	// and the DELETE touch other rows (an id is in the file once), so one
	// statement holds both.
	check := fmt.Sprintf(`WITH k AS MATERIALIZED (SELECT %[6]s AS name),
		u AS (UPDATE %[3]s t SET %[7]s FROM %[4]s m WHERE t.%[1]s = m.%[1]s AND m.%[2]s = 'changed'
			RETURNING m.%[1]s AS id, m.%[2]s AS change),
		d AS (DELETE FROM %[3]s t USING %[4]s m WHERE t.%[1]s = m.%[1]s AND (m.%[2]s = 'removed' OR (m.%[2]s = 'added' AND (SELECT name FROM k) IS NULL))
			RETURNING m.%[1]s AS id, m.%[2]s AS change),
		a AS (SELECT id, change FROM u UNION ALL SELECT id, change FROM d)
		SELECT count(*) FILTER (WHERE change = 'added'), min(id) FILTER (WHERE change = 'added'),
			count(*) FILTER (WHERE change <> 'added'),
			CASE WHEN count(*) FILTER (WHERE change <> 'added') <> %[5]d THEN
				(SELECT min(m.%[2]s || ' id ' || m.%[1]s) FROM %[4]s m WHERE m.%[2]s <> 'added' AND NOT EXISTS (SELECT 1 FROM a WHERE a.id = m.%[1]s))
			END,
			(SELECT name FROM k)
		FROM a`, id, change, t, mergeTemp, want, idIndex(t), updateSet(cols, "m."))
	insert := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s = 'added'`, t, names, names, mergeTemp, change)
	logged := storage.LogOneSetSQL(datasetID, version, fmt.Sprintf("%s, CAST(%s AS _ploti.change_kind) FROM %s", id, change, mergeTemp))
	results, err := batch(ctx, tx.conn, pre, check, insert, logged[0], logged[1], "DROP TABLE "+mergeTemp)
	at := 0
	if pre != "" {
		at = 1
	}
	if row, rerr := firstRow(results, at); rerr == nil {
		index, ferr := misfit(row, name, want)
		if ferr != nil {
			return ferr
		}
		if held, ok := addedHeld(err, index); ok {
			return &storage.DataError{File: name, Detail: "changes file does not fit the held version: " + held + " is already held"}
		}
	}
	switch {
	case err == nil:
		return nil
	case dataFault(err):
		return &storage.DataError{File: name, Detail: "merge: " + pgMessage(err)}
	case len(results) <= at:
		return fmt.Errorf("merge %s: update and delete: %w", name, err)
	case len(results) == at+1:
		return fmt.Errorf("merge %s into %s: insert: %w", name, table, err)
	}
	return fmt.Errorf("log changes of %s v%d: %w", datasetID, version, err)
}

// updateSet is an UPDATE's SET list that gives a row every column of a
// dataset table but its id (the place id and cols) from the relation
// aliased by from ("m.").
func updateSet(cols []ploti.Column, from string) string {
	parts := []string{ident(storage.ColPlaceID) + " = " + from + ident(storage.ColPlaceID)}
	for _, c := range cols {
		parts = append(parts, ident(c.Name)+" = "+from+ident(c.Name))
	}
	return strings.Join(parts, ", ")
}

// idIndex is a scalar subquery: the name of the table t's (qualified)
// unique index on _ploti_record_id alone, valid, whole and checked at
// once (not deferred to the commit), or NULL when it has none.
func idIndex(t string) string {
	return fmt.Sprintf(`(SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = CAST(%s AS regclass) AND i.indisunique AND i.indisvalid AND i.indimmediate
			AND i.indnkeyatts = 1 AND i.indpred IS NULL AND a.attname = %s
		ORDER BY c.relname LIMIT 1)`, storage.Literal(t), storage.Literal(storage.ColRecordID))
}

// addedHeld tells the merge's INSERT refused by index, the table's unique
// index on _ploti_record_id (idIndex), and says which added id it held:
// the id the refusal's detail names, when the detail reads as
// PostgreSQL's English one (the server's lc_messages may translate it).
func addedHeld(err error, index string) (string, bool) {
	pe := pgError(err)
	if pe == nil || pe.Code != "23505" || index == "" || pe.ConstraintName != index {
		return "", false
	}
	rest, ok := strings.CutPrefix(pe.Detail, "Key ("+storage.ColRecordID+")=(")
	if held, found := strings.CutSuffix(rest, ") already exists."); ok && found {
		return "added id " + held, true
	}
	return "an added id", true
}

// misfit reads the fit check of applyChanges (added ids held, the first
// of them, rows updated or deleted, the first changed or removed id not
// held, the id's unique index) and refuses a file that does not fit; it
// returns the index's name ("" for none).
func misfit(row []textValue, name string, want int64) (string, error) {
	if len(row) != 5 {
		return "", fmt.Errorf("merge %s: the fit check returned %d values", name, len(row))
	}
	addedHeld, err := row[0].int64()
	if err != nil {
		return "", err
	}
	deleted, err := row[2].int64()
	if err != nil {
		return "", err
	}
	switch {
	case addedHeld > 0:
		return "", &storage.DataError{File: name, Detail: fmt.Sprintf("changes file does not fit the held version: added id %s is already held", deref(row[1].str()))}
	case deleted != want:
		detail := fmt.Sprintf("its %d changed or removed ids match %d held rows", want, deleted)
		if notHeld := row[3].str(); notHeld != nil {
			detail = *notHeld + " is not held"
		}
		return "", &storage.DataError{File: name, Detail: "changes file does not fit the held version: " + detail}
	}
	return deref(row[4].str()), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ApplyIDMap records a version's id map in _ploti.id_map (the in-memory
// DuckDB reads and checks the file; COPY writes it) and rewrites the ids
// in the given user columns. A map with a null or repeated from_id or
// to_id (two ids mapped to one) is refused.
func (tx *Tx) ApplyIDMap(ctx context.Context, datasetID string, version int, file string, refs []storage.IDRef) (int64, error) {
	name := filepath.Base(file)
	src := duckread.ParquetSource([]string{file})
	have, _, err := tx.db.fileColumns(ctx, src)
	if err != nil {
		return 0, &storage.DataError{File: name, Detail: "not a readable Parquet id map: " + err.Error()}
	}
	set := map[string]bool{}
	for _, c := range have {
		set[c] = true
	}
	if !set["from_id"] || !set["to_id"] {
		return 0, &storage.DataError{File: name, Detail: "id map lacks from_id or to_id"}
	}
	var n, nulls, dupFrom, dupTo int64
	err = tx.db.duck.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE from_id IS NULL OR to_id IS NULL),
		count(from_id) - count(DISTINCT from_id), count(to_id) - count(DISTINCT to_id) FROM `+src).Scan(&n, &nulls, &dupFrom, &dupTo)
	if err != nil {
		return 0, &storage.DataError{File: name, Detail: "read: " + err.Error()}
	}
	if nulls > 0 || dupFrom > 0 || dupTo > 0 {
		return 0, &storage.DataError{File: name, Detail: fmt.Sprintf("id map has %d null ids, %d repeated from_id and %d repeated to_id (two ids mapped to one)", nulls, dupFrom, dupTo)}
	}
	encs := []encoding{{kind: kindText, oid: oidText}, {kind: kindInt4}, {kind: kindText, oid: oidText}, {kind: kindText, oid: oidText}}
	q := "SELECT CAST(? AS VARCHAR), CAST(? AS INTEGER), CAST(from_id AS VARCHAR), CAST(to_id AS VARCHAR) FROM " + src
	if _, err := tx.copyFrom(ctx, copySQL("_ploti.id_map", "dataset_id, version, from_id, to_id"), q, []any{datasetID, int32(version)}, encs); err != nil {
		return 0, fmt.Errorf("record id map of %s v%d: %w", datasetID, version, err)
	}
	if err := tx.rewriteIDRefs(ctx, datasetID, version, refs); err != nil {
		return 0, err
	}
	return n, nil
}

// rewriteIDRefs rewrites the ids a version's id map replaced in the user
// columns that reference the dataset.
func (tx *Tx) rewriteIDRefs(ctx context.Context, datasetID string, version int, refs []storage.IDRef) error {
	for _, r := range refs {
		if r.DatasetID != datasetID {
			continue
		}
		t := qualified(r.Table)
		q := fmt.Sprintf(`UPDATE %[1]s SET %[2]s = m.to_id FROM _ploti.id_map m
			WHERE m.dataset_id = $1 AND m.version = $2 AND %[1]s.%[2]s = m.from_id`, t, ident(r.Column))
		if _, err := tx.conn.Exec(ctx, q, datasetID, version); err != nil {
			return fmt.Errorf("rewrite ids in %s.%s for %s v%d: %w", r.Table, r.Column, datasetID, version, err)
		}
	}
	return nil
}

// qualified quotes a possibly schema-qualified table name.
func qualified(name string) string {
	if s, t, ok := cutDot(name); ok {
		return ident(s) + "." + ident(t)
	}
	return ident(name)
}

func cutDot(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

// longNamesApart refuses a column to add whose name, cut to PostgreSQL's
// identifiers, is one the table rel has already (namesApart); the table's
// names are read only when a name is that long.
func (tx *Tx) longNamesApart(ctx context.Context, rel string, cols []ploti.Column) error {
	if !slices.ContainsFunc(cols, func(c ploti.Column) bool { return len(c.Name) > maxIdent }) {
		return nil
	}
	rows, err := tx.conn.Query(ctx, "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped", rel)
	if err != nil {
		return err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	return namesApart(cols, have)
}

// AddColumns adds schema columns to a table (a MINOR schema change); rows
// keep NULL in them until a changed row or a reload fills them. On a table
// readers may hold, ALTER TABLE waits for their locks as a swap does (a
// few milliseconds a try, then it lets them go on and tries again); the
// readers of that table then wait for the transaction's commit.
func (tx *Tx) AddColumns(ctx context.Context, table string, cols []ploti.Column) error {
	t := tx.rel(table)
	if t == tx.db.table(table) {
		if err := tx.lockTables(ctx, []string{t}, ""); err != nil {
			return fmt.Errorf("add columns to %s: %w", table, err)
		}
	}
	if err := tx.longNamesApart(ctx, t, cols); err != nil {
		return fmt.Errorf("add columns to %s: %w", table, err)
	}
	for _, c := range cols {
		typ, err := columnType(c)
		if err != nil {
			return fmt.Errorf("add column %s to %s: %w", c.Name, table, err)
		}
		if _, err := tx.conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", t, ident(c.Name), typ)); err != nil {
			return fmt.Errorf("add column %s to %s: %w", c.Name, table, err)
		}
	}
	return tx.commentGeometry(ctx, t, cols)
}
