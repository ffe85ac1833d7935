package duckdb

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// DatasetStates reads the registry as Datasets does, less the columns.
func TestDatasetStates_isTheRegistryWithoutColumns(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a", Table: "ds_a", Title: "A", Status: storage.StatusPending, Source: storage.SourceFeed, Columns: testCols,
			KeyColumns: []string{"permit"}})
	}); err != nil {
		t.Fatal(err)
	}
	full, err := db.Datasets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states, err := db.DatasetStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 1 || len(full[0].Columns) == 0 || len(states) != 1 || len(states[0].Columns) != 0 {
		t.Fatalf("Datasets %+v, DatasetStates %+v", full, states)
	}
	full[0].Columns = nil
	states[0].Columns = nil
	if !reflect.DeepEqual(full[0], states[0]) {
		t.Fatalf("Datasets %+v, DatasetStates %+v", full[0], states[0])
	}
}

// PutDatasetStates writes the rows' versions and states and leaves their
// seldom-changing columns as the registry holds them (its caller gives it
// only rows whose description did not change: SameDescription); a row
// the registry does not hold is written whole.
func TestTx_PutDatasetStates_writesStatesAndNewRowsWhole(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	row := func(id, title string, version int) *storage.Dataset {
		return &storage.Dataset{ID: id, Table: id, Title: title, Version: version, Status: storage.StatusCurrent, Source: storage.SourceFeed, Columns: testCols,
			KeyColumns: []string{"permit"}}
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		return tx.PutDatasets(ctx, []*storage.Dataset{row("ds_a", "A", 1), row("ds_b", "B", 1)})
	}); err != nil {
		t.Fatal(err)
	}
	// ds_a and ds_b move on (their titles given here differ: not written);
	// ds_c is new, so the whole of every row goes.
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		return tx.PutDatasetStates(ctx, []*storage.Dataset{row("ds_a", "not written", 2), row("ds_b", "not written", 3)})
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	ds, err := db.Datasets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		got[d.ID] = fmt.Sprintf("%s v%d", d.Title, d.Version)
	}
	if want := map[string]string{"ds_a": "A v2", "ds_b": "B v3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the states: %v, want %v", got, want)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		return tx.PutDatasetStates(ctx, []*storage.Dataset{row("ds_a", "A2", 4), row("ds_c", "C", 1)})
	}); err != nil {
		t.Fatal(err)
	}
	ds, err = db.Datasets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clear(got)
	for _, d := range ds {
		got[d.ID] = fmt.Sprintf("%s v%d %d", d.Title, d.Version, len(d.Columns))
	}
	n := len(testCols)
	if want := map[string]string{"ds_a": fmt.Sprintf("A2 v4 %d", n), "ds_b": fmt.Sprintf("B v3 %d", n), "ds_c": fmt.Sprintf("C v1 %d", n)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("with a new row: %v, want %v", got, want)
	}
}

// SameDescription tells apart rows that differ in any column
// PutDatasetStates leaves alone, and only those.
func TestSameDescription_seesEachSeldomChangingColumn(t *testing.T) {
	base := func() *storage.Dataset {
		return &storage.Dataset{ID: "ds_a", Table: "ds_a", Title: "A", PlaceID: "p", Topic: "permits", SchemaVersion: "1.0", KeyColumns: []string{"k"},
			Columns: testCols, Source: storage.SourceFeed, Version: 3, Status: storage.StatusCurrent}
	}
	states := base()
	states.Version, states.Status, states.StatusReason, states.RowCount, states.LastError = 4, storage.StatusFailed, "r", 9, "e"
	if !storage.SameDescription(states, base()) {
		t.Fatal("rows that differ in their states only are not the same description")
	}
	for name, mod := range map[string]func(*storage.Dataset){
		"table": func(d *storage.Dataset) { d.Table = "t2" }, "title": func(d *storage.Dataset) { d.Title = "B" }, "place": func(d *storage.Dataset) { d.PlaceID = "q" },
		"topic": func(d *storage.Dataset) { d.Topic = "parcels" }, "schema version": func(d *storage.Dataset) { d.SchemaVersion = "2.0" },
		"keys": func(d *storage.Dataset) { d.KeyColumns = []string{"k", "j"} }, "skip": func(d *storage.Dataset) { d.SkipUntilRemoved = true },
		"source": func(d *storage.Dataset) { d.Source = storage.SourceWatch }, "no source": func(d *storage.Dataset) { d.Source = "" },
		"columns": func(d *storage.Dataset) { d.Columns = testCols[:1] },
		"a column's type": func(d *storage.Dataset) {
			d.Columns = slices.Clone(testCols)
			d.Columns[0].Type.Type = "integer"
		},
	} {
		d := base()
		mod(d)
		if storage.SameDescription(d, base()) {
			t.Errorf("%s differs, yet the same description", name)
		}
	}
}
