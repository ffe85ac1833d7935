package emulator

import "testing"

// A geometry column no row gives a value: DuckDB leaves it out of the
// file's GeoParquet metadata, so it reads back as a BLOB of NULLs, and the
// next version's comparison of it (by WKB) must still work: a MINOR change
// that adds a geometry column, then two more versions.
func TestPublish_aGeometryColumnWithNoValues(t *testing.T) {
	em := mustEmulator(t)
	rows := []Row{permit("P-1", "1.00", -81.25), permit("P-2", "2.00", -81.5)}
	mustPublish(t, em, rows)
	cols := append(permitColumns(), Column{Name: "footprint", Type: "geometry", Geometry: &GeometryInfo{CRS: "EPSG:4326", Types: []string{"Polygon"}}})
	mustPublish(t, em, rows, WithSchema(cols, []string{"permit_number"}))
	rows[0]["valuation"] = "3.00"
	mustPublish(t, em, rows)
	rows[1]["valuation"] = "4.00"
	rel := mustPublish(t, em, rows)
	if rel.Changed != 1 {
		t.Fatalf("the last version changed %d rows, want 1", rel.Changed)
	}
}
