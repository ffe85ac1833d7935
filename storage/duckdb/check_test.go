package duckdb

import (
	"context"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Repeats are found through sorted hashes first; the counts must
// stay the exact ones count(DISTINCT) gave.
func TestTx_checkRecordIDs(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	for _, tc := range []struct {
		name              string
		ids               string
		n, nulls, repeats int64
	}{
		{"unique", "('r1'), ('r2'), ('r3')", 3, 0, 0},
		{"repeats and nulls", "('r1'), ('r1'), ('r1'), ('r2'), (NULL), (NULL), ('r3')", 7, 2, 2},
		{"empty", "(NULL)", 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := db.Update(ctx, func(tx *storage.Tx) error {
				if _, err := tx.Exec(ctx, "CREATE OR REPLACE TABLE main.ids AS SELECT * FROM (VALUES "+tc.ids+") v(_ploti_record_id)"); err != nil {
					return err
				}
				n, nulls, repeats, err := eng(tx).checkRecordIDs(ctx, "main.ids")
				if err != nil {
					return err
				}
				if n != tc.n || nulls != tc.nulls || repeats != tc.repeats {
					t.Fatalf("rows, nulls, repeats = %d, %d, %d; want %d, %d, %d", n, nulls, repeats, tc.n, tc.nulls, tc.repeats)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
