package storage

import (
	"context"
	"reflect"
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
