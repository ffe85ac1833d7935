package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// ColumnDiff is how one column of a table differs from a snapshot's, row
// by row (rows matched by record id).
type ColumnDiff struct {
	Name string
	// TableType and SnapshotType are the DuckDB types; "" when the column
	// is missing on that side.
	TableType, SnapshotType string
	// Cells that differ among the rows both hold; of them, Unfilled are
	// NULL in the table where the snapshot has a value.
	Cells, Unfilled int64
}

// SnapshotComparison is an open comparison of a dataset's table with a
// version's snapshot, loaded as a fresh load would load it into a scratch
// table in a transaction that Close rolls back.
type SnapshotComparison struct {
	tx     *Tx
	table  string
	rel    string   // table, qualified
	snap   string   // the scratch table, qualified
	common []string // columns both sides have, record id first
	// TableRows and SnapshotRows count each side's rows.
	TableRows, SnapshotRows int64
	// Same is true when the row counts and an order-independent hash of
	// every column (each value hashed with its record id) agree.
	Same bool
	// Columns lists the columns whose types or cells differ.
	Columns []ColumnDiff
}

// CompareSnapshot loads files (a version's snapshot, cols its schema) as a
// load would, and compares table with it: row counts and, per column, the
// sum of hash(record id, value) over the rows, all inside DuckDB. Only when
// those differ does it match the rows by record id to tell the columns
// apart. Close the comparison to drop the scratch table.
func (db *DB) CompareSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string) (*SnapshotComparison, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	c := &SnapshotComparison{tx: tx, table: table}
	if err := c.load(ctx, cols, files); err != nil {
		tx.Rollback()
		return nil, err
	}
	return c, nil
}

// TableRows counts a dataset table's rows (verify's count when no snapshot
// can be read to compare with), in either engine.
func (db *DB) TableRows(ctx context.Context, table string) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM "+db.tableRel(table)).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", table, err)
	}
	return n, nil
}

func (c *SnapshotComparison) load(ctx context.Context, cols []ploti.Column, files []string) error {
	snap, n, err := c.tx.Tables().LoadScratch(ctx, cols, files)
	if err != nil {
		return err
	}
	c.snap, c.rel, c.SnapshotRows = snap, c.tx.db.tableRel(c.table), n
	mine, theirs, err := c.columns(ctx)
	if err != nil {
		return err
	}
	var th, sh []string
	if c.TableRows, th, err = c.hashes(ctx, c.rel); err != nil {
		return err
	}
	if _, sh, err = c.hashes(ctx, c.snap); err != nil {
		return err
	}
	c.Same = len(c.Columns) == 0 && c.TableRows == c.SnapshotRows
	var differ []string
	for i, col := range c.common {
		if th[i] != sh[i] {
			c.Same = false
			if col != ColRecordID {
				differ = append(differ, col)
			}
		}
	}
	if len(differ) == 0 {
		return nil
	}
	return c.cellDiffs(ctx, differ, mine, theirs)
}

// columns reads both sides' columns and their types: a column one side
// lacks or types otherwise goes to Columns, the rest to common, the
// record id first.
func (c *SnapshotComparison) columns(ctx context.Context) (mine, theirs map[string]string, err error) {
	if mine, err = c.tx.columnsOf(ctx, c.table, c.rel); err != nil {
		return nil, nil, err
	}
	if len(mine) == 0 {
		return nil, nil, fmt.Errorf("compare %s: %w: the table is not in the file (dropped?)", c.table, ErrBadData)
	}
	if theirs, err = c.tx.columnsOf(ctx, VerifyScratch, c.snap); err != nil {
		return nil, nil, err
	}
	var names []string
	for name := range theirs {
		names = append(names, name)
	}
	for name := range mine {
		if _, ok := theirs[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		tt, st := mine[name], theirs[name]
		switch {
		case tt != st:
			c.Columns = append(c.Columns, ColumnDiff{Name: name, TableType: tt, SnapshotType: st})
		case name == ColRecordID:
			c.common = append([]string{name}, c.common...)
		default:
			c.common = append(c.common, name)
		}
	}
	if len(c.common) == 0 || c.common[0] != ColRecordID {
		return nil, nil, fmt.Errorf("compare %s: %w: no %s column on both sides", c.table, ErrBadData, ColRecordID)
	}
	return mine, theirs, nil
}

// hashes is relation t's row count and, for each common column, the sum
// of its cells' hashes paired with their record ids.
func (c *SnapshotComparison) hashes(ctx context.Context, t string) (int64, []string, error) {
	parts := []string{"count(*)::VARCHAR"}
	for _, col := range c.common {
		parts = append(parts, fmt.Sprintf("coalesce(sum(%s)::VARCHAR, '')", c.tx.db.pairHash(Ident(ColRecordID), Ident(col))))
	}
	out := make([]any, len(parts))
	vals := make([]string, len(parts))
	for i := range out {
		out[i] = &vals[i]
	}
	if err := c.tx.tx.QueryRowContext(ctx, "SELECT "+strings.Join(parts, ", ")+" FROM "+t).Scan(out...); err != nil {
		return 0, nil, fmt.Errorf("hash %s: %w", t, err)
	}
	var n int64
	fmt.Sscan(vals[0], &n)
	return n, vals[1:], nil
}

// cellDiffs counts which cells differ, column by column, among the rows
// both sides hold.
func (c *SnapshotComparison) cellDiffs(ctx context.Context, differ []string, mine, theirs map[string]string) error {
	var parts []string
	for _, col := range differ {
		id := Ident(col)
		parts = append(parts, fmt.Sprintf("count(*) FILTER (WHERE t.%[1]s IS DISTINCT FROM s.%[1]s)", id),
			fmt.Sprintf("count(*) FILTER (WHERE t.%[1]s IS NULL AND s.%[1]s IS NOT NULL)", id))
	}
	counts := make([]int64, len(parts))
	out := make([]any, len(parts))
	for i := range out {
		out[i] = &counts[i]
	}
	q := fmt.Sprintf("SELECT %s FROM %s t JOIN %s s USING (%s)", strings.Join(parts, ", "), c.rel, c.snap, Ident(ColRecordID))
	if err := c.tx.tx.QueryRowContext(ctx, q).Scan(out...); err != nil {
		return fmt.Errorf("compare %s: %w", c.table, err)
	}
	for i, col := range differ {
		if counts[2*i] > 0 {
			c.Columns = append(c.Columns, ColumnDiff{Name: col, TableType: mine[col], SnapshotType: theirs[col], Cells: counts[2*i], Unfilled: counts[2*i+1]})
		}
	}
	return nil
}

// RowDiff counts the rows that differ, by record id.
type RowDiff struct {
	Added   int64 // in the table only
	Missing int64 // in the snapshot only
	Changed int64 // in both, some column's value differs
	// Repeated counts the record ids the table holds more than once (a
	// snapshot's ids are unique: its load refuses repeats).
	Repeated int64
	// Examples are a few record ids of each kind.
	AddedIDs, MissingIDs, ChangedIDs, RepeatedIDs []string
}

// Rows matches the rows by record id. A cell NULL in the table where the
// snapshot has a value, in one of unfilled, does not count (a column a
// MINOR change added keeps NULL in the rows that did not change since).
func (c *SnapshotComparison) Rows(ctx context.Context, unfilled []string) (RowDiff, error) {
	var d RowDiff
	skip := map[string]bool{}
	for _, u := range unfilled {
		skip[u] = true
	}
	var conds []string
	for _, col := range c.common[1:] {
		id := Ident(col)
		cond := fmt.Sprintf("t.%[1]s IS DISTINCT FROM s.%[1]s", id)
		if skip[col] {
			cond = fmt.Sprintf("(%s AND t.%s IS NOT NULL)", cond, id)
		}
		conds = append(conds, cond)
	}
	changed := "false"
	if len(conds) > 0 {
		changed = strings.Join(conds, " OR ")
	}
	rid := Ident(ColRecordID)
	q := fmt.Sprintf(`WITH j AS (
		SELECT coalesce(t.%[1]s, s.%[1]s)::VARCHAR AS id,
			CASE WHEN s.%[1]s IS NULL THEN 'added' WHEN t.%[1]s IS NULL THEN 'missing' WHEN %[4]s THEN 'changed' END AS kind
		FROM %[2]s t FULL JOIN %[3]s s ON t.%[1]s = s.%[1]s)
	SELECT kind, count(*), %[5]s FROM j WHERE kind IS NOT NULL GROUP BY kind`, rid, c.rel, c.snap, changed, c.tx.db.firstIDs("id"))
	rows, err := c.tx.tx.QueryContext(ctx, q)
	if err != nil {
		return d, fmt.Errorf("compare rows of %s: %w", c.table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, ids string
		var n int64
		if err := rows.Scan(&kind, &n, &ids); err != nil {
			return d, fmt.Errorf("compare rows of %s: %w", c.table, err)
		}
		var s []string
		if err := json.Unmarshal([]byte(ids), &s); err != nil {
			return d, fmt.Errorf("compare rows of %s: %w", c.table, err)
		}
		switch kind {
		case "added":
			d.Added, d.AddedIDs = n, s
		case "missing":
			d.Missing, d.MissingIDs = n, s
		case "changed":
			d.Changed, d.ChangedIDs = n, s
		}
	}
	if err := rows.Err(); err != nil {
		return d, fmt.Errorf("compare rows of %s: %w", c.table, err)
	}
	return d, c.repeated(ctx, &d)
}

// repeated counts the record ids the table holds more than once: a
// repeated row matches its snapshot row twice, so the join above cannot
// see it.
func (c *SnapshotComparison) repeated(ctx context.Context, d *RowDiff) error {
	q := fmt.Sprintf(`SELECT count(*), %[3]s FROM (SELECT %[1]s::VARCHAR AS id FROM %[2]s GROUP BY %[1]s HAVING count(*) > 1) r`,
		Ident(ColRecordID), c.rel, c.tx.db.firstIDs("id"))
	var ids sql.NullString
	if err := c.tx.tx.QueryRowContext(ctx, q).Scan(&d.Repeated, &ids); err != nil {
		return fmt.Errorf("count repeated ids of %s: %w", c.table, err)
	}
	if ids.Valid {
		if err := json.Unmarshal([]byte(ids.String), &d.RepeatedIDs); err != nil {
			return fmt.Errorf("count repeated ids of %s: %w", c.table, err)
		}
	}
	return nil
}

// Close drops the scratch table (the transaction is rolled back).
func (c *SnapshotComparison) Close() error { return c.tx.Rollback() }

// VerifyScratch is the table a snapshot is loaded into for a comparison,
// inside a transaction that is rolled back: nothing of it is ever written.
const VerifyScratch = "_ploti_verify_snapshot"
