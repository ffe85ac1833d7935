package duckdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

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
	snap := mustParquet(t, db, lightSnapQuery(5000))
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
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

// A merge of a few rows is light, one past lightRows is not, and a
// rollback records nothing; the light checkpoint puts DuckDB's own
// setting back.
func TestCheckpoint_leavesFSSTOutForLightMergesOnly(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	snap := mustParquet(t, db, lightSnapQuery(5000))
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := Of(db).Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	merge := func(file string, version int, fail bool) {
		t.Helper()
		err := db.Update(ctx, func(tx *storage.Tx) error {
			if _, err := tx.Tables().MergeChanges(ctx, "ds", version, "permits", testCols, file, -1); err != nil {
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
	big := lightChanges(t, db, lightRows+1)
	merge(big, 2, true)
	if !Of(db).pending.light() {
		t.Fatal("a rolled-back merge was recorded")
	}
	merge(lightChanges(t, db, 40), 2, false)
	if !Of(db).pending.light() {
		t.Fatal("a merge of 40 rows made the pending writes heavy")
	}
	if err := Of(db).Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var setting string
	if err := db.SQL().QueryRow("SELECT current_setting('disabled_compression_methods')").Scan(&setting); err != nil {
		t.Fatal(err)
	}
	if setting != "" {
		t.Fatalf("disabled_compression_methods = %q after the checkpoint, want DuckDB's default", setting)
	}
	if got := permitCompression(t, db); !got["FSST"] {
		t.Fatalf("the loaded permits are stored %v after the checkpoints, want FSST", got)
	}
	// Two light merges into one table add up.
	merge(lightChanges(t, db, 300), 3, false)
	merge(lightChanges(t, db, 300), 4, false)
	if Of(db).pending.light() {
		t.Fatal("600 rows appended to one table since the checkpoint still read as light")
	}
	if err := Of(db).Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	merge(big, 5, false)
	if Of(db).pending.light() {
		t.Fatalf("a merge of %d rows read as light", lightRows+1)
	}
}
