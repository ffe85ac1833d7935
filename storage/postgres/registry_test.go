package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/internal/storagetest"
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
	db := mustOpenDB(t)
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

// PutDatasetStates writes only the states of rows it finds (their
// descriptions as they were, whatever the rows given say) and inserts new
// rows whole, in PostgreSQL as in the DuckDB file
// (storage.TestTx_PutDatasetStates_writesStatesAndNewRowsWhole).
func TestRegistry_PutDatasetStates(t *testing.T) {
	ctx := context.Background()
	db := mustOpenDB(t)
	cols := []ploti.Column{col("permit", ploti.TypeString), col("valuation", ploti.TypeNumber)}
	row := func(id, title string, version int) *storage.Dataset {
		return &storage.Dataset{ID: id, Table: id, Title: title, Version: version, Status: storage.StatusCurrent, KeyColumns: []string{"permit"}, Columns: cols}
	}
	steps := []struct {
		put  []*storage.Dataset
		want map[string]string
	}{
		{[]*storage.Dataset{row("ds_a", "A", 1), row("ds_b", "B", 1)}, nil}, // PutDatasets
		{[]*storage.Dataset{row("ds_a", "not written", 2), row("ds_b", "not written", 3)}, map[string]string{"ds_a": "A v2", "ds_b": "B v3"}},
		{[]*storage.Dataset{row("ds_a", "A2", 4), row("ds_c", "C", 1)}, map[string]string{"ds_a": "A2 v4", "ds_b": "B v3", "ds_c": "C v1"}},
	}
	for i, s := range steps {
		err := db.Update(ctx, func(tx *storage.Tx) error {
			if i == 0 {
				return tx.PutDatasets(ctx, s.put)
			}
			return tx.PutDatasetStates(ctx, s.put)
		})
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		if s.want == nil {
			continue
		}
		ds, err := db.Datasets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, d := range ds {
			got[d.ID] = fmt.Sprintf("%s v%d", d.Title, d.Version)
			if len(d.Columns) != len(cols) {
				t.Fatalf("step %d: %s has %d columns, want %d", i+1, d.ID, len(d.Columns), len(cols))
			}
		}
		if !maps.Equal(got, s.want) {
			t.Fatalf("step %d: %v, want %v", i+1, got, s.want)
		}
	}
}

// A bootstrap registers every dataset a manifest lists in one PutDatasets
// (replica's registerPending): a statewide subscription's 4,000 rows are
// more than the 65,535 parameters one PostgreSQL statement takes, at 19 a
// row; each statement takes them in parts.
func TestRegistry_PutDatasets_moreRowsThanAStatementsParameters(t *testing.T) {
	ctx := context.Background()
	db := mustOpenDB(t)
	const n = 4000
	rows := func(status string) []*storage.Dataset {
		ds := make([]*storage.Dataset, n)
		for i := range ds {
			id := fmt.Sprintf("ds_%04d", i)
			ds[i] = &storage.Dataset{ID: id, Table: id, Status: status, KeyColumns: []string{"k"}}
		}
		return ds
	}
	for _, status := range []string{storage.StatusPending, storage.StatusCurrent} {
		if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasets(ctx, rows(status)) }); err != nil {
			t.Fatalf("put %d %s rows: %v", n, status, err)
		}
		if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDatasetStates(ctx, rows(status)) }); err != nil {
			t.Fatalf("put %d %s states: %v", n, status, err)
		}
		got, err := db.Datasets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n || got[0].Status != status || got[n-1].Status != status {
			t.Fatalf("%d rows (first %s, last %s), want %d %s", len(got), got[0].Status, got[n-1].Status, n, status)
		}
	}
}

// The attachments a sync keeps are written at once too (replica's
// syncAttachments): 4,000 datasets of two each are 72,000 parameters at
// nine an attachment, more than one PostgreSQL statement takes.
func TestRegistry_PutAttachmentSets_moreThanAStatementsParameters(t *testing.T) {
	ctx := context.Background()
	db := mustOpenDB(t)
	const n = 4000
	sets := make([]storage.AttachmentSet, n)
	for i := range sets {
		id := fmt.Sprintf("ds_%04d", i)
		sets[i] = storage.AttachmentSet{DatasetID: id, Version: 1}
		for _, name := range []string{"a.csv", "b.pdf"} {
			sets[i].List = append(sets[i].List, storage.Attachment{Name: name, Bytes: 1, SHA256: "00", Content: []byte("x")})
		}
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutAttachmentSets(ctx, sets) }); err != nil {
		t.Fatalf("put %d datasets' attachments: %v", n, err)
	}
	syncs, err := db.AttachmentSyncs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := db.AttachmentsOf(ctx, []string{"ds_0000", "ds_3999"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(syncs) != n || len(kept["ds_0000"]) != 2 || len(kept["ds_3999"]) != 2 {
		t.Fatalf("%d datasets recorded, %d and %d attachments kept of the first and last; want %d, 2 and 2",
			len(syncs), len(kept["ds_0000"]), len(kept["ds_3999"]), n)
	}
}

// mustOpenDB opens a fresh database through the storage seam (a
// storage.DB on the PostgreSQL engine), closed with the test.
func mustOpenDB(t *testing.T) *storage.DB {
	t.Helper()
	db, err := OpenDB(context.Background(), pgtest.DB(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestDB_runRows_writtenByTheSyncsFirstTransaction(t *testing.T) {
	storagetest.RunRows(t, mustOpenDB(t))
}

// A registry row's key columns go in a statement of their own, which
// matches the row only when they differ (storage/registry.go): both
// statements must type-check on PostgreSQL, and the keys change.
func TestRegistry_PutDataset_keyColumns(t *testing.T) {
	ctx := context.Background()
	db := mustOpenDB(t)
	for i, keys := range [][]string{{"permit"}, {"permit"}, {"permit", "issued"}, nil} {
		d := &storage.Dataset{ID: "ds_a", Table: "ds_a", Version: i + 1, Status: storage.StatusCurrent, KeyColumns: keys}
		if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) }); err != nil {
			t.Fatalf("round %d: %v", i+1, err)
		}
		got, err := db.Dataset(ctx, "ds_a")
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != i+1 || !slices.Equal(got.KeyColumns, keys) {
			t.Fatalf("round %d: version %d, keys %q; want %d, %q", i+1, got.Version, got.KeyColumns, i+1, keys)
		}
	}
}
