package replica

import (
	"context"
	"testing"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// geometryColumns reads each geometry column's type and comment in a
// dataset's table, as any DuckDB client reads them.
func geometryColumns(tb testing.TB, r *Replica, table string) map[string][2]string {
	tb.Helper()
	rows, err := r.DB().Query(`SELECT column_name, data_type, coalesce(comment, '') FROM duckdb_columns()
		WHERE schema_name = 'main' AND table_name = ? AND comment LIKE '%encoding=%'`, table)
	must(tb, err)
	defer rows.Close()
	out := map[string][2]string{}
	for rows.Next() {
		var name, typ, comment string
		must(tb, rows.Scan(&name, &typ, &comment))
		out[name] = [2]string{typ, comment}
	}
	return out
}

// With Options.Geometry wkb every path that writes a
// table (bootstrap, merge, a MINOR change that adds a geometry column, a
// MAJOR change reloaded, an id map) stores standard WKB and names each
// geometry column's CRS in its comment; the rows match the emulator's
// truth. A file that stored GEOMETRY is converted when opened with wkb.
func TestScenario_GeometryAsWKB(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	path := t.TempDir() + "/replica.duckdb"
	native := mustOpen(t, em, sub, path, func(o *Options) { o.Geometry = storage.GeometryNative })
	mustSync(t, native)
	must(t, native.Close())

	r := mustOpen(t, em, sub, path, func(o *Options) { o.Geometry = storage.GeometryWKB; o.OnMajor = apply.OnMajorReload })
	check := func(step string, version int, want map[string]string) {
		t.Helper()
		for _, id := range []string{"ds_permits", "ds_parcels"} {
			assertMatchesTruth(t, r, em, id, 0)
		}
		if d := datasetRow(t, r, "ds_permits"); d.Version != version {
			t.Fatalf("%s: ds_permits at version %d, want %d", step, d.Version, version)
		}
		got := geometryColumns(t, r, "ds_permits")
		if len(got) != len(want) {
			t.Fatalf("%s: geometry columns %v, want %v", step, got, want)
		}
		for col, comment := range want {
			if got[col] != [2]string{"BLOB", comment} {
				t.Fatalf("%s: %s is %v, want BLOB with comment %q", step, col, got[col], comment)
			}
		}
	}
	check("converted", 1, map[string]string{"geometry": "crs=EPSG:4326; encoding=wkb"})

	withSite := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "site", Type: "geometry",
		Geometry: &emulator.GeometryInfo{CRS: "EPSG:2236", Types: []string{"Polygon"}}})
	rows := permits(1)
	for i, row := range rows {
		if i%3 == 0 {
			row["site"] = "POLYGON ((0 0, 1 0, 1 1, 0 0))"
		}
	}
	rel, err := em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(withSite, []string{"permit"}))
	must(t, err)
	if rel.SchemaBump != "minor" {
		t.Fatalf("emulator: want a MINOR change, got %+v", rel)
	}
	if res := mustSync(t, r); res.ChangesMerged == 0 {
		t.Fatalf("a MINOR change merges: %+v", res)
	}
	check("MINOR", 2, map[string]string{"geometry": "crs=EPSG:4326; encoding=wkb", "site": "crs=EPSG:2236; types=Polygon; encoding=wkb"})

	major := append(append([]emulator.Column{}, permitCols[:4]...), withSite[5:]...) // drop final: MAJOR
	for _, row := range rows {
		delete(row, "final")
	}
	_, err = em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(major, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	if res := mustSync(t, r); res.SnapshotsLoaded != 1 {
		t.Fatalf("a MAJOR change under reload loads the snapshot: %+v", res)
	}
	check("MAJOR", 3, map[string]string{"geometry": "crs=EPSG:4326; encoding=wkb", "site": "crs=EPSG:2236; types=Polygon; encoding=wkb"})

	_, err = em.Publish(ctx, "ds_permits", rows, emulator.WithReplacedIDs(0.5))
	must(t, err)
	mustSync(t, r)
	check("id map", 4, map[string]string{"geometry": "crs=EPSG:4326; encoding=wkb", "site": "crs=EPSG:2236; types=Polygon; encoding=wkb"})
	var n int
	must(t, r.DB().QueryRow("SELECT count(*) FROM _ploti.id_map WHERE dataset_id = 'ds_permits' AND version = 4").Scan(&n))
	if n == 0 {
		t.Fatal("_ploti.id_map has no rows for version 4")
	}
}
