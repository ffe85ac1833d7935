package emulator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The demo world: two Florida counties, three datasets (building permits
// with points, parcels with polygons, restaurant inspections with decimals,
// dates, timestamps, booleans and lists) and one subscription to both
// counties. `ploti-replica demo` and `ploti-replica emulator --demo` use it.

// Demo dataset ids.
const (
	DemoPermits     = "ds_fl_orange_permits"
	DemoParcels     = "ds_fl_seminole_parcels"
	DemoInspections = "ds_fl_orange_inspections"
)

// Demo is a seeded demo world on an emulator.
type Demo struct {
	em             *Emulator
	SubscriptionID string
	round          int
	permits        []Row
	parcels        []Row
	inspections    []Row
}

// SeedDemo adds the demo places, topics, datasets and subscription, and
// publishes each dataset's first version.
func SeedDemo(ctx context.Context, em *Emulator) (*Demo, error) {
	em.AddPlace(Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	em.AddTopic("parcels-property", "Parcels and property")
	em.AddTopic("health-safety", "Health and safety")
	specs := []DatasetSpec{
		{ID: DemoPermits, Title: "Orange County Building Permits", PlaceID: "fl-orange", Topic: "development-activity",
			Publisher: "Orange County", SourceURL: "https://example.org/permits", KeyColumns: []string{"permit_number"},
			Columns: []Column{
				{Name: "permit_number", Type: "string"},
				{Name: "issued_date", Type: "date"},
				{Name: "status", Type: "string"},
				{Name: "valuation", Type: "decimal", Precision: &Precision{Precision: 14, Scale: 2}},
				{Name: "description", Type: "string"},
				{Name: "units", Type: "integer"},
				{Name: "geometry", Type: "geometry", Geometry: &GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}},
			}},
		{ID: DemoParcels, Title: "Seminole County Parcels", PlaceID: "fl-seminole", Topic: "parcels-property",
			Publisher: "Seminole County Property Appraiser", KeyColumns: []string{"parcel_id"},
			Columns: []Column{
				{Name: "parcel_id", Type: "string"},
				{Name: "owner", Type: "string"},
				{Name: "land_use", Type: "string"},
				{Name: "acres", Type: "number"},
				{Name: "geometry", Type: "geometry", Geometry: &GeometryInfo{CRS: "EPSG:4326", Types: []string{"Polygon"}}},
			}},
		{ID: DemoInspections, Title: "Orange County Restaurant Inspections", PlaceID: "fl-orange", Topic: "health-safety",
			KeyColumns: []string{"inspection_id"},
			Columns: []Column{
				{Name: "inspection_id", Type: "string"},
				{Name: "establishment", Type: "string"},
				{Name: "inspected_on", Type: "date"},
				{Name: "recorded_at", Type: "timestamp"},
				{Name: "score", Type: "decimal", Precision: &Precision{Precision: 5, Scale: 1}},
				{Name: "passed", Type: "boolean"},
				{Name: "violations", Type: "list", Items: &Column{Type: "string"}},
			}},
	}
	for _, s := range specs {
		if err := em.AddDataset(s); err != nil {
			return nil, err
		}
	}
	sub, err := em.CreateSubscription(SubscriptionSpec{Name: "Central Florida", Places: []string{"fl-orange", "fl-seminole"}})
	if err != nil {
		return nil, err
	}
	d := &Demo{em: em, SubscriptionID: sub}
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 240 {
		d.permits = append(d.permits, demoPermit(r, i))
	}
	for i := range 120 {
		d.parcels = append(d.parcels, demoParcel(r, i))
	}
	for i := range 150 {
		d.inspections = append(d.inspections, demoInspection(r, i))
	}
	if err := d.publishAll(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Demo) publishAll(ctx context.Context) error {
	for _, p := range []struct {
		id   string
		rows []Row
	}{{DemoPermits, d.permits}, {DemoParcels, d.parcels}, {DemoInspections, d.inspections}} {
		if _, err := d.em.Publish(ctx, p.id, p.rows); err != nil {
			return fmt.Errorf("publish demo %s: %w", p.id, err)
		}
	}
	return nil
}

// Next publishes one more version of every demo dataset, with rows added,
// changed and removed, and advances the emulator clock by a day.
func (d *Demo) Next(ctx context.Context) error {
	d.round++
	r := rand.New(rand.NewPCG(uint64(d.round), 99))
	d.em.Advance(24 * time.Hour)
	statuses := []string{"issued", "under review", "finaled", "expired"}
	for i := range d.permits {
		if r.IntN(10) == 0 {
			d.permits[i]["status"] = statuses[r.IntN(len(statuses))]
		}
	}
	d.permits = d.permits[3:] // the oldest permits age out of the source
	for i := range 12 {
		d.permits = append(d.permits, demoPermit(r, 1000*d.round+i))
	}
	for i := range d.parcels {
		if r.IntN(15) == 0 {
			d.parcels[i]["owner"] = demoOwners[r.IntN(len(demoOwners))]
		}
	}
	d.parcels = append(d.parcels[:5], d.parcels[6:]...)
	d.parcels = append(d.parcels, demoParcel(r, 500+d.round))
	for i := range d.inspections {
		if r.IntN(8) == 0 {
			d.inspections[i]["passed"] = !d.inspections[i]["passed"].(bool)
		}
	}
	d.inspections = d.inspections[2:]
	for i := range 6 {
		d.inspections = append(d.inspections, demoInspection(r, 1000*d.round+i))
	}
	return d.publishAll(ctx)
}

var demoOwners = []string{"Rivera Family Trust", "Lake Mary Holdings LLC", "J. Okafor", "Sanford Commons LP", "M. Chen", "Oviedo Land Co"}

func demoPermit(r *rand.Rand, i int) Row {
	kinds := []string{"Re-roof", "New single family residence", "Pool enclosure", "Solar PV system", "Interior remodel", "Commercial alteration"}
	return Row{
		"permit_number": fmt.Sprintf("BLD-2026-%05d", i),
		"issued_date":   time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(300)),
		"status":        []string{"issued", "under review", "finaled"}[r.IntN(3)],
		"valuation":     fmt.Sprintf("%d.%02d", 1000+r.IntN(900000), r.IntN(100)),
		"description":   fmt.Sprintf("%s at %d %s", kinds[r.IntN(len(kinds))], 100+r.IntN(9000), []string{"Colonial Dr", "Orange Ave", "Kirkman Rd", "Semoran Blvd"}[r.IntN(4)]),
		"units":         int64(r.IntN(4)),
		"geometry":      fmt.Sprintf("POINT (%.5f %.5f)", -81.5+r.Float64()*0.4, 28.35+r.Float64()*0.3),
	}
}

func demoParcel(r *rand.Rand, i int) Row {
	x, y := -81.35+r.Float64()*0.2, 28.65+r.Float64()*0.15
	s := 0.001 + r.Float64()*0.002
	return Row{
		"parcel_id": fmt.Sprintf("%02d-21-30-%04d", 10+i%40, i),
		"owner":     demoOwners[r.IntN(len(demoOwners))],
		"land_use":  []string{"single family", "vacant residential", "commercial", "agricultural"}[r.IntN(4)],
		"acres":     float64(int(s*s*1e7)) / 100,
		"geometry":  fmt.Sprintf("POLYGON ((%.5f %.5f, %.5f %.5f, %.5f %.5f, %.5f %.5f, %.5f %.5f))", x, y, x+s, y, x+s, y+s, x, y+s, x, y),
	}
}

func demoInspection(r *rand.Rand, i int) Row {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(200))
	var violations []any
	for range r.IntN(3) {
		violations = append(violations, []string{"cold holding temperature", "handwash sink blocked", "no date marking", "pest activity"}[r.IntN(4)])
	}
	return Row{
		"inspection_id": fmt.Sprintf("INS-%06d", i),
		"establishment": fmt.Sprintf("%s %s", []string{"Lakeside", "Downtown", "Sunrise", "Old Town"}[r.IntN(4)], []string{"Cafe", "Taqueria", "Diner", "Sushi"}[r.IntN(4)]),
		"inspected_on":  day,
		"recorded_at":   day.Add(time.Duration(9+r.IntN(8)) * time.Hour),
		"score":         fmt.Sprintf("%d.%d", 60+r.IntN(40), r.IntN(10)),
		"passed":        r.IntN(5) != 0,
		"violations":    violations,
	}
}
