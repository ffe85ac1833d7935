package replica

import (
	"context"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// schemas-and-holds: a MINOR change adds a column, and "records that did
// not change keep the value your table gives a new column, usually null".
// A geometry column no row gives a value reads from its Parquet files as a
// BLOB of NULLs (DuckDB writes no GeoParquet metadata for it): the merge of
// that version and of the next stay the versions' rows.
func TestScenario_MinorChangeAddsAGeometryColumnWithNoValues(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	cols := []emulator.Column{
		{Name: "permit", Type: "string"}, {Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
		{Name: "issued", Type: "date"}, {Name: "updated_at", Type: "timestamp"}, {Name: "final", Type: "boolean"},
		{Name: "geometry", Type: "geometry"}, {Name: "footprint", Type: "geometry"}}
	rel, err := em.Publish(ctx, "ds_permits", permits(1), emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
	rel, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
	if d := datasetRow(t, r, "ds_permits"); d.Version != rel.Version || len(d.Columns) != len(cols) {
		t.Fatalf("after the versions: v%d with %d columns, want v%d with %d", d.Version, len(d.Columns), rel.Version, len(cols))
	}
}
