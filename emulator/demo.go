package emulator

import (
	"context"
	"fmt"
	"sync"
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
// subscription to both counties, each dataset at version Round; with
// AddWatched (SeedDemoWorld) also a statewide dataset the subscription does
// not deliver, for watching. Its methods may be called from several
// goroutines.
type Demo struct {
	// Emulator is the emulator it seeded.
	Emulator *Emulator
	// SubscriptionID is the subscription that delivers the three datasets.
	SubscriptionID string
	// Round counts the rounds Next and Step published over the whole world.
	Round int

	mu       sync.Mutex
	ids      []string              // its datasets, in the order a round publishes them
	datasets map[string]*demoState // by id
}

// DemoDictionary is the data dictionary attached to the demo permits.
const DemoDictionary = "column,meaning\npermit_number,the permit's number\nstatus,applied, under_review or issued\n" +
	"valuation,declared value in US dollars\nissued,the date the permit was issued\nunits,dwelling units\ngeometry,the parcel's point, EPSG:4326\n"

// SeedDemo adds the demo places, topics and datasets to em, subscribes to
// them and publishes version 1 of each. It is deterministic.
func SeedDemo(ctx context.Context, em *Emulator) (*Demo, error) {
	return seedDemo(ctx, em, false)
}

// SeedDemoWorld is SeedDemo with DemoWatched too: the world `ploti-replica
// demo` walks through and `ploti-replica emulator` serves. The
// subscription does not deliver DemoWatched; a member watches it.
func SeedDemoWorld(ctx context.Context, em *Emulator) (*Demo, error) {
	return seedDemo(ctx, em, true)
}

func seedDemo(ctx context.Context, em *Emulator, watched bool) (*Demo, error) {
	d, err := SeedDemoCatalog(em)
	if err != nil {
		return nil, err
	}
	if watched {
		if err := d.AddWatched(); err != nil {
			return nil, err
		}
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
	d := &Demo{Emulator: em, datasets: map[string]*demoState{}}
	for _, spec := range demoSpecs() {
		if err := d.add(spec); err != nil {
			return nil, err
		}
	}
	em.setDemo(d)
	return d, nil
}

// Next publishes the next version of each demo dataset: one row removed, one
// added and a few changed, so each version arrives as feed.dataset.updated
// with a changes file. It never changes a schema or ids (Step does).
func (d *Demo) Next(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range d.ids {
		if _, err := d.publishLocked(ctx, id, DemoUpdate); err != nil {
			return fmt.Errorf("demo round %d: %w", d.Round+1, err)
		}
	}
	d.Round++
	return nil
}
