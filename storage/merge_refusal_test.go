package storage

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The refusal names its id through another pooled connection while the
// merge's transaction holds one: with the public handle limited to one
// connection (common DuckDB advice, and DB.SQL() is the user's handle), it
// must give up on the name, not wait until ctx ends (review finding).
func TestTx_MergeChanges_refusesWithOneConnection(t *testing.T) {
	db := mustOpen(t)
	snap := mustParquet(t, db, snapQuery)
	bg := context.Background()
	if err := db.Update(bg, func(tx *Tx) error { _, err := tx.LoadSnapshot(bg, "permits", testCols, []string{snap}); return err }); err != nil {
		t.Fatal(err)
	}
	f := mustParquet(t, db, "SELECT 'removed' AS _ploti_change, * REPLACE ('zz' AS _ploti_record_id) FROM ("+snapQuery+") LIMIT 1")
	db.SQL().SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	start := time.Now()
	err := db.Update(ctx, func(tx *Tx) error { _, err := tx.MergeChanges(ctx, "ds", 2, "permits", testCols, f, -1); return err })
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("refusal took %s (until ctx ended): %v", took.Round(time.Millisecond), err)
	}
	if !errors.Is(err, ErrBadData) {
		t.Fatalf("err = %v", err)
	}
}
