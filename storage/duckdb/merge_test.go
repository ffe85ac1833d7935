package duckdb

import (
	"context"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// The merge deletes by the row ids one join found. Row ids must
// also name the right rows when the transaction already changed the table:
// a MINOR schema change added a column, and a second changes file of the
// same version changes a row the first added.
func TestTx_MergeChanges_afterChangesInTheSameTransaction(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	snap := mustParquet(t, db, snapQuery)
	changeRow := func(id, change, permit, units string) string {
		return "('" + id + "', '" + change + "', 'fl-orange', '" + permit + "', 1.00::DECIMAL(14,2), TIMESTAMPTZ '2026-03-01 00:00:00+00', ['x'], 'POINT (1 1)'::GEOMETRY, " + units + "::BIGINT)"
	}
	file := func(rows ...string) string {
		return mustParquet(t, db, "SELECT * FROM (VALUES "+strings.Join(rows, ", ")+
			") v(_ploti_record_id, _ploti_change, _ploti_place_id, permit, valuation, issued, tags, geometry, units)")
	}
	first := file(changeRow("r9", "added", "P9", "NULL"), changeRow("r1", "changed", "P1a", "NULL"), changeRow("r2", "removed", "", "NULL"))
	second := file(changeRow("r9", "changed", "P9b", "NULL"), changeRow("r1", "removed", "", "NULL"), changeRow("r3", "changed", "P3b", "NULL"))
	third := file(changeRow("r4", "changed", "P4c", "7"))
	withUnits := append(append([]ploti.Column{}, testCols...), ploti.Column{Name: "units", Type: ploti.Type{Type: ploti.TypeInteger}})
	err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// One transaction, in apply's order (the new columns first, then each
	// file): rows committed before it and rows it inserted.
	err = db.Update(ctx, func(tx *storage.Tx) error {
		if err := tx.Tables().AddColumns(ctx, "permits", withUnits[len(testCols):]); err != nil {
			return err
		}
		for _, f := range []string{first, second, third} {
			if _, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", withUnits, f, -1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.SQL().QueryRow(`SELECT string_agg(_ploti_record_id || '=' || permit || ':' || coalesce(units::VARCHAR, '-'), ' ' ORDER BY _ploti_record_id)
		FROM permits`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "r0=P0:- r3=P3b:- r4=P4c:7 r9=P9b:-"; got != want {
		t.Fatalf("rows = %s, want %s", got, want)
	}
}

// A changes file's columns are read without a cast only where the file has
// them in the table's type: a file whose record ids, kinds of
// change and values come in other types is merged, checked and logged as
// one of the table's own types is, by MergeChanges and by MergeDeferred.
func TestTx_MergeChanges_fileOfOtherTypes(t *testing.T) {
	ctx := context.Background()
	const other = `SELECT CASE i WHEN 1 THEN 'changed' WHEN 2 THEN 'removed' ELSE 'added' END::ENUM('added', 'changed', 'removed') AS _ploti_change,
		i::BIGINT AS _ploti_record_id, 'fl-orange' AS _ploti_place_id, 'Q' || i AS permit, (i * 2.5)::DOUBLE AS valuation,
		DATE '2026-03-01' AS issued, ['x'] AS tags, ('POINT (' || i || ' ' || i || ')')::GEOMETRY AS geometry FROM (VALUES (1), (2), (6)) v(i)`
	// Held ids are text: '01' is not the file's 1, though it is as a number.
	const want = "01=P0:0.00 1=Q1:2.50 3=P3:4.50 4=P4:6.00 6=Q6:15.00 | 1 changed, 2 removed, 6 added"
	for _, deferred := range []bool{false, true} {
		db := mustOpen(t)
		snap := mustParquet(t, db, "SELECT * EXCLUDE (i) REPLACE (CASE i WHEN 0 THEN '01' ELSE CAST(i AS VARCHAR) END AS _ploti_record_id) FROM (SELECT *, row_number() OVER () - 1 AS i FROM ("+snapQuery+"))")
		file := mustParquet(t, db, other)
		err := db.Update(ctx, func(tx *storage.Tx) error {
			_, err := tx.Tables().LoadSnapshot(ctx, "permits", testCols, []string{snap})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(ctx, func(tx *storage.Tx) error {
			if !deferred {
				_, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", testCols, file, 5)
				return err
			}
			m, err := tx.Tables().MergeDeferred(ctx, "ds", 2, "permits", testCols, file, 5)
			if err != nil {
				return err
			}
			return tx.Tables().FinishMerged(ctx, []storage.Merged{m})
		})
		if err != nil {
			t.Fatalf("deferred=%v: %v", deferred, err)
		}
		var rows, log string
		if err := db.SQL().QueryRow(`SELECT string_agg(_ploti_record_id || '=' || permit || ':' || valuation::VARCHAR, ' ' ORDER BY _ploti_record_id) FROM permits`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if err := db.SQL().QueryRow(`SELECT string_agg(record_id || ' ' || change, ', ' ORDER BY record_id) FROM _ploti.changes`).Scan(&log); err != nil {
			t.Fatal(err)
		}
		if got := rows + " | " + log; got != want {
			t.Fatalf("deferred=%v: %s, want %s", deferred, got, want)
		}
	}
}
