package emulator

// The demo world's versions: the rows of each round, and the kinds of
// change Step publishes (updates, a MINOR change, new ids, a MAJOR change).

import (
	"context"
	"fmt"
	"slices"
)

// DemoWatched is Florida's contractor licenses, a statewide dataset the
// demo subscription (which names Florida's counties) does not deliver: the
// demo watches it. SeedDemoWorld and AddWatched add it.
const DemoWatched = "ds_fl_contractor_licenses"

// The kinds of version the demo world publishes (DemoKind).
const (
	// DemoUpdate: rows added, changed and removed (feed.dataset.updated).
	DemoUpdate = "update"
	// DemoMinor: a remarks column added, a MINOR schema change
	// (feed.dataset.schema_changed, then updated).
	DemoMinor = "minor"
	// DemoRenameIDs: a quarter of the records under new ids
	// (resync_required, reason record_ids_changed, with an id map).
	DemoRenameIDs = "rename-ids"
	// DemoMajor: the remarks column dropped again, a MAJOR schema change
	// that Ploti releases (resync_required, reason schema_changed) and a
	// replica on --on-major hold holds for review.
	DemoMajor = "major"
)

// demoRemarks is the column a MINOR change adds and a MAJOR change drops.
const demoRemarks = "remarks"

// demoReplaced is the share of records a DemoRenameIDs version renames.
const demoReplaced = 0.25

// DemoKind is the kind of version Step publishes at a dataset's round r
// (round 1 is its first version): a MINOR change at rounds 4, 14, 24 …,
// new ids at 7, 17 …, a MAJOR change at 10, 20 …, updates otherwise. A
// MINOR change on a schema that has the remarks column already, or a MAJOR
// one on a schema without it, is published as an update.
func DemoKind(r int) string {
	switch {
	case r < 2:
		return DemoUpdate
	case r%10 == 4:
		return DemoMinor
	case r%10 == 7:
		return DemoRenameIDs
	case r%10 == 0:
		return DemoMajor
	}
	return DemoUpdate
}

// demoState is where one demo dataset is.
type demoState struct {
	spec    DatasetSpec // its first schema
	round   int         // the rounds published
	remarks bool        // its schema has the remarks column
}

// demoSpecs are the demo's subscribed datasets.
func demoSpecs() []DatasetSpec {
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
	return specs
}

// demoWatchedSpec is DemoWatched's.
func demoWatchedSpec() DatasetSpec {
	return DatasetSpec{ID: DemoWatched, Title: "Florida Contractor Licenses", PlaceID: "fl",
		Topic: "development-activity", Publisher: "Florida DBPR", KeyColumns: []string{"license_number"},
		Columns: []Column{{Name: "license_number", Type: "string"}, {Name: "holder", Type: "string"},
			{Name: "status", Type: "string"}, {Name: "expires", Type: "date"},
			{Name: "bond", Type: "decimal", Precision: &Precision{Precision: 12, Scale: 2}},
			{Name: "office", Type: "geometry", Geometry: &GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}}}}
}

// demoRows is the SELECT of a demo dataset's rows at round r: each round
// one row is removed, one added and a few changed.
func demoRows(id string, r int) string {
	switch id {
	case DemoPermits:
		return fmt.Sprintf(`SELECT 'BP-' || lpad(i::VARCHAR, 4, '0') AS permit_number,
	CASE WHEN (i + %[1]d) %% 3 = 0 THEN 'issued' WHEN i %% 3 = 1 THEN 'applied' ELSE 'under_review' END AS status,
	(1000 * i + CASE WHEN i %% 5 = %[1]d %% 5 THEN %[1]d * 10 ELSE 0 END + 0.25)::DECIMAL(14,2) AS valuation,
	DATE '2026-10-01' + i::INTEGER AS issued, (i %% 4) + 1 AS units,
	'POINT (' || (-81.38 + i * 0.001) || ' ' || (28.54 + i * 0.0005) || ')' AS geometry
FROM range(%[1]d, %[1]d + 20) t(i)`, r)
	case DemoParcels:
		return fmt.Sprintf(`SELECT 'SEM-' || lpad(i::VARCHAR, 5, '0') AS parcel_id,
	'Owner ' || (i + CASE WHEN i %% 4 = %[1]d %% 4 THEN 100 ELSE 0 END) AS owner,
	CASE WHEN i %% 2 = 0 THEN 'residential' ELSE 'commercial' END AS land_use,
	(150000 + 1000 * i)::DECIMAL(14,2) AS assessed_value, 0.25 + i / 100.0 AS acres,
	'{"zone": "R' || (i %% 3) || '"}' AS attributes,
	'POLYGON ((' || (-81.30 + i * 0.01) || ' 28.70, ' || (-81.29 + i * 0.01) || ' 28.70, ' || (-81.29 + i * 0.01) || ' 28.71, ' ||
	(-81.30 + i * 0.01) || ' 28.71, ' || (-81.30 + i * 0.01) || ' 28.70))' AS geometry
FROM range(%[1]d, %[1]d + 15) t(i)`, r)
	case DemoInspections:
		return fmt.Sprintf(`SELECT 'INS-' || i AS inspection_id, 'Restaurant ' || i AS establishment,
	DATE '2026-09-01' + i::INTEGER AS inspected_on, TIMESTAMPTZ '2026-09-01 12:00:00+00' + to_hours(i) AS recorded_at,
	(80 + (i %% 20) + CASE WHEN i %% 3 = %[1]d %% 3 THEN 0.5 ELSE 0 END)::DECIMAL(5,1) AS score, i %% 5 <> 0 AS passed,
	CASE WHEN i %% 5 = 0 THEN ['handwashing', 'storage'] ELSE []::VARCHAR[] END AS violations
FROM range(%[1]d, %[1]d + 12) t(i)`, r)
	case DemoWatched:
		// One license lapses, one is issued and a few change status.
		return fmt.Sprintf(`SELECT 'CGC' || (1500000 + i) AS license_number, 'Builder ' || i AS holder,
	CASE WHEN (i + %[1]d) %% 4 = 0 THEN 'delinquent' ELSE 'active' END AS status,
	DATE '2027-08-31' + (i * 30)::INTEGER AS expires, (10000 + 2500 * (i %% 4))::DECIMAL(12,2) AS bond,
	'POINT (' || (-82.45 + i * 0.01) || ' ' || (27.95 + i * 0.01) || ')' AS office
FROM range(%[1]d, %[1]d + 25) t(i)`, r-1)
	}
	return ""
}

// query is the dataset's rows at round r, with the remarks column when
// remarks is set: some records flagged, the rest null.
func (st *demoState) query(r int, remarks bool) string {
	q := demoRows(st.spec.ID, r)
	if !remarks {
		return q
	}
	return fmt.Sprintf(`SELECT q.*, CASE WHEN right(CAST(q.%s AS VARCHAR), 1) IN ('0', '5') THEN 'flagged for review' END AS %s FROM (%s) q`,
		ident(st.spec.KeyColumns[0]), ident(demoRemarks), q)
}

// columns is the dataset's schema with or without the remarks column.
func (st *demoState) columns(remarks bool) []Column {
	cols := cloneColumns(st.spec.Columns)
	if remarks {
		cols = append(cols, Column{Name: demoRemarks, Type: "string"})
	}
	return cols
}

// add adds a dataset to the emulator and to the world.
func (d *Demo) add(spec DatasetSpec) error {
	if err := d.Emulator.AddDataset(spec); err != nil {
		return fmt.Errorf("seed demo: %w", err)
	}
	d.ids = append(d.ids, spec.ID)
	d.datasets[spec.ID] = &demoState{spec: spec}
	return nil
}

// AddWatched adds DemoWatched to the world: Next and Step publish it too,
// after the others. It has no version until the next round. Adding it twice
// changes nothing.
func (d *Demo) AddWatched() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.datasets[DemoWatched] != nil {
		return nil
	}
	return d.add(demoWatchedSpec())
}

// Datasets lists the world's dataset ids, in the order a round publishes
// them.
func (d *Demo) Datasets() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.ids)
}

// Step publishes the next version of each dataset of the world, of the
// kind its round decides (DemoKind), and returns them in order.
func (d *Demo) Step(ctx context.Context) ([]Release, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Release
	for _, id := range d.ids {
		rel, err := d.publishLocked(ctx, id, DemoKind(d.datasets[id].round+1))
		if err != nil {
			return out, fmt.Errorf("demo round %d: %w", d.Round+1, err)
		}
		out = append(out, rel)
	}
	d.Round++
	return out, nil
}

// stateLocked is a dataset of the world, or ErrNotFound.
func (d *Demo) stateLocked(op, id string) (*demoState, error) {
	st := d.datasets[id]
	if st == nil {
		return nil, fmt.Errorf("%s %s: %w: not a dataset of the demo world (Publish and PublishQuery publish any dataset)", op, id, ErrNotFound)
	}
	return st, nil
}

// publishLocked publishes a dataset's next round as a version of kind.
func (d *Demo) publishLocked(ctx context.Context, id, kind string) (Release, error) {
	st, err := d.stateLocked("publish", id)
	if err != nil {
		return Release{}, err
	}
	r, remarks := st.round+1, st.remarks
	var opts []PublishOption
	switch {
	case kind == DemoMinor && !remarks:
		remarks = true
		opts = append(opts, WithSchema(st.columns(true), st.spec.KeyColumns))
	case kind == DemoMajor && remarks:
		// Ploti releases it; the replica decides (--on-major).
		remarks = false
		opts = append(opts, WithSchema(st.columns(false), st.spec.KeyColumns), SkipReview())
	case kind == DemoRenameIDs:
		opts = append(opts, WithReplacedIDs(demoReplaced))
	}
	rel, err := d.Emulator.PublishQuery(ctx, id, st.query(r, remarks), opts...)
	if err != nil {
		return Release{}, err
	}
	st.round, st.remarks = r, remarks
	return rel, nil
}

// holdReasons are the reasons HoldNext takes.
var holdReasons = []string{"row_drop", "schema_change", "identity_ambiguous", "identity_unresolved", "key_violation"}

// holdLocked publishes a dataset's next round as a version Ploti holds for
// reason; for row_drop the version has half the round's rows.
func (d *Demo) holdLocked(ctx context.Context, id, reason string) (Release, error) {
	st, err := d.stateLocked("hold", id)
	if err != nil {
		return Release{}, err
	}
	if !slices.Contains(holdReasons, reason) {
		return Release{}, fmt.Errorf("hold %s: %w: reason %q is not one of %v", id, ErrInvalid, reason, holdReasons)
	}
	r := st.round + 1
	q := st.query(r, st.remarks)
	if reason == "row_drop" {
		q = "SELECT * FROM (SELECT *, row_number() OVER () AS _demo_n FROM (" + q + ")) WHERE _demo_n % 2 = 0"
	}
	rel, err := d.Emulator.PublishQuery(ctx, id, q, Hold(reason))
	if err != nil {
		return Release{}, err
	}
	st.round = r
	return rel, nil
}
