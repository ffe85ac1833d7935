package storage

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// DatasetStates reads the registry as Datasets does, less the columns.
func TestDatasetStates_isTheRegistryWithoutColumns(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	if err := db.Update(ctx, func(tx *Tx) error {
		return tx.PutDataset(ctx, &Dataset{ID: "ds_a", Table: "ds_a", Title: "A", Status: StatusPending, Source: SourceFeed, Columns: testCols,
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
	row := func(id, title string, version int) *Dataset {
		return &Dataset{ID: id, Table: id, Title: title, Version: version, Status: StatusCurrent, Source: SourceFeed, Columns: testCols,
			KeyColumns: []string{"permit"}}
	}
	if err := db.Update(ctx, func(tx *Tx) error {
		return tx.PutDatasets(ctx, []*Dataset{row("ds_a", "A", 1), row("ds_b", "B", 1)})
	}); err != nil {
		t.Fatal(err)
	}
	// ds_a and ds_b move on (their titles given here differ: not written);
	// ds_c is new, so the whole of every row goes.
	if err := db.Update(ctx, func(tx *Tx) error {
		return tx.PutDatasetStates(ctx, []*Dataset{row("ds_a", "not written", 2), row("ds_b", "not written", 3)})
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
	if err := db.Update(ctx, func(tx *Tx) error {
		return tx.PutDatasetStates(ctx, []*Dataset{row("ds_a", "A2", 4), row("ds_c", "C", 1)})
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
	base := func() *Dataset {
		return &Dataset{ID: "ds_a", Table: "ds_a", Title: "A", PlaceID: "p", Topic: "permits", SchemaVersion: "1.0", KeyColumns: []string{"k"},
			Columns: testCols, Source: SourceFeed, Version: 3, Status: StatusCurrent}
	}
	states := base()
	states.Version, states.Status, states.StatusReason, states.RowCount, states.LastError = 4, StatusFailed, "r", 9, "e"
	if !SameDescription(states, base()) {
		t.Fatal("rows that differ in their states only are not the same description")
	}
	for name, mod := range map[string]func(*Dataset){
		"table": func(d *Dataset) { d.Table = "t2" }, "title": func(d *Dataset) { d.Title = "B" }, "place": func(d *Dataset) { d.PlaceID = "q" },
		"topic": func(d *Dataset) { d.Topic = "parcels" }, "schema version": func(d *Dataset) { d.SchemaVersion = "2.0" },
		"keys": func(d *Dataset) { d.KeyColumns = []string{"k", "j"} }, "skip": func(d *Dataset) { d.SkipUntilRemoved = true },
		"source": func(d *Dataset) { d.Source = SourceWatch }, "no source": func(d *Dataset) { d.Source = "" },
		"columns": func(d *Dataset) { d.Columns = testCols[:1] },
		"a column's type": func(d *Dataset) {
			d.Columns = slices.Clone(testCols)
			d.Columns[0].Type.Type = "integer"
		},
	} {
		d := base()
		mod(d)
		if SameDescription(d, base()) {
			t.Errorf("%s differs, yet the same description", name)
		}
	}
}
