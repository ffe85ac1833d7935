package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// PutDatasets writes a page's registry rows in PostgreSQL as in the DuckDB
// file: new rows, then the same rows with their states changed and, in
// some, a seldom-changing column too (the schema, the title, the keys),
// which it sets only where one differs (storage/registry.go: the
// comparisons must type-check on both engines; text[] against varchar[]
// did not).
func TestRegistry_PutDatasets(t *testing.T) {
	ctx := context.Background()
	db, err := OpenDB(ctx, pgtest.DB(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cols := []ploti.Column{col("permit", ploti.TypeString), col("valuation", ploti.TypeNumber)}
	page := func(status string, title string, keys []string, cols []ploti.Column) []*storage.Dataset {
		var ds []*storage.Dataset
		for _, id := range []string{"ds_a", "ds_b", "ds_c"} {
			ds = append(ds, &storage.Dataset{ID: id, Table: id, Title: title, Version: 2, Status: status, KeyColumns: keys, Columns: cols})
		}
		return ds
	}
	rounds := [][]*storage.Dataset{
		page(storage.StatusCurrent, "Permits", []string{"permit"}, cols),
		page(storage.StatusHeld, "Permits", []string{"permit"}, cols),
		page(storage.StatusCurrent, "Building permits", []string{"permit", "valuation"}, cols[:1]),
	}
	for i, round := range rounds {
		if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasets(ctx, round) }); err != nil {
			t.Fatalf("round %d: %v", i+1, err)
		}
		got, err := db.Datasets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("round %d: %d rows", i+1, len(got))
		}
		for j, d := range got {
			w := round[j]
			if d.ID != w.ID || d.Status != w.Status || d.Title != w.Title || !slices.Equal(d.KeyColumns, w.KeyColumns) || len(d.Columns) != len(w.Columns) {
				t.Fatalf("round %d: row %+v, want %+v", i+1, d, w)
			}
		}
	}
}
