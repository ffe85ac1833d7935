package storage

import (
	"context"
	"strings"
	"testing"
)

// A catch-up from a later snapshot logs how it differs from the table:
// here r0 unchanged, r1 changed in its geometry only, r2 in its list,
// r3 removed and r5 added.
func TestTx_LogSnapshotDiff(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	v1 := mustParquet(t, db, snapQuery[:strings.Index(snapQuery, "FROM range(5)")]+"FROM range(4) t(i)")
	v3 := mustParquet(t, db, `SELECT * REPLACE (
			CASE WHEN _ploti_record_id = 'r1' THEN 'POINT (9 9)'::GEOMETRY ELSE geometry END AS geometry,
			CASE WHEN _ploti_record_id = 'r2' THEN ['a'] ELSE tags END AS tags)
		FROM (`+snapQuery+`) WHERE _ploti_record_id <> 'r3' AND _ploti_record_id <> 'r4'
		UNION ALL SELECT 'r5', 'fl-orange', 'P5', 1, TIMESTAMPTZ '2026-01-01 00:00:00+00', [], NULL`)
	err := db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.CreateSnapshot(ctx, "t", testCols, []string{v1}); err != nil {
			return err
		}
		n, err := tx.LogSnapshotDiff(ctx, "ds", 3, "t", testCols, []string{v3})
		if err == nil && n != 4 {
			t.Errorf("logged %d changes, want 4", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.SQL().QueryRow(`SELECT string_agg(record_id || ':' || change, ' ' ORDER BY record_id) FROM _ploti.changes
		WHERE dataset_id = 'ds' AND version = 3`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "r1:changed r2:changed r3:removed r5:added"; got != want {
		t.Fatalf("changes logged: %s, want %s", got, want)
	}
}

// FreeTableNames reads the catalog once for many datasets: a name a
// dataset or a user's table holds, or one chosen in the same call, is
// not given again.
func TestDB_FreeTableNames(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE ds_b AS SELECT 1 AS x; CREATE VIEW ds_c AS SELECT 1 AS x"); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *Tx) error { return tx.PutDataset(ctx, &Dataset{ID: "ds_a", Table: "ds_a"}) }); err != nil {
		t.Fatal(err)
	}
	names, err := db.FreeTableNames(ctx, []string{"DS-A", "ds_b", "ds_c", "ds.d", "ds-d"})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"DS-A": "ds_a_2", "ds_b": "ds_b_2", "ds_c": "ds_c_2", "ds.d": "ds_d", "ds-d": "ds_d_2"} {
		if names[id] != want {
			t.Errorf("%s: %q, want %q", id, names[id], want)
		}
	}
}
