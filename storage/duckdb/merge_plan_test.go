package duckdb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// The merge's MERGE gives DuckDB a filtering build side, so that the join
// pushes a Bloom filter of the file's ids into the table's scan and the
// scan hands the join about as many rows as the file has, not every row of
// the table (at 1% of 10M rows the join took 0.26 s of CPU without
// it, 0.05 s with it). The test reads the executed plan's profile. If a
// DuckDB upgrade changes how it decides on join filters, this is where it
// shows.
func TestMergeDeleteSQL_scanOfTheTableIsFilteredByTheFilesIDs(t *testing.T) {
	db := mustOpen(t)
	const rows = 400_000
	// 1,000 changes: a quarter added (ids not held), the rest changed or
	// removed (held).
	f := mustParquet(t, db, `SELECT CASE WHEN k = 0 THEN 'new' || i ELSE 'r' || i END AS _ploti_record_id,
		CASE k WHEN 0 THEN 'added' WHEN 1 THEN 'removed' ELSE 'changed' END AS _ploti_change
		FROM (SELECT i, (i // 400) % 4 AS k FROM range(0, 400000, 400) t(i))`)
	// The file's columns are VARCHAR: the MERGE reads them uncast
	// (changesIDsSQL), as a merge of such a file does; the cast form is
	// for other types.
	src := duckread.ParquetSource([]string{f})
	ids := duckread.ChangesIDsSQL(src, map[string]string{storage.ColRecordID: "VARCHAR", storage.ColChange: "VARCHAR"})
	if ids == duckread.FileIDsSQL(src) {
		t.Fatalf("changesIDsSQL casts VARCHAR columns: %s", ids)
	}
	for i, ids := range []string{ids, duckread.FileIDsSQL(src)} {
		table := fmt.Sprintf("big%d", i)
		if _, err := db.SQL().Exec(`CREATE TABLE main.` + table + ` AS SELECT 'r' || i AS _ploti_record_id, i AS n FROM range(400000) t(i)`); err != nil {
			t.Fatal(err)
		}
		mergeIsFiltered(t, db, table, ids, rows)
	}
}

// mergeIsFiltered runs mergeDeleteSQL on a table of rows rows with ids, a
// query of a changes file's ids, and reads its profile.
func mergeIsFiltered(t *testing.T, db *storage.DB, table, ids string, rows int64) {
	t.Helper()
	var key, plan string
	err := db.SQL().QueryRow("EXPLAIN (ANALYZE, FORMAT json) "+mergeDeleteSQL("main."+table, ids)).Scan(&key, &plan)
	if err != nil {
		t.Fatal(err)
	}
	var root any
	if err := json.Unmarshal([]byte(plan), &root); err != nil {
		t.Fatalf("profile is not JSON: %v\n%s", err, plan)
	}
	scanned, ok := tableScanRows(root, table)
	if !ok {
		t.Fatalf("no scan of table %s in the profile:\n%s", table, plan)
	}
	// 750 rows match; a Bloom filter lets some others through (about
	// 1,800 here, against 399,958 rows scanned without it).
	if scanned > rows/20 {
		t.Fatalf("the table's scan handed the join %d of its %d rows: the file's ids were not pushed into it\n%s", scanned, rows, plan)
	}
	var left int64
	if err := db.SQL().QueryRow(`SELECT count(*) FROM main.` + table).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != rows-750 {
		t.Fatalf("the MERGE left %d rows, want %d", left, rows-750)
	}
}

// tableScanRows finds, in a JSON query profile, the scan of the named
// table and returns the rows it emitted.
func tableScanRows(node any, table string) (int64, bool) {
	switch n := node.(type) {
	case []any:
		for _, c := range n {
			if rows, ok := tableScanRows(c, table); ok {
				return rows, true
			}
		}
	case map[string]any:
		kind, _ := n["operator_type"].(string)
		info, _ := n["extra_info"].(map[string]any)
		name, _ := info["Table"].(string)
		if kind == "TABLE_SCAN" && strings.HasSuffix(name, "main."+table) {
			if rows, ok := n["operator_cardinality"].(float64); ok {
				return int64(rows), true
			}
		}
		if rows, ok := tableScanRows(n["children"], table); ok {
			return rows, true
		}
	}
	return 0, false
}

// MergeChanges runs the very statement whose plan the test above reads
// (review finding: that test calls mergeDeleteSQL directly). DuckDB's
// query log shows what it ran.
func TestTx_MergeChanges_runsMergeDeleteSQL(t *testing.T) {
	db := mustOpen(t)
	ctx := context.Background()
	snap := mustParquet(t, db, snapQuery)
	f := mustParquet(t, db, "SELECT 'changed' AS _ploti_change, * FROM ("+snapQuery+") WHERE _ploti_record_id = 'r1'")
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().Exec("CALL enable_logging('QueryLog')"); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", testCols, f, -1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := mergeDeleteSQL("main."+storage.Ident("permits"), duckread.ChangesIDsSQL(duckread.ParquetSource([]string{f}), map[string]string{storage.ColRecordID: "VARCHAR", storage.ColChange: "VARCHAR"}))
	var n int
	var merges string
	if err := db.SQL().QueryRow(`SELECT count(*) FILTER (WHERE message = ?), coalesce(string_agg(message, chr(10)) FILTER (WHERE message LIKE 'MERGE%'), '')
		FROM duckdb_logs WHERE type = 'QueryLog'`, want).Scan(&n, &merges); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("MergeChanges ran mergeDeleteSQL's statement %d times; its MERGEs:\n%s\nwant:\n%s", n, merges, want)
	}
}
