package emulator

import (
	"context"
	"fmt"
)

// The demo world's dataset ids.
const (
	// DemoPermits is Orange County's building permits: points, decimals,
	// dates, integers.
	DemoPermits = "ds_fl_orange_permits"
	// DemoParcels is Seminole County's parcels: polygons, numbers, json.
	DemoParcels = "ds_fl_seminole_parcels"
	// DemoInspections is Orange County's restaurant inspections: decimals,
	// dates, timestamps, booleans and lists.
	DemoInspections = "ds_fl_orange_inspections"
)

// Demo is a small seeded world: two Florida counties, three datasets and one
// subscription to both counties, each dataset at version Round.
type Demo struct {
	// Emulator is the emulator it seeded.
	Emulator *Emulator
	// SubscriptionID is the subscription that delivers the three datasets.
	SubscriptionID string
	// Round is the version each dataset is at.
	Round int
}

// DemoDictionary is the data dictionary attached to the demo permits.
const DemoDictionary = "column,meaning\npermit_number,the permit's number\nstatus,applied, under_review or issued\n" +
	"valuation,declared value in US dollars\nissued,the date the permit was issued\nunits,dwelling units\ngeometry,the parcel's point, EPSG:4326\n"

// SeedDemo adds the demo places, topics and datasets to em, subscribes to
// them and publishes version 1 of each. It is deterministic.
func SeedDemo(ctx context.Context, em *Emulator) (*Demo, error) {
	d, err := SeedDemoCatalog(em)
	if err != nil {
		return nil, err
	}
	if d.SubscriptionID, err = em.CreateSubscription(SubscriptionSpec{Name: "Central Florida", Places: []string{"fl-counties"}}); err != nil {
		return nil, fmt.Errorf("seed demo: %w", err)
	}
	if err := d.Next(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// SeedDemoCatalog adds the demo places, topics and datasets to em, with no
// subscription and no version yet: a workspace before its first
// subscription. Next publishes the versions; SubscriptionID stays empty.
func SeedDemoCatalog(em *Emulator) (*Demo, error) {
	em.AddPlace(Place{ID: "fl", Name: "Florida", Kind: "state", State: "fl"})
	em.AddPlace(Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	em.AddTopic("parcels-property", "Parcels and property")
	em.AddTopic("health-safety", "Health and safety")
	specs := []DatasetSpec{
		{ID: DemoPermits, Title: "Orange County Building Permits", PlaceID: "fl-orange", Topic: "development-activity",
			Publisher: "Orange County", SourceURL: "https://example.org/orange/permits", KeyColumns: []string{"permit_number"},
			Columns: []Column{{Name: "permit_number", Type: "string"}, {Name: "status", Type: "string"},
				{Name: "valuation", Type: "decimal", Precision: &Precision{Precision: 14, Scale: 2}},
				{Name: "issued", Type: "date"}, {Name: "units", Type: "integer"},
				{Name: "geometry", Type: "geometry", Geometry: &GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}}}},
		{ID: DemoParcels, Title: "Seminole County Parcels", PlaceID: "fl-seminole", Topic: "parcels-property",
			Publisher: "Seminole County Property Appraiser", KeyColumns: []string{"parcel_id"},
			Columns: []Column{{Name: "parcel_id", Type: "string"}, {Name: "owner", Type: "string"}, {Name: "land_use", Type: "string"},
				{Name: "assessed_value", Type: "decimal", Precision: &Precision{Precision: 14, Scale: 2}},
				{Name: "acres", Type: "number"}, {Name: "attributes", Type: "json"},
				{Name: "geometry", Type: "geometry", Geometry: &GeometryInfo{CRS: "EPSG:4326", Types: []string{"Polygon"}}}}},
		{ID: DemoInspections, Title: "Orange County Restaurant Inspections", PlaceID: "fl-orange", Topic: "health-safety",
			Publisher: "Florida DBPR", KeyColumns: []string{"inspection_id"},
			Columns: []Column{{Name: "inspection_id", Type: "string"}, {Name: "establishment", Type: "string"},
				{Name: "inspected_on", Type: "date"}, {Name: "recorded_at", Type: "timestamp"},
				{Name: "score", Type: "decimal", Precision: &Precision{Precision: 5, Scale: 1}}, {Name: "passed", Type: "boolean"},
				{Name: "violations", Type: "list", Items: &Column{Type: "string"}}}},
	}
	specs[0].Attachments = []Attachment{{Name: "data-dictionary.csv", ContentType: "text/csv", Data: []byte(DemoDictionary)}}
	for _, s := range specs {
		if err := em.AddDataset(s); err != nil {
			return nil, fmt.Errorf("seed demo: %w", err)
		}
	}
	return &Demo{Emulator: em}, nil
}

// Next publishes the next version of each demo dataset: one row removed, one
// added and a few changed, so each version arrives as feed.dataset.updated
// with a changes file.
func (d *Demo) Next(ctx context.Context) error {
	r := d.Round + 1
	queries := map[string]string{
		DemoPermits: fmt.Sprintf(`SELECT 'BP-' || lpad(i::VARCHAR, 4, '0') AS permit_number,
	CASE WHEN (i + %[1]d) %% 3 = 0 THEN 'issued' WHEN i %% 3 = 1 THEN 'applied' ELSE 'under_review' END AS status,
	(1000 * i + CASE WHEN i %% 5 = %[1]d %% 5 THEN %[1]d * 10 ELSE 0 END + 0.25)::DECIMAL(14,2) AS valuation,
	DATE '2026-10-01' + i::INTEGER AS issued, (i %% 4) + 1 AS units,
	'POINT (' || (-81.38 + i * 0.001) || ' ' || (28.54 + i * 0.0005) || ')' AS geometry
FROM range(%[1]d, %[1]d + 20) t(i)`, r),
		DemoParcels: fmt.Sprintf(`SELECT 'SEM-' || lpad(i::VARCHAR, 5, '0') AS parcel_id,
	'Owner ' || (i + CASE WHEN i %% 4 = %[1]d %% 4 THEN 100 ELSE 0 END) AS owner,
	CASE WHEN i %% 2 = 0 THEN 'residential' ELSE 'commercial' END AS land_use,
	(150000 + 1000 * i)::DECIMAL(14,2) AS assessed_value, 0.25 + i / 100.0 AS acres,
	'{"zone": "R' || (i %% 3) || '"}' AS attributes,
	'POLYGON ((' || (-81.30 + i * 0.01) || ' 28.70, ' || (-81.29 + i * 0.01) || ' 28.70, ' || (-81.29 + i * 0.01) || ' 28.71, ' ||
	(-81.30 + i * 0.01) || ' 28.71, ' || (-81.30 + i * 0.01) || ' 28.70))' AS geometry
FROM range(%[1]d, %[1]d + 15) t(i)`, r),
		DemoInspections: fmt.Sprintf(`SELECT 'INS-' || i AS inspection_id, 'Restaurant ' || i AS establishment,
	DATE '2026-09-01' + i::INTEGER AS inspected_on, TIMESTAMPTZ '2026-09-01 12:00:00+00' + to_hours(i) AS recorded_at,
	(80 + (i %% 20) + CASE WHEN i %% 3 = %[1]d %% 3 THEN 0.5 ELSE 0 END)::DECIMAL(5,1) AS score, i %% 5 <> 0 AS passed,
	CASE WHEN i %% 5 = 0 THEN ['handwashing', 'storage'] ELSE []::VARCHAR[] END AS violations
FROM range(%[1]d, %[1]d + 12) t(i)`, r),
	}
	for _, id := range []string{DemoPermits, DemoParcels, DemoInspections} {
		if _, err := d.Emulator.PublishQuery(ctx, id, queries[id]); err != nil {
			return fmt.Errorf("demo round %d: %w", r, err)
		}
	}
	d.Round = r
	return nil
}
