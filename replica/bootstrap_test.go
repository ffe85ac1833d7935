package replica

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// countingAPI is the real client, counting the API calls it makes by kind
// and, after each download, measuring the spool folder.
type countingAPI struct {
	API
	mu        sync.Mutex
	calls     map[string]int
	spool     string
	spoolPeak atomic.Int64
	downloads atomic.Int64
}

func (c *countingAPI) count(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[kind]++
}

func (c *countingAPI) n(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[kind]
}

func (c *countingAPI) Manifest(ctx context.Context, sub, asOf string) (*ploti.Manifest, error) {
	c.count("manifest")
	return c.API.Manifest(ctx, sub, asOf)
}

func (c *countingAPI) Events(ctx context.Context, sub, cursor string, limit int, types []string) (*ploti.EventPage, error) {
	c.count("events")
	return c.API.Events(ctx, sub, cursor, limit, types)
}

func (c *countingAPI) Dataset(ctx context.Context, id string) (*ploti.Dataset, error) {
	c.count("dataset")
	return c.API.Dataset(ctx, id)
}

func (c *countingAPI) DatasetsPage(ctx context.Context, q fetch.DatasetsQuery) (*ploti.DatasetPage, error) {
	c.count("datasets")
	return c.API.DatasetsPage(ctx, q)
}

func (c *countingAPI) Version(ctx context.Context, id string, version int) (*ploti.Version, error) {
	c.count("version")
	return c.API.Version(ctx, id, version)
}

func (c *countingAPI) VersionByLink(ctx context.Context, link string) (*ploti.Version, error) {
	c.count("version")
	return c.API.VersionByLink(ctx, link)
}

func (c *countingAPI) Links(ctx context.Context, id string, version int, files []string) (*ploti.Version, error) {
	c.count("links")
	return c.API.Links(ctx, id, version, files)
}

func (c *countingAPI) Schema(ctx context.Context, id string, version int) (*ploti.Schema, error) {
	c.count("schema")
	return c.API.Schema(ctx, id, version)
}

func (c *countingAPI) Download(ctx context.Context, f ploti.File, name string, refresh func(context.Context) (ploti.File, error)) (string, error) {
	p, err := c.API.Download(ctx, f, name, refresh)
	c.downloads.Add(1)
	var n int64
	filepath.WalkDir(c.spool, func(_ string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	for peak := c.spoolPeak.Load(); n > peak && !c.spoolPeak.CompareAndSwap(peak, n); peak = c.spoolPeak.Load() {
	}
	return p, err
}

// calls is every API call counted.
func (c *countingAPI) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// seedMany adds n small datasets in two places and topics, a subscription
// to all of them, and their first versions.
func seedMany(t *testing.T, em *emulator.Emulator, n int) (sub string, ids []string) {
	t.Helper()
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(emulator.Place{ID: "fl-leon", Name: "Leon County, FL", Kind: "county", State: "fl"})
	for i := range n {
		id := fmt.Sprintf("ds_many_%03d", i)
		place, topic := "fl-orange", "development-activity"
		if i%2 == 1 {
			place, topic = "fl-leon", "parcels-property"
		}
		must(t, em.AddDataset(emulator.DatasetSpec{ID: id, Title: "Dataset " + id, PlaceID: place, Topic: topic,
			KeyColumns: []string{"k"}, Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "v", Type: "integer"}}}))
		ids = append(ids, id)
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{DatasetIDs: ids})
	must(t, err)
	for i, id := range ids {
		_, err := em.PublishQuery(context.Background(), id, fmt.Sprintf("SELECT 'k' || i AS k, i AS v FROM range(%d) t(i)", 200+10*i))
		must(t, err)
	}
	return sub, ids
}

// "a bootstrap needs no API call per dataset beyond what the
// manifest gives: titles, places and topics come from the datasets list,
// 200 a page". A statewide subscription bootstraps in one manifest call
// and one datasets list call for every 200 datasets, and every table
// matches the emulator's truth with its title, place and topic.
func TestBootstrap_noCallPerDataset(t *testing.T) {
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 30)
	var api *countingAPI
	r := mustOpen(t, em, sub, "", func(o *Options) { o.Prefetch = 4 })
	api = &countingAPI{API: r.api}
	r.api, r.exec.Source = api, &source{api: api}
	res := mustSync(t, r)
	if res.SnapshotsLoaded != len(ids) || len(res.Failed) != 0 {
		t.Fatalf("bootstrap: %+v", res)
	}
	// The walk reads the log once after the manifest.
	if got, want := api.total(), 1+1+1; got != want || api.n("manifest") != 1 || api.n("datasets") != 1 {
		t.Fatalf("the bootstrap of %d datasets made %d API calls (%v), want %d: a manifest, a datasets list and an events page",
			len(ids), got, api.calls, want)
	}
	for i, id := range ids {
		assertMatchesTruth(t, r, em, id, 1)
		d := datasetRow(t, r, id)
		place, topic := "fl-orange", "development-activity"
		if i%2 == 1 {
			place, topic = "fl-leon", "parcels-property"
		}
		if d.Title != "Dataset "+id || d.PlaceID != place || d.Topic != topic || len(d.KeyColumns) != 1 {
			t.Fatalf("%s: title %q place %q topic %q key %v", id, d.Title, d.PlaceID, d.Topic, d.KeyColumns)
		}
	}
}

// Downloads run ahead of the loads with "a bounded
// spool size on disk". With a spool limit of about three datasets and
// eight downloads allowed at once, the spool never holds more than the
// limit (and the schema files of the downloads in flight), and every
// dataset still loads whole.
func TestBootstrap_spoolStaysWithinItsLimit(t *testing.T) {
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 24)
	path := freshReplica(t)
	files, err := em.SnapshotFiles(context.Background(), ids[len(ids)-1], 1)
	must(t, err)
	st, err := os.Stat(files[0])
	must(t, err)
	limit := 3 * st.Size()
	r := mustOpen(t, em, sub, path, func(o *Options) { o.Prefetch, o.SpoolLimit = 8, limit })
	api := &countingAPI{API: r.api, spool: r.spool}
	r.api, r.exec.Source = api, &source{api: api}
	res := mustSync(t, r)
	if res.SnapshotsLoaded != len(ids) {
		t.Fatalf("bootstrap: %+v", res)
	}
	const schemaFile = 4 << 10
	if peak := api.spoolPeak.Load(); peak > limit+8*schemaFile || peak == 0 {
		t.Fatalf("the spool held %d bytes at its peak, over its limit of %d", peak, limit)
	}
	for _, id := range ids {
		assertMatchesTruth(t, r, em, id, 1)
	}
	if d := datasetRow(t, r, ids[0]); d.Status != storage.StatusCurrent {
		t.Fatalf("%+v", d)
	}
}

// "Calls per applied version ≤ 1.0 and no call for a state-only
// event": a catch-up of one update per dataset and a round of stale
// events makes one version call per update (through the event's own
// links.version) and one call per events page, and downloads only the
// changes files: a version of the schema version the table holds needs no
// schema file.
func TestSync_callsPerVersion(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 12)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	for i, id := range ids {
		_, err := em.PublishQuery(ctx, id, fmt.Sprintf("SELECT 'k' || i AS k, i + (i %% 7 = 0)::INT AS v FROM range(%d) t(i)", 205+10*i))
		must(t, err)
	}
	em.Advance(49 * time.Hour) // a missed source check: a stale event each
	api := &countingAPI{API: r.api}
	r.api, r.exec.Source = api, &source{api: api}
	res := mustSync(t, r)
	if res.ChangesMerged != len(ids) || res.EventsApplied <= len(ids) {
		t.Fatalf("catch-up: %+v", res)
	}
	// (the stale datasets are asked about only once their rows have rested
	// an hour: recheckStale).
	if got, want := api.total(), len(ids)+2; got != want || api.n("version") != len(ids) {
		t.Fatalf("%d merges and %d state-only events made %d API calls (%v), want %d: a version call each merge and two events pages",
			res.ChangesMerged, res.EventsApplied-res.ChangesMerged, got, api.calls, want)
	}
	if got := api.downloads.Load(); got != int64(len(ids)) {
		t.Fatalf("%d merges downloaded %d files, want their changes files only", len(ids), got)
	}
	for _, id := range ids {
		assertMatchesTruth(t, r, em, id, 2)
	}
}

// A state-only event makes no API call, and a dataset that
// joins with no version yet still gets its title: the page's new datasets
// are described together before it commits, here 20 with one datasets
// list call instead of 20.
func TestSync_newPendingDatasetsAreDescribedTogether(t *testing.T) {
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 5)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	all := slices.Clone(ids)
	for i := range 20 {
		id := fmt.Sprintf("ds_new_%02d", i)
		must(t, em.AddDataset(emulator.DatasetSpec{ID: id, Title: "New " + id, PlaceID: "fl-leon", Topic: "parcels-property",
			Columns: []emulator.Column{{Name: "k", Type: "string"}}}))
		all = append(all, id)
	}
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{DatasetIDs: all}))
	api := &countingAPI{API: r.api}
	r.api, r.exec.Source = api, &source{api: api}
	mustSync(t, r)
	if got := api.total(); got != 3 || api.n("datasets") != 1 {
		t.Fatalf("20 datasets added with no version made %d API calls (%v), want 3: two events pages and one datasets list", got, api.calls)
	}
	for _, id := range all[5:] {
		if d := datasetRow(t, r, id); d.Status != storage.StatusPending || d.Title != "New "+id || d.PlaceID != "fl-leon" {
			t.Fatalf("%s: %s %q %q", id, d.Status, d.Title, d.PlaceID)
		}
	}
}

// expiringAPI makes every link the manifest signed expire before it is
// used: the emulator's clock moves past their hour as the manifest
// arrives.
type expiringAPI struct {
	*countingAPI
	em *emulator.Emulator
}

func (e *expiringAPI) Manifest(ctx context.Context, sub, asOf string) (*ploti.Manifest, error) {
	m, err := e.countingAPI.Manifest(ctx, sub, asOf)
	e.em.Advance(2 * time.Hour)
	return m, err
}

// "one links call for several files". Links that expired are
// signed again for every file of the version at once: a snapshot of
// three parts and its schema cost one links call, not four.
func TestBootstrap_oneLinksCallForAVersionsFiles(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_parts", Title: "Parts", PlaceID: "fl-orange", KeyColumns: []string{"k"},
		Columns: []emulator.Column{{Name: "k", Type: "string"}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{DatasetIDs: []string{"ds_parts"}})
	must(t, err)
	_, err = em.PublishQuery(ctx, "ds_parts", "SELECT 'k' || i AS k FROM range(300) t(i)", emulator.Parts(3))
	must(t, err)
	r := mustOpen(t, em, sub, "")
	api := &expiringAPI{countingAPI: &countingAPI{API: r.api}, em: em}
	r.api, r.exec.Source = api, &source{api: api}
	if res := mustSync(t, r); res.SnapshotsLoaded != 1 {
		t.Fatalf("bootstrap: %+v", res)
	}
	if got := api.n("links"); got != 1 {
		t.Fatalf("four expired links were signed again in %d links calls, want 1", got)
	}
	assertMatchesTruth(t, r, em, "ds_parts", 1)
}

// The walk weighs one call per new dataset against the datasets list's
// pages by the registry's size, not by the page's datasets (a page's batch
// reads its own datasets only): two datasets joining a subscription of
// 402 are described with two dataset calls, not the list's three pages.
func TestSync_fewNewDatasetsInALargeRegistryAreDescribedOneByOne(t *testing.T) {
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-leon", Name: "Leon County, FL", Kind: "county", State: "fl"})
	add := func(id string) {
		must(t, em.AddDataset(emulator.DatasetSpec{ID: id, Title: "T " + id, PlaceID: "fl-leon", Topic: "parcels-property",
			Columns: []emulator.Column{{Name: "k", Type: "string"}}}))
	}
	var ids []string
	for i := range 402 {
		ids = append(ids, fmt.Sprintf("ds_old_%03d", i))
		add(ids[i])
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{DatasetIDs: ids})
	must(t, err)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	for _, id := range []string{"ds_zz_1", "ds_zz_2"} {
		add(id)
		ids = append(ids, id)
	}
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{DatasetIDs: ids}))
	api := &countingAPI{API: r.api}
	r.api, r.exec.Source = api, &source{api: api}
	mustSync(t, r)
	if api.n("dataset") != 2 || api.n("datasets") != 0 {
		t.Fatalf("2 datasets joining 402 made %v API calls, want 2 dataset calls and no datasets list", api.calls)
	}
	if d := datasetRow(t, r, "ds_zz_2"); d.Status != storage.StatusPending || d.Title != "T ds_zz_2" {
		t.Fatalf("%+v", d)
	}
}
