package emulator

// The truth of the watch side, for scenario tests: what rows serves now,
// and what a watch client holds after a given history of syncs when it
// follows docs/wire.md section 9's readings. The two differ in one way only:
// a column a MINOR change added is null in the rows no later change
// touched, for a client that merged its way there.

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WatchStep is one sync of a WatchTruth history, as WatchPlan reports it.
type WatchStep struct {
	// From and To are the Ploti versions held before and after.
	From, To int
	// Reload tells that the client reads the dataset whole at To; Reason
	// says why (empty for a merge).
	Reload bool
	Reason string
	// Versions are the versions between From (excluded) and To (included)
	// a merge applies, oldest first.
	Versions []int
}

// WatchRows returns a Parquet file of the rows GET .../rows serves now, the
// dataset's latest Ploti version: _ploti_record_id, _ploti_place_id, then
// its columns, ordered by record id. It returns ErrNotFound when the dataset
// has no Ploti version yet.
func (e *Emulator) WatchRows(ctx context.Context, datasetID string) (string, error) {
	e.mu.Lock()
	d := e.datasets[datasetID]
	var pv *plotiVersion
	if d != nil {
		pv = d.latestPloti()
	}
	e.mu.Unlock()
	if pv == nil {
		return "", fmt.Errorf("watch rows %s: %w: no Ploti version", datasetID, ErrNotFound)
	}
	return e.WatchTruth(ctx, datasetID, []int{pv.num})
}

// WatchPlan works out how a watch client that read the dataset whole at
// Ploti version syncedAt[0], then synced at each later listed version (each
// the latest when it synced), got from each to the next, as docs/wire.md
// section 9's readings say: it walks back from the new version by
// previousVersion; a chain that passes below the held version without
// meeting it (a gap), a version in it past 90 days (410, judged by the
// emulator clock now), a changeLog other than recorded, or a column of the
// held version removed or retyped in the new one make it reload the
// dataset whole; otherwise it merges: the records each version added,
// changed or renamed get their rows as of the new version (gone when it has
// none), the removed and the old ids of renamed ones go, and columns the
// new version added are null in the rows none of them touched.
func (e *Emulator) WatchPlan(datasetID string, syncedAt []int) ([]WatchStep, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, pvs, err := e.historyLocked(datasetID, syncedAt)
	if err != nil {
		return nil, err
	}
	var steps []WatchStep
	for i := 1; i < len(pvs); i++ {
		steps = append(steps, e.stepLocked(e.datasets[datasetID], pvs[i-1], pvs[i]))
	}
	return steps, nil
}

// historyLocked checks a sync history: known versions, none going back.
func (e *Emulator) historyLocked(datasetID string, syncedAt []int) (*dataset, []*plotiVersion, error) {
	d := e.datasets[datasetID]
	if d == nil {
		return nil, nil, fmt.Errorf("watch truth %s: %w", datasetID, ErrNotFound)
	}
	if len(syncedAt) == 0 {
		return nil, nil, fmt.Errorf("watch truth %s: %w: no versions", datasetID, ErrInvalid)
	}
	var pvs []*plotiVersion
	for i, n := range syncedAt {
		pv := d.plotiNum(n)
		if pv == nil {
			return nil, nil, fmt.Errorf("watch truth %s: %w: no Ploti version %d", datasetID, ErrNotFound, n)
		}
		if i > 0 && n < syncedAt[i-1] {
			return nil, nil, fmt.Errorf("watch truth %s: %w: version %d after %d", datasetID, ErrInvalid, n, syncedAt[i-1])
		}
		pvs = append(pvs, pv)
	}
	return d, pvs, nil
}

// stepLocked decides how a client holding a gets to b.
func (e *Emulator) stepLocked(d *dataset, a, b *plotiVersion) WatchStep {
	st := WatchStep{From: a.num, To: b.num}
	if a == b {
		return st
	}
	cut := e.nowLocked().Add(-Retention)
	for pv := b; pv != a; {
		switch {
		case pv.promotedAt.Before(cut):
			return reload(st, fmt.Sprintf("version %d is past 90 days (410)", pv.num))
		case pv.changeLog != ChangeLogRecorded:
			return reload(st, fmt.Sprintf("version %d has changeLog %s", pv.num, pv.changeLog))
		}
		st.Versions = append([]int{pv.num}, st.Versions...)
		var prev *plotiVersion
		if pv.prev != nil {
			prev = d.plotiNum(*pv.prev)
		}
		if prev == nil || prev.num < a.num {
			return reload(st, fmt.Sprintf("version %d's previousVersion chain passes %d without meeting it", b.num, a.num))
		}
		pv = prev
	}
	for _, c := range a.feed.schema.Columns {
		if nc, ok := findColumn(b.feed.schema.Columns, c.Name); !ok || !sameType(c, nc) {
			return reload(st, fmt.Sprintf("column %s was removed or changed type", c.Name))
		}
	}
	return st
}

func reload(st WatchStep, why string) WatchStep {
	st.Reload, st.Reason, st.Versions = true, why, nil
	return st
}

// WatchTruth returns a Parquet file of the rows a watch client holds after
// the sync history syncedAt (see WatchPlan): _ploti_record_id,
// _ploti_place_id, then the last version's columns, ordered by record id.
// WatchTruth(id, []int{latest}) is what a whole read gives now.
func (e *Emulator) WatchTruth(ctx context.Context, datasetID string, syncedAt []int) (string, error) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	d, pvs, err := e.historyLocked(datasetID, syncedAt)
	var steps []WatchStep
	if err == nil {
		for i := 1; i < len(pvs); i++ {
			steps = append(steps, e.stepLocked(d, pvs[i-1], pvs[i]))
		}
	}
	e.truthN++
	n := e.truthN
	e.mu.Unlock()
	if err != nil {
		return "", err
	}
	tw := truthWork{e: e, d: d, prefix: fmt.Sprintf("wt%d_", n)}
	defer tw.drop()
	cur, err := tw.whole(ctx, pvs[0])
	for i, st := range steps {
		if err != nil {
			break
		}
		if st.Reload {
			cur, err = tw.whole(ctx, pvs[i+1])
		} else if st.From != st.To {
			cur, err = tw.merge(ctx, cur, pvs[i], pvs[i+1], st.Versions)
		}
	}
	if err != nil {
		return "", fmt.Errorf("watch truth %s: %w", datasetID, err)
	}
	path := filepath.Join(e.dir, "truth", "watch", d.tag, fmt.Sprintf("t%d.parquet", n))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("watch truth %s: %w", datasetID, err)
	}
	if _, err := e.db.ExecContext(ctx, fmt.Sprintf("COPY (SELECT * FROM %s ORDER BY _ploti_record_id) TO %s (FORMAT parquet)", cur, lit(path))); err != nil {
		return "", fmt.Errorf("watch truth %s: %w", datasetID, err)
	}
	return path, nil
}

// truthWork holds the tables of one WatchTruth.
type truthWork struct {
	e      *Emulator
	d      *dataset
	prefix string
	tables []string
}

func (tw *truthWork) table() string {
	t := fmt.Sprintf("%s%d", tw.prefix, len(tw.tables))
	tw.tables = append(tw.tables, t)
	return t
}

func (tw *truthWork) drop() { tw.e.dropTables(tw.tables...) }

// versionCols selects a version's rows: system columns, then its columns
// cast to their types.
func versionCols(cols []Column, alias string) string {
	out := []string{alias + "._ploti_record_id", alias + "._ploti_place_id"}
	for _, c := range cols {
		out = append(out, fmt.Sprintf("CAST(%s.%s AS %s) AS %s", alias, ident(c.Name), duckType(c), ident(c.Name)))
	}
	return strings.Join(out, ", ")
}

// whole is a whole read of a version.
func (tw *truthWork) whole(ctx context.Context, pv *plotiVersion) (string, error) {
	t := tw.table()
	_, err := tw.e.db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM %s s", t,
		versionCols(pv.feed.schema.Columns, "s"), tw.e.versionRel(pv.feed)))
	return t, err
}

// merge applies the change lists of versions (all recorded) to cur, held
// at a, reading the touched rows as b has them.
func (tw *truthWork) merge(ctx context.Context, cur string, a, b *plotiVersion, versions []int) (string, error) {
	var lists []string
	for _, n := range versions {
		pv := tw.d.plotiNum(n)
		if pv.changes == nil {
			continue
		}
		lists = append(lists, tw.e.abs(pv.changes.rel))
	}
	touched, gone := "SELECT NULL::VARCHAR AS id WHERE false", "SELECT NULL::VARCHAR AS id WHERE false"
	if len(lists) > 0 {
		src := parquetList(lists)
		touched = fmt.Sprintf("SELECT record_id AS id FROM %s WHERE change IN ('added', 'changed', 'renamed')", src)
		gone = fmt.Sprintf("SELECT record_id AS id FROM %[1]s WHERE change = 'removed' UNION ALL SELECT previous_record_id FROM %[1]s WHERE change = 'renamed'", src)
	}
	held := []string{"t._ploti_record_id", "t._ploti_place_id"}
	for _, c := range b.feed.schema.Columns {
		src := "NULL"
		if _, ok := findColumn(a.feed.schema.Columns, c.Name); ok {
			src = "t." + ident(c.Name)
		}
		held = append(held, fmt.Sprintf("CAST(%s AS %s) AS %s", src, duckType(c), ident(c.Name)))
	}
	t := tw.table()
	q := fmt.Sprintf(`CREATE TABLE %[1]s AS
WITH touched AS (%[2]s), gone AS (%[3]s)
SELECT %[4]s FROM %[5]s t WHERE t._ploti_record_id NOT IN (SELECT id FROM touched UNION ALL SELECT id FROM gone)
UNION ALL
SELECT %[6]s FROM %[7]s s WHERE s._ploti_record_id IN (SELECT id FROM touched)`,
		t, touched, gone, strings.Join(held, ", "), cur, versionCols(b.feed.schema.Columns, "s"), tw.e.versionRel(b.feed))
	_, err := tw.e.db.ExecContext(ctx, q)
	return t, err
}

// DiffWatch compares a table a watch client holds (in db, any DuckDB
// database) with WatchTruth for the sync history syncedAt, as Diff does
// with Truth: extra counts table rows not in the truth, missing truth rows
// the table lacks; both are zero when the table is right.
func (e *Emulator) DiffWatch(ctx context.Context, db *sql.DB, table, datasetID string, syncedAt []int) (extra, missing int64, err error) {
	truth, err := e.WatchTruth(ctx, datasetID, syncedAt)
	if err != nil {
		return 0, 0, err
	}
	return diffWith(ctx, db, table, truth, fmt.Sprintf("%s %v", datasetID, syncedAt))
}
