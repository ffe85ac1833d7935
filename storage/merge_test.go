package storage

import (
	"context"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// Issue 6: the merge deletes by the row ids one join found. Row ids must
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
	err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{snap})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// One transaction, in apply's order (the new columns first, then each
	// file): rows committed before it and rows it inserted.
	err = db.Update(ctx, func(tx *Tx) error {
		if err := tx.AddColumns(ctx, "permits", withUnits[len(testCols):]); err != nil {
			return err
		}
		for _, f := range []string{first, second, third} {
			if _, err := tx.MergeChanges(ctx, "ds", 2, "permits", withUnits, f, -1); err != nil {
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
