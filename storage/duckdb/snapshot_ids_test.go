package duckdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// The ids of a shared load's snapshots, counted together, refuse what each
// load's own check refuses (docs/design.md invariant 4: a row set that violates
// the key is refused): null ids, an id twice in one row group or across
// row groups, in files of other schemas and id types, a file asked for
// twice counted once. A count kept by CheckSnapshotIDs is used once, by
// the load of its file; a file of no rows (no group in the count) is not
// kept.
func TestTx_checkSnapshotIDsCountsAsEachLoadDoes(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.duckdb"), storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rowsOf := func(n int) string { return strings.Replace(snapQuery, "range(5)", fmt.Sprintf("range(%d)", n), 1) }
	files := map[string]string{
		"good":  mustParquet(t, db, snapQuery),
		"empty": mustParquet(t, db, snapQuery+" WHERE false"),
		"nulls": mustParquet(t, db, "SELECT CASE WHEN permit IN ('P1', 'P3') THEN NULL ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM ("+snapQuery+")"),
		"dups":  mustParquet(t, db, "SELECT * FROM ("+snapQuery+") UNION ALL SELECT * FROM ("+snapQuery+") WHERE permit = 'P2'"),
	}
	// An id twice, in the first and the last of five row groups.
	many := filepath.Join(t.TempDir(), "many.parquet")
	if _, err := db.SQL().Exec("COPY (SELECT CASE WHEN permit = 'P9999' THEN 'r0' ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + rowsOf(10000) + ")) TO " + storage.Literal(many) + " (FORMAT parquet, ROW_GROUP_SIZE 2048)"); err != nil {
		t.Fatal(err)
	}
	files["across"] = many
	// Another dataset's schema: integer ids, other columns.
	files["ints"] = mustParquet(t, db, "SELECT i AS _ploti_record_id, 'x' || i AS other FROM range(7) t(i) UNION ALL SELECT 3, 'again'")
	var list []string
	for _, f := range files {
		list = append(list, f)
	}
	list = append(list, files["good"]) // asked twice: read once
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := eng(tx).CheckSnapshotIDs(ctx, list); err != nil {
		t.Fatal(err)
	}
	want := map[string]idCounts{"good": {5, 0, 0}, "nulls": {5, 2, 0}, "dups": {6, 0, 1}, "across": {10000, 0, 1}, "ints": {8, 0, 1}}
	for name, f := range files {
		got, ok := eng(tx).ids[f]
		if name == "empty" {
			// A file of no rows has no group: its load counts its ids itself.
			if ok {
				t.Fatalf("empty: kept %+v", got)
			}
			continue
		}
		if !ok || got != want[name] {
			t.Fatalf("%s: counted %+v (kept %v), want %+v", name, got, ok, want[name])
		}
		n, nulls, dups, err := eng(tx).checkRecordIDs(ctx, recordIDsOf(duckread.ParquetSource([]string{f})))
		if err != nil || (idCounts{n, nulls, dups}) != got {
			t.Fatalf("%s: counted together %+v, alone %d %d %d (%v)", name, got, n, nulls, dups, err)
		}
	}
	if n, err := tx.Tables().CreateSnapshot(ctx, "good", testCols, []string{files["good"]}); err != nil || n != 5 {
		t.Fatalf("load of good: %d rows, %v", n, err)
	}
	_, err = tx.Tables().CreateSnapshot(ctx, "dups", testCols, []string{files["dups"]})
	var de *storage.DataError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "0 null and 1 duplicate _ploti_record_id") {
		t.Fatalf("load of dups: %v", err)
	}
	if _, ok := eng(tx).ids[files["good"]]; ok {
		t.Fatal("the load did not use the kept count")
	}
	// A second load of the same file checks it itself.
	if n, err := tx.Tables().CreateSnapshot(ctx, "good_again", testCols, []string{files["good"]}); err != nil || n != 5 {
		t.Fatalf("second load of good: %d rows, %v", n, err)
	}
	if _, ok := eng(tx).ids[files["dups"]]; ok {
		t.Fatal("the refused load did not use the kept count")
	}
}

// A file that cannot be read fails the whole check, naming how many
// snapshots it read; the caller loads each dataset on its own then.
func TestTx_checkSnapshotIDsFailsOnAnUnreadableFile(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.duckdb"), storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	junk := filepath.Join(t.TempDir(), "junk.parquet")
	if _, err := db.SQL().Exec("COPY (SELECT 'not parquet' AS x) TO " + storage.Literal(junk) + " (FORMAT csv)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = eng(tx).CheckSnapshotIDs(ctx, []string{mustParquet(t, db, snapQuery), junk})
	if err == nil || !strings.Contains(err.Error(), "check record ids of 2 snapshots") {
		t.Fatalf("got %v", err)
	}
}
