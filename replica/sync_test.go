package replica

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// seedTwo sets up two datasets (permits with points and decimals, parcels
// with polygons and lists) over two counties, with one version each.
func seedTwo(tb testing.TB, em *emulator.Emulator) (sub string, permits, parcels func(round int) []emulator.Row) {
	tb.Helper()
	ctx := context.Background()
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(emulator.Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	em.AddTopic("parcels-property", "Parcels")
	must(tb, em.AddDataset(emulator.DatasetSpec{ID: "ds_permits", Title: "Permits", PlaceID: "fl-orange", Topic: "development-activity",
		KeyColumns: []string{"permit"}, Columns: []emulator.Column{
			{Name: "permit", Type: "string"}, {Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
			{Name: "issued", Type: "date"}, {Name: "updated_at", Type: "timestamp"}, {Name: "final", Type: "boolean"},
			{Name: "geometry", Type: "geometry"}}}))
	must(tb, em.AddDataset(emulator.DatasetSpec{ID: "ds_parcels", Title: "Parcels", PlaceID: "fl-seminole", Topic: "parcels-property",
		KeyColumns: []string{"parcel"}, Columns: []emulator.Column{
			{Name: "parcel", Type: "string"}, {Name: "acres", Type: "number"}, {Name: "uses", Type: "list", Items: &emulator.Column{Type: "string"}},
			{Name: "units", Type: "integer"}, {Name: "geometry", Type: "geometry"}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange", "fl-seminole"}})
	must(tb, err)
	permits = func(round int) []emulator.Row {
		var rows []emulator.Row
		for i := round * 5; i < 40+round*5; i++ { // 5 removed and 5 added each round
			rows = append(rows, emulator.Row{"permit": fmt.Sprintf("P-%03d", i), "valuation": fmt.Sprintf("%d.%02d", 1000+i, i%100),
				"issued": emulator.DefaultStart.AddDate(0, 0, -i), "updated_at": emulator.DefaultStart.Add(-3600e9 * 1),
				"final":    (i+round)%3 == 0, // changes with the round
				"geometry": fmt.Sprintf("POINT (%d.5 %d.25)", -81-i%3, 28+i%2)})
		}
		return rows
	}
	parcels = func(round int) []emulator.Row {
		var rows []emulator.Row
		for i := 0; i < 20+round; i++ {
			acres := float64(i) + 0.5
			if i == round { // one parcel changes each round
				acres += 100
			}
			rows = append(rows, emulator.Row{"parcel": fmt.Sprintf("PCL-%02d", i), "acres": acres, "uses": []any{"res", fmt.Sprint(i % 4)},
				"units": int64(i % 5), "geometry": fmt.Sprintf("POLYGON ((0 0, %d 0, %d 1, 0 1, 0 0))", i+1, i+1)})
		}
		return rows
	}
	_, err = em.Publish(ctx, "ds_permits", permits(0))
	must(tb, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(0))
	must(tb, err)
	return sub, permits, parcels
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func TestSync_EndToEnd(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	res := mustSync(t, r)
	if !res.Bootstrapped || res.SnapshotsLoaded != 2 {
		t.Fatalf("first sync: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	for round := 1; round <= 3; round++ {
		rel, err := em.Publish(ctx, "ds_permits", permits(round))
		must(t, err)
		if rel.Added == 0 || rel.Changed == 0 || rel.Removed == 0 {
			t.Fatalf("round %d: the emulator's version should add, change and remove rows: %+v", round, rel)
		}
		_, err = em.Publish(ctx, "ds_parcels", parcels(round))
		must(t, err)
		res := mustSync(t, r)
		if res.Bootstrapped || res.ChangesMerged != 2 || res.SnapshotsLoaded != 0 {
			t.Fatalf("round %d: want two merges and no loads: %+v", round, res)
		}
		assertMatchesTruth(t, r, em, "ds_permits", round+1)
		assertMatchesTruth(t, r, em, "ds_parcels", round+1)
	}
	// Caught up: another sync changes nothing.
	if res := mustSync(t, r); res.EventsSeen != 0 {
		t.Fatalf("idle sync read %d events", res.EventsSeen)
	}
	st, err := r.Status(ctx)
	must(t, err)
	if len(st.Datasets) != 2 || st.Datasets[1].Status != storage.StatusCurrent || st.Datasets[1].Title != "Permits" || st.LastSyncAt == nil {
		t.Fatalf("status: %+v", st)
	}
	if em.KeyLeaks() != 0 {
		t.Fatalf("the API key was sent to the file host %d times", em.KeyLeaks())
	}
}

// cancelAfterDownload wraps the real client: once the nth download has
// completed, it cancels the sync's context, so the sync fails between
// download and commit. Downloads may run at once (a bootstrap's prefetch).
type cancelAfterDownload struct {
	API
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfterDownload) Download(ctx context.Context, f ploti.File, name string, refresh func(context.Context) (ploti.File, error)) (string, error) {
	p, err := c.API.Download(ctx, f, name, refresh)
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return p, err
}

// Invariant 1 and 3: a sync that fails between download and commit leaves
// the last committed state, and the next sync ends where a sync that never
// failed ends.
func TestSync_FailBetweenDownloadAndCommit(t *testing.T) {
	// Each dataset's schema and data downloads; a merge of the held schema
	// version downloads only its changes file.
	for stage, downloads := range map[string]int{"bootstrap": 4, "merge": 2} {
		for n := 1; n <= downloads; n++ {
			t.Run(fmt.Sprintf("%s after download %d", stage, n), func(t *testing.T) {
				em := mustEmulator(t)
				sub, permits, parcels := seedTwo(t, em)
				ctx := context.Background()
				path := freshReplica(t)
				if stage == "merge" {
					r0 := mustOpen(t, em, sub, path)
					mustSync(t, r0)
					r0.Close()
					_, err := em.Publish(ctx, "ds_permits", permits(1))
					must(t, err)
					_, err = em.Publish(ctx, "ds_parcels", parcels(1))
					must(t, err)
				}
				r := mustOpen(t, em, sub, path)
				cctx, cancel := context.WithCancel(ctx)
				c := &cancelAfterDownload{API: r.api, cancel: cancel}
				c.n.Store(int64(n))
				r.api = c
				r.exec.Source = &source{api: r.api}
				if _, err := r.Sync(cctx); !errors.Is(err, context.Canceled) {
					t.Fatalf("sync with a cancel after download %d: err = %v, want context.Canceled", n, err)
				}
				r.Close()
				again := mustOpen(t, em, sub, path)
				mustSync(t, again)
				want := 1
				if stage == "merge" {
					want = 2
				}
				assertMatchesTruth(t, again, em, "ds_permits", want)
				assertMatchesTruth(t, again, em, "ds_parcels", want)
			})
		}
	}
}
