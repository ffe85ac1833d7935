package emulator

import (
	"context"
	"testing"
)

// Diff finds a changed value, a missing row and an extra row, and nothing
// in a copy of the truth (geometry and timestamps compared as values).
func TestEmulator_Diff(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	mustPublish(t, em, []Row{permit("P-1", "10.00", 1), permit("P-2", "20.00", 2), permit("P-3", "30.00", 3)})
	truth, err := em.Truth(ctx, dsPermits, 1)
	if err != nil {
		t.Fatal(err)
	}
	db := testDB(t)
	if _, err := db.Exec("CREATE TABLE held AS SELECT * FROM read_parquet(" + quoteLiteral(truth) + ")"); err != nil {
		t.Fatal(err)
	}
	check := func(name string, wantExtra, wantMissing int64) {
		t.Helper()
		extra, missing, err := em.Diff(ctx, db, "held", dsPermits, 1)
		if err != nil || extra != wantExtra || missing != wantMissing {
			t.Fatalf("%s: extra %d missing %d (%v), want %d and %d", name, extra, missing, err, wantExtra, wantMissing)
		}
	}
	check("a copy of the truth", 0, 0)
	if _, err := db.Exec("UPDATE held SET permit_number = 'X' WHERE permit_number = 'P-1'"); err != nil {
		t.Fatal(err)
	}
	check("one value changed", 1, 1)
	if _, err := db.Exec("DELETE FROM held WHERE permit_number = 'X'"); err != nil {
		t.Fatal(err)
	}
	check("one row missing", 0, 1)
}
