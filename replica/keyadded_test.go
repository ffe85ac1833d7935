package replica

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// schemas-and-holds.txt names as breaking only "a column removed or
// retyped, or the key changed from one set of columns to another or
// dropped (a MAJOR bump)". A key added to a dataset that had none is a
// MINOR change: the replica applies the version's changes, holds nothing,
// and records the key.
func TestDocRule_KeyAddedWhereNoneIsNotBreaking(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	cols := []emulator.Column{{Name: "case_no", Type: "string"}, {Name: "status", Type: "string"}}
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_cases", Title: "Cases", PlaceID: "fl-orange",
		Topic: "development-activity", Columns: cols}))
	rows := func(round int) []emulator.Row {
		var out []emulator.Row
		for i := 0; i < 10; i++ {
			out = append(out, emulator.Row{"case_no": fmt.Sprintf("C-%02d", i), "status": fmt.Sprintf("s%d", (i+round)%3)})
		}
		return out
	}
	_, err := em.Publish(ctx, "ds_cases", rows(0))
	must(t, err)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	rel, err := em.Publish(ctx, "ds_cases", rows(1), emulator.WithSchema(cols, []string{"case_no"}))
	must(t, err)
	if rel.Held || rel.SchemaBump != "minor" || rel.ResyncRequired {
		t.Fatalf("emulator: want a released MINOR change for a key added where none, got %+v", rel)
	}
	res := mustSync(t, r)
	d := datasetRow(t, r, "ds_cases")
	if d.Status != storage.StatusCurrent || d.Version != rel.Version || len(holdsOf(t, r, "ds_cases")) != 0 {
		t.Fatalf("after a key added where none: %s v%d (%s), want current at v%d with no hold", d.Status, d.Version, d.StatusReason, rel.Version)
	}
	if res.ChangesMerged < 1 || !slices.Equal(d.KeyColumns, []string{"case_no"}) || d.SchemaVersion != rel.SchemaVersion {
		t.Fatalf("want the changes merged and the key recorded: %+v, key %v, schema %s", res, d.KeyColumns, d.SchemaVersion)
	}
	assertMatchesTruth(t, r, em, "ds_cases", rel.Version)
}
