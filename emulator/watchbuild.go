package emulator

// The watch side of a build: what a new version changed, measured by record
// id from the Ploti version it follows, with the renamed records paired up
// and each added, changed or renamed row rendered as JSON once, so that a
// changes page is a range read of one Parquet file.

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// watchRowGroup is the Parquet row group size of the watch side's files:
// small, so that a page reads little more than itself.
const watchRowGroup = 2048

// planWatch picks the Ploti version a build's watch side is measured from:
// the latest, or the one WithPreviousPlotiVersion names.
func planWatch(d *dataset, cfg publishConfig) (*plotiVersion, error) {
	if cfg.plotiPrev == 0 {
		return d.latestPloti(), nil
	}
	pv := d.plotiNum(cfg.plotiPrev)
	if pv == nil {
		return nil, fmt.Errorf("%w: no Ploti version %d", ErrNotFound, cfg.plotiPrev)
	}
	return pv, nil
}

// watchChangeLog is the changeLog a build's watch side gets.
func (p *buildPlan) watchChangeLog() string {
	switch {
	case p.cfg.changeLog != "":
		return p.cfg.changeLog
	case p.wbase == nil:
		return ChangeLogFirst
	case p.cfg.replace > 0:
		return ChangeLogIDsChanged
	}
	return ChangeLogRecorded
}

func litList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = lit(s)
	}
	return strings.Join(q, ", ")
}

// checkRenames fails a build whose WithRenames names ids the last released
// version does not have.
func (e *Emulator) checkRenames(ctx context.Context, p *buildPlan, v *version) error {
	if len(p.cfg.rename) == 0 {
		return nil
	}
	if p.base == nil {
		return fmt.Errorf("rename records: %w: the dataset has no released version", ErrInvalid)
	}
	ids := slices.Clone(p.cfg.rename)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	n, err := queryInt(ctx, e.db, fmt.Sprintf("SELECT count(*) FROM %s WHERE _from IN (%s)", v.table, litList(ids)))
	if err != nil {
		return fmt.Errorf("rename records: %w", err)
	}
	if n != int64(len(ids)) {
		return fmt.Errorf("rename records: %w: %d of the %d ids are not records of v%d that continue", ErrInvalid,
			int64(len(ids))-n, len(ids), p.base.num)
	}
	return nil
}

// buildWatch works out the version's watch side into v.watch: counts
// always, and for a recorded changeLog the change list, written to
// watch-changes.parquet (_ord, change, record_id, previous_record_id, row).
func (e *Emulator) buildWatch(ctx context.Context, p *buildPlan, v *version) error {
	wb := &watchBuild{changeLog: p.watchChangeLog(), prev: p.wbase}
	v.watch = wb
	if p.wbase == nil {
		wb.counts.added = v.rowCount
		if wb.changeLog == ChangeLogRecorded {
			// recorded with nothing to measure from: every row is added
			return e.watchEntries(ctx, p, v, fmt.Sprintf(`SELECT n._ord AS _ord, 'added' AS change,
	n._ploti_record_id AS record_id, NULL::VARCHAR AS previous_record_id, %s AS row FROM %s n`, rowObject(p.cols, "n"), v.table))
		}
		return nil
	}
	wch := p.table("wch")
	defer e.dropTables(wch, p.table("wd"))
	var err error
	if v.hasChanges && p.wbase.feed == p.base {
		err = e.watchFromFeed(ctx, p, v, wch)
	} else {
		err = e.watchDiff(ctx, p, v, wch)
	}
	if err != nil {
		return fmt.Errorf("measure watch changes: %w", err)
	}
	if err := e.countWatch(ctx, wch, wb); err != nil {
		return err
	}
	if wb.changeLog != ChangeLogRecorded {
		return nil
	}
	return e.watchEntries(ctx, p, v, "SELECT * FROM "+wch)
}

// watchFromFeed takes the change list from the Data Feeds changes table
// when both sides measure from the same version: the same rows, in the
// same order, and no second join.
func (e *Emulator) watchFromFeed(ctx context.Context, p *buildPlan, v *version, wch string) error {
	row := "NULL::VARCHAR"
	if p.watchChangeLog() == ChangeLogRecorded {
		row = fmt.Sprintf("CASE WHEN c._ploti_change <> 'removed' THEN %s END", rowObject(p.cols, "c"))
	}
	_, err := e.db.ExecContext(ctx, fmt.Sprintf(`CREATE OR REPLACE TABLE %s AS
SELECT c.rowid + 1 AS _ord, c._ploti_change AS change, c._ploti_record_id AS record_id,
	NULL::VARCHAR AS previous_record_id, %s AS row FROM %s c ORDER BY c.rowid`, wch, row, p.table("ch")))
	return err
}

// watchDiff compares the version with the Ploti version it follows by
// record id, over the columns both have (same name and type): a record only
// in the new version was added, one only in the old removed, one in both
// whose values differ changed; an added record that continues a removed
// one (its matched id, _from) was renamed instead.
func (e *Emulator) watchDiff(ctx context.Context, p *buildPlan, v *version, wch string) error {
	wd := p.table("wd")
	diffs := []string{"n._ploti_place_id IS DISTINCT FROM b._ploti_place_id"}
	for _, c := range p.cols {
		if oc, ok := findColumn(p.wbase.feed.schema.Columns, c.Name); ok && sameType(c, oc) {
			diffs = append(diffs, fmt.Sprintf("%s IS DISTINCT FROM %s", cmpExpr(c, "n"), cmpExpr(oc, "b")))
		}
	}
	q := fmt.Sprintf(`CREATE OR REPLACE TABLE %[1]s AS
SELECT coalesce(n._ploti_record_id, b._ploti_record_id) AS rid, n._ord AS nord, n._from AS frm,
	CASE WHEN b._ploti_record_id IS NULL THEN 'added' WHEN n._ploti_record_id IS NULL THEN 'removed' ELSE 'changed' END AS change
FROM %[2]s n FULL JOIN %[3]s b ON n._ploti_record_id = b._ploti_record_id
WHERE b._ploti_record_id IS NULL OR n._ploti_record_id IS NULL OR %[4]s`, wd, v.table, p.wRel, strings.Join(diffs, " OR "))
	if _, err := e.db.ExecContext(ctx, q); err != nil {
		return err
	}
	row := "NULL::VARCHAR"
	if p.watchChangeLog() == ChangeLogRecorded {
		row = fmt.Sprintf("CASE WHEN d.change <> 'removed' THEN %s END", rowObject(p.cols, "n"))
	}
	q = fmt.Sprintf(`CREATE OR REPLACE TABLE %[1]s AS
WITH ren AS (SELECT a.rid, a.frm FROM %[2]s a JOIN %[2]s r ON r.change = 'removed' AND r.rid = a.frm
	WHERE a.change = 'added' AND a.frm <> a.rid)
SELECT row_number() OVER (ORDER BY d.nord NULLS LAST, d.rid) AS _ord,
	CASE WHEN ren.rid IS NOT NULL THEN 'renamed' ELSE d.change END AS change, d.rid AS record_id,
	ren.frm AS previous_record_id, %[3]s AS row
FROM %[2]s d LEFT JOIN ren ON ren.rid = d.rid LEFT JOIN %[4]s n ON n._ploti_record_id = d.rid AND d.change <> 'removed'
WHERE NOT EXISTS (SELECT 1 FROM ren r2 WHERE r2.frm = d.rid)
ORDER BY _ord`, wch, wd, row, v.table)
	_, err := e.db.ExecContext(ctx, q)
	return err
}

func (e *Emulator) countWatch(ctx context.Context, wch string, wb *watchBuild) error {
	rows, err := e.db.QueryContext(ctx, "SELECT change, count(*) FROM "+wch+" GROUP BY 1")
	if err != nil {
		return fmt.Errorf("count watch changes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return fmt.Errorf("count watch changes: %w", err)
		}
		switch kind {
		case "added":
			wb.counts.added = n
		case "changed":
			wb.counts.changed = n
		case "removed":
			wb.counts.removed = n
		case "renamed":
			wb.counts.renamed = n
		}
	}
	return rows.Err()
}

// watchEntries writes a recorded version's change list, ordered by _ord.
func (e *Emulator) watchEntries(ctx context.Context, p *buildPlan, v *version, query string) error {
	rel := p.rel + "/watch-changes.parquet"
	path := e.abs(rel)
	q := fmt.Sprintf("COPY (SELECT _ord, change, record_id, previous_record_id, row FROM (%s) ORDER BY _ord) TO %s (FORMAT parquet, ROW_GROUP_SIZE %d)",
		query, lit(path), watchRowGroup)
	if _, err := e.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("write watch changes: %w", err)
	}
	f, err := describeFile(rel, path)
	if err != nil {
		return err
	}
	n, err := queryInt(ctx, e.db, "SELECT count(*) FROM "+parquetList([]string{path}))
	if err != nil {
		return fmt.Errorf("count watch changes: %w", err)
	}
	v.watch.changes, v.watch.entries = &f, n
	return nil
}
