package duckdb

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// light tells whether the commits since the last checkpoint are light.
func (p *pendingWrites) light() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.heavy
}

// lightSnapQuery is a snapshot of n rows whose permit strings DuckDB
// stores with FSST once a segment holds a few thousand of them.
func lightSnapQuery(n int) string {
	return fmt.Sprintf(`SELECT 'r' || i AS _ploti_record_id, 'fl-orange' AS _ploti_place_id,
	'Residential re-roof, shingle to metal, ' || (i %% 97) || ' squares at ' || (100 + i) || ' Colonial Dr' AS permit,
	(i * 1.5)::DECIMAL(14,2) AS valuation, TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_days((i %% 300)::INT) AS issued,
	['a'] AS tags, ('POINT (' || i || ' ' || i || ')')::GEOMETRY AS geometry FROM range(%d) t(i)`, n)
}

// lightChanges is a changes file changing n of the snapshot's rows.
func lightChanges(t *testing.T, db *storage.DB, n int) string {
	return mustParquet(t, db, fmt.Sprintf(`SELECT * REPLACE ('changed' AS _ploti_change, permit || ' (revised)' AS permit)
		FROM (SELECT 'changed' AS _ploti_change, * FROM (%s))`, lightSnapQuery(n)))
}

// permitCompression is the compressions of the permits table's permit
// column, by DuckDB's name for them.
func permitCompression(t *testing.T, db *storage.DB) map[string]bool {
	t.Helper()
	rows, err := db.SQL().Query("SELECT DISTINCT compression FROM pragma_storage_info('permits') WHERE column_name = 'permit' AND segment_type = 'VARCHAR'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		got[c] = true
	}
	return got
}

// A load is heavy: the checkpoint that writes it keeps FSST, which DuckDB
// chooses for a few thousand such strings.
func TestCheckpoint_keepsFSSTForALoad(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	loadPermits(t, db)
	if Of(db).pending.light() {
		t.Fatal("a load's commit left the pending writes light")
	}
	if err := Of(db).Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if got := permitCompression(t, db); !got["FSST"] {
		t.Fatalf("the loaded permits are stored %v, want FSST", got)
	}
	if !Of(db).pending.light() {
		t.Fatal("the checkpoint left the pending writes heavy")
	}
}

// loadPermits loads a 5,000-row permits table.
func loadPermits(t *testing.T, db *storage.DB) {
	t.Helper()
	ctx := context.Background()
	snap := mustParquet(t, db, lightSnapQuery(5000))
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// mergePermits merges a changes file into the permits table, the walk's
// way (MergeDeferred, FinishMerged) when deferred is set, and rolls the
// transaction back when fail is.
func mergePermits(t *testing.T, db *storage.DB, file string, version int, deferred, fail bool) {
	t.Helper()
	ctx := context.Background()
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if deferred {
			m, err := tx.Tables().MergeDeferred(ctx, "ds", version, "permits", testCols, file, -1)
			if err != nil {
				return err
			}
			if err := tx.Tables().FinishMerged(ctx, []storage.Merged{m}); err != nil {
				return err
			}
		} else if _, err := tx.Tables().MergeChanges(ctx, "ds", version, "permits", testCols, file, -1); err != nil {
			return err
		}
		if fail {
			return fmt.Errorf("rolled back")
		}
		return nil
	})
	if (err != nil) != fail {
		t.Fatal(err)
	}
}

// A merge touching a few rows is light; past lightRows rows of one table
// since the checkpoint (inserted, deleted, or in two merges together) it
// is not; a rolled-back merge counts nothing.
func TestPendingWrites_lightOnlyForFewRowsATable(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	loadPermits(t, db)
	if err := Of(db).Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	big := lightChanges(t, db, lightRows+1)
	mergePermits(t, db, big, 2, false, true)
	if !Of(db).pending.light() {
		t.Fatal("a rolled-back merge was recorded")
	}
	mergePermits(t, db, lightChanges(t, db, 40), 2, true, false)
	if !Of(db).pending.light() {
		t.Fatal("a merge of 40 rows made the pending writes heavy")
	}
	mergePermits(t, db, lightChanges(t, db, 120), 3, false, false)
	mergePermits(t, db, lightChanges(t, db, 120), 4, true, false)
	if Of(db).pending.light() {
		t.Fatal("merges of 40, 120 and 120 changed rows (560 deleted and inserted) still read as light")
	}
	if err := Of(db).Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	removed := mustParquet(t, db, fmt.Sprintf("SELECT 'removed' AS _ploti_change, * FROM (%s) WHERE CAST(substr(_ploti_record_id, 2) AS INTEGER) >= 4000", lightSnapQuery(5000)))
	mergePermits(t, db, removed, 5, false, false)
	if Of(db).pending.light() {
		t.Fatal("a merge removing 1,000 rows read as light")
	}
}

// The light checkpoint runs with FSST left out and puts DuckDB's setting
// back; a heavy one runs with DuckDB's; a failed one keeps its writes for
// the next.
func TestLightCheckpoint_leavesFSSTOutOfItsCheckpointOnly(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	d := Of(db)
	setting := func() string {
		var s string
		if err := db.SQL().QueryRow("SELECT current_setting('disabled_compression_methods')").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var during string
	read := func() error { during = setting(); return nil }
	if err := d.lightCheckpoint(ctx, read); err != nil || !strings.EqualFold(during, "fsst") {
		t.Fatalf("a light checkpoint ran with disabled_compression_methods = %q (%v), want fsst", during, err)
	}
	if got := setting(); got != "" {
		t.Fatalf("disabled_compression_methods = %q after the checkpoint, want DuckDB's default", got)
	}
	d.pending.add(true, nil)
	if err := d.lightCheckpoint(ctx, func() error { return fmt.Errorf("disk full") }); err == nil {
		t.Fatal("the failed checkpoint's error was lost")
	}
	if d.pending.light() {
		t.Fatal("a failed checkpoint lost the heavy writes it did not write")
	}
	// A setting left on by a RESET that failed is reset before a heavy
	// checkpoint.
	if _, err := db.SQL().Exec("SET GLOBAL disabled_compression_methods = 'fsst'"); err != nil {
		t.Fatal(err)
	}
	d.pending.fsstOff.Store(true)
	if err := d.lightCheckpoint(ctx, read); err != nil || during != "" {
		t.Fatalf("a heavy checkpoint ran with disabled_compression_methods = %q (%v), want DuckDB's default", during, err)
	}
}

// A write-ahead log another process left holds writes this one did not
// count: the first checkpoint after the open keeps FSST.
func TestOpen_aLeftLogMakesTheFirstCheckpointHeavy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.duckdb")
	db, err := Open(context.Background(), path, storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	db = closeLeavingTheLog(t, db, path, "CREATE TABLE leftover AS SELECT 'x' || i AS s FROM range(5000) t(i)")
	defer db.Close()
	if Of(db).pending.light() {
		t.Fatal("the writes of a left write-ahead log read as light")
	}
}

// A history's rows count toward a light checkpoint as the merge's own do:
// a merge's few rows appended keep it light, past lightRows they do not;
// a column added to the history keeps it light, a column's type changed
// (every row rewritten) does not.
func TestPendingWrites_historyRowsCountAsTheMergesDo(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	loadPermits(t, db)
	hv := storage.HistoryVersion{DatasetID: "ds", Table: "permits", Source: storage.SourceFeed, Version: 1}
	step := func(what string, wantLight bool, fn func(tx *storage.Tx) error) {
		t.Helper()
		if err := Of(db).Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.Update(ctx, fn); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := Of(db).pending.light(); got != wantLight {
			t.Fatalf("%s: the pending writes read as light = %v, want %v", what, got, wantLight)
		}
	}
	step("the history started (a copy of the table)", false, func(tx *storage.Tx) error {
		if err := tx.PutDataset(ctx, &storage.Dataset{ID: "ds", Table: "permits", Status: storage.StatusCurrent, Version: 1, Columns: testCols}); err != nil {
			return err
		}
		return eng(tx).StartHistory(ctx, hv)
	})
	// The history alone is recorded here, the table left as it is, so
	// that only the history's rows can make the writes heavy.
	added := func(n int) string {
		return mustParquet(t, db, fmt.Sprintf(`SELECT 'added' AS _ploti_change, * REPLACE ('n' || _ploti_record_id AS _ploti_record_id) FROM (%s)`, lightSnapQuery(n)))
	}
	// A watched version's records, changed, as its history records them.
	watched := func(n, version int) storage.WatchMerge {
		m := storage.WatchMerge{DatasetID: "ds", Table: "permits", Columns: testCols, Rows: []storage.RowSource{{}}}
		for i := range n {
			id := fmt.Sprintf("r%d", i)
			m.Held = append(m.Held, storage.Touch{ID: id, Version: version, Change: "changed"})
			m.Rows[0].IDs = append(m.Rows[0].IDs, id)
		}
		return m
	}
	for i, n := range []int{40, lightRows + 1} {
		file, light := added(n), n <= lightRows
		hv.Version = 2 + i
		step(fmt.Sprintf("a history merge of %d added rows", n), light, func(tx *storage.Tx) error {
			return eng(tx).MergeHistory(ctx, hv, testCols, []string{file})
		})
		hv.Version = 9 + i
		step(fmt.Sprintf("a watched version's history of %d changed rows", n), light, func(tx *storage.Tx) error {
			return eng(tx).WatchHistory(ctx, hv, watched(n, hv.Version), nil)
		})
	}
	wider := append(slices.Clone(testCols), ploti.Column{Name: "units", Type: ploti.Type{Type: ploti.TypeInteger}})
	step("a column added to the history", true, func(tx *storage.Tx) error {
		return eng(tx).WidenHistory(ctx, "ds", "permits", wider)
	})
	wider[len(wider)-1].Type = ploti.Type{Type: ploti.TypeString}
	step("a history column's type changed", false, func(tx *storage.Tx) error {
		return eng(tx).WidenHistory(ctx, "ds", "permits", wider)
	})
}
