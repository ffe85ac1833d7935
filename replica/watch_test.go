package replica

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// A member without Data Feeds: watch a dataset, sync, and the file holds
// it as a table like a feed dataset's; each new recorded version is merged
// from exactly its rows (watch-and-webhooks.txt, "Read what changed").
func TestWatch_FirstThenRecorded(t *testing.T) {
	em := mustEmulator(t)
	v1 := seedWatched(t, em, 60)
	r := mustOpenWatches(t, em, "")
	res := mustSync(t, r)
	if res.WatchesSeen != 1 || res.WatchReloads != 1 || res.WatchMerges != 0 || res.Bootstrapped || res.EventsSeen != 0 {
		t.Fatalf("first sync = %+v, want one dataset read whole and no feed", res)
	}
	assertWatched(t, r, em, dsWatched, v1)

	v2 := mustPublishRows(t, em, dsWatched, watchRows(1, 60)).PlotiVersion
	res = mustSync(t, r)
	if res.WatchMerges != 1 || res.WatchReloads != 0 {
		t.Fatalf("second sync = %+v, want a merge", res)
	}
	assertWatched(t, r, em, dsWatched, v1, v2)
	var logged string
	if err := r.DB().QueryRow(`SELECT string_agg(change || '=' || n, ' ' ORDER BY change) FROM (SELECT change, count(*) n
		FROM _ploti.changes WHERE dataset_id = ? AND version = ? GROUP BY change) c`, dsWatched, v2).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	pv := em.PlotiVersions(dsWatched)[1]
	if want := fmtCounts(pv); logged != want {
		t.Fatalf("_ploti.changes of v%d: %s, want %s", v2, logged, want)
	}
	if res := mustSync(t, r); res.WatchMerges != 0 || res.WatchReloads != 0 {
		t.Fatalf("a sync with nothing new = %+v", res)
	}
}

func fmtCounts(pv emulator.PlotiVersion) string {
	s := ""
	add := func(kind string, n int64) {
		if n > 0 {
			if s != "" {
				s += " "
			}
			s += kind + "=" + strconv.FormatInt(n, 10)
		}
	}
	add("added", pv.Added)
	add("changed", pv.Changed)
	add("removed", pv.Removed)
	add("renamed", pv.Renamed)
	return s
}

// docs/wire.md 9, reading 1: a replica three versions behind walks back by
// previousVersion, one changes call a version, applies the ids each
// version touched and reads their rows as they are now: it lands on the
// latest version without reading the whole table.
func TestWatch_ThreeVersionsBehind(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 60)
	r := mustOpenWatches(t, em, "")
	mustSync(t, r)
	for round := 1; round <= 3; round++ {
		mustPublishRows(t, em, dsWatched, watchRows(round, 60))
	}
	res := mustSync(t, r)
	if res.WatchMerges != 1 || res.WatchReloads != 0 {
		t.Fatalf("sync = %+v, want one merge", res)
	}
	assertWatched(t, r, em, dsWatched, em.PlotiVersions(dsWatched)[0].Version, latestPloti(t, em, dsWatched))
	var versions int
	if err := r.DB().QueryRow("SELECT count(DISTINCT version) FROM _ploti.changes WHERE dataset_id = ?", dsWatched).Scan(&versions); err != nil || versions != 3 {
		t.Fatalf("_ploti.changes logs %d versions (err %v), want the 3 walked", versions, err)
	}
}

// Every changeLog but recorded, a 410 and a gap in previousVersion read the
// dataset whole; a dataset's rows equal the latest version's afterwards.
func TestWatch_ReadWhole(t *testing.T) {
	for _, tc := range []struct {
		name    string
		publish func(t *testing.T, em *emulator.Emulator)
	}{
		{"counts_only", func(t *testing.T, em *emulator.Emulator) {
			mustPublishRows(t, em, dsWatched, watchRows(1, 40), emulator.WithChangeLog("counts_only"))
		}},
		{"full_refresh", func(t *testing.T, em *emulator.Emulator) {
			mustPublishRows(t, em, dsWatched, watchRows(1, 40), emulator.WithChangeLog("full_refresh"))
		}},
		{"first", func(t *testing.T, em *emulator.Emulator) {
			mustPublishRows(t, em, dsWatched, watchRows(1, 40), emulator.WithChangeLog("first"))
		}},
		{"ids_changed", func(t *testing.T, em *emulator.Emulator) {
			if _, err := em.ReplaceIDs(context.Background(), dsWatched, 0.5); err != nil {
				t.Fatal(err)
			}
		}},
		{"recorded after counts_only", func(t *testing.T, em *emulator.Emulator) {
			mustPublishRows(t, em, dsWatched, watchRows(1, 40), emulator.WithChangeLog("counts_only"))
			mustPublishRows(t, em, dsWatched, watchRows(2, 40))
		}},
		{"410 on an older version", func(t *testing.T, em *emulator.Emulator) {
			mustPublishRows(t, em, dsWatched, watchRows(1, 40))
			em.Advance(91 * 24 * 3600e9)
			mustPublishRows(t, em, dsWatched, watchRows(2, 40))
		}},
		{"a gap in previousVersion", func(t *testing.T, em *emulator.Emulator) {
			first := em.PlotiVersions(dsWatched)[0].Version // below the held one
			mustPublishRows(t, em, dsWatched, watchRows(1, 40))
			mustPublishRows(t, em, dsWatched, watchRows(2, 40), emulator.WithPreviousPlotiVersion(first))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			em := mustEmulator(t)
			seedWatched(t, em, 40)
			r := mustOpenWatches(t, em, "")
			mustSync(t, r)
			synced := []int{latestPloti(t, em, dsWatched)}
			if tc.name == "a gap in previousVersion" {
				mustPublishRows(t, em, dsWatched, watchRows(5, 40))
				mustSync(t, r) // holds the version the gap passes
				synced = append(synced, latestPloti(t, em, dsWatched))
			}
			tc.publish(t, em)
			res := mustSync(t, r)
			if res.WatchReloads != 1 || res.WatchMerges != 0 {
				t.Fatalf("sync = %+v, want the dataset read whole", res)
			}
			assertWatched(t, r, em, dsWatched, append(synced, latestPloti(t, em, dsWatched))...)
		})
	}
}

// A renamed record keeps its row, under its new id; the old id goes to
// _ploti.id_map, and a column of the user's that holds the dataset's ids
// (--id-ref) is rewritten, as record_ids_changed does for the feed.
func TestWatch_Renames(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	refs := []IDRef{{Table: "followups", Column: "record", DatasetID: dsWatched}}
	r := mustOpenWatches(t, em, "", func(o *Options) { o.IDReferences = refs })
	mustSync(t, r)
	var old1, old2 string
	if err := r.DB().QueryRow("SELECT min(_ploti_record_id), max(_ploti_record_id) FROM "+storage.Ident(datasetRow(t, r, dsWatched).Table)+" WHERE k IN ('k0010', 'k0020')").Scan(&old1, &old2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DB().Exec("CREATE TABLE followups (record VARCHAR, note VARCHAR)"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DB().Exec("INSERT INTO followups VALUES (?, 'call'), (?, 'visit')", old1, old2); err != nil {
		t.Fatal(err)
	}
	rel := mustPublishRows(t, em, dsWatched, watchRows(0, 30), emulator.WithRenames(old1, old2))
	res := mustSync(t, r)
	if res.WatchMerges != 1 {
		t.Fatalf("sync = %+v, want a merge", res)
	}
	assertWatched(t, r, em, dsWatched, em.PlotiVersions(dsWatched)[0].Version, rel.PlotiVersion)
	var mapped, followups, renamed string
	if err := r.DB().QueryRow(`SELECT (SELECT string_agg(from_id, ',' ORDER BY from_id) FROM _ploti.id_map WHERE dataset_id = ? AND version = ?),
		(SELECT string_agg(CAST(f.record IN (SELECT _ploti_record_id FROM `+storage.Ident(datasetRow(t, r, dsWatched).Table)+`) AS VARCHAR), ',') FROM followups f),
		(SELECT string_agg(change, ',') FROM _ploti.changes WHERE dataset_id = ? AND version = ?)`,
		dsWatched, rel.PlotiVersion, dsWatched, rel.PlotiVersion).Scan(&mapped, &followups, &renamed); err != nil {
		t.Fatal(err)
	}
	if mapped != old1+","+old2 || followups != "true,true" || renamed != "renamed,renamed" {
		t.Fatalf("id map %q, followups point at held ids %q, changes %q", mapped, followups, renamed)
	}
}

// "A dataset that is both in the subscription and watched is
// kept from the feed once; the watch is only a signal for it." And a
// dataset watched first is the feed's once the subscription delivers it.
func TestWatch_AlsoInTheSubscription(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	path := freshReplica(t)
	watchOnly := mustOpenWatches(t, em, path)
	mustSync(t, watchOnly)
	if d := datasetRow(t, watchOnly, dsWatched); d.Source != storage.SourceWatch {
		t.Fatalf("watched first: source %s", d.Source)
	}
	watchOnly.Close()

	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	r := mustOpen(t, em, sub, path, func(o *Options) { o.Watch = true })
	res := mustSync(t, r)
	if !res.Bootstrapped || res.SnapshotsLoaded != 1 || res.WatchesSeen != 1 || res.WatchMerges+res.WatchReloads != 0 {
		t.Fatalf("sync with the subscription = %+v, want the feed to load it and the watch to leave it", res)
	}
	feedVersion := datasetRow(t, r, dsWatched).Version
	assertMatchesTruth(t, r, em, dsWatched, feedVersion)
	if d := datasetRow(t, r, dsWatched); d.Source != storage.SourceFeed {
		t.Fatalf("in the subscription: source %s, want feed", d.Source)
	}

	mustPublishRows(t, em, dsWatched, watchRows(1, 30))
	res = mustSync(t, r)
	if res.ChangesMerged != 1 || res.WatchMerges+res.WatchReloads != 0 {
		t.Fatalf("sync after a version = %+v, want the feed's merge only", res)
	}
	assertMatchesTruth(t, r, em, dsWatched, feedVersion+1)
}

// A watched dataset the member stops watching stays, marked removed
// (unwatched), and stops updating; watched again, it catches up.
func TestWatch_UnwatchAndWatchAgain(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	r := mustOpenWatches(t, em, "")
	mustSync(t, r)
	must(t, em.Unwatch(dsWatched))
	mustSync(t, r)
	d := datasetRow(t, r, dsWatched)
	if d.Status != storage.StatusRemoved || d.StatusReason != storage.ReasonUnwatched || d.RowCount != 30 {
		t.Fatalf("unwatched: %s %s, %d rows", d.Status, d.StatusReason, d.RowCount)
	}
	v := mustPublishRows(t, em, dsWatched, watchRows(1, 30)).PlotiVersion
	if res := mustSync(t, r); res.WatchMerges+res.WatchReloads != 0 {
		t.Fatalf("an unwatched dataset was synced: %+v", res)
	}
	if _, err := em.Watch(dsWatched); err != nil {
		t.Fatal(err)
	}
	if res := mustSync(t, r); res.WatchMerges != 1 {
		t.Fatalf("watched again: %+v, want a merge from the version it holds", res)
	}
	assertWatched(t, r, em, dsWatched, em.PlotiVersions(dsWatched)[0].Version, v)
}

// A watched dataset with no version yet is pending; its first version is
// read whole.
func TestWatch_NoVersionYet(t *testing.T) {
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: dsWatched, Title: "Inspections", PlaceID: "fl-orange", KeyColumns: []string{"k"}, Columns: watchCols()}))
	if _, err := em.Watch(dsWatched); err != nil {
		t.Fatal(err)
	}
	r := mustOpenWatches(t, em, "")
	mustSync(t, r)
	if d := datasetRow(t, r, dsWatched); d.Status != storage.StatusPending || d.Title != "Inspections" || d.Source != storage.SourceWatch {
		t.Fatalf("no version yet: %+v", d)
	}
	v := mustPublishRows(t, em, dsWatched, watchRows(0, 20)).PlotiVersion
	if res := mustSync(t, r); res.WatchReloads != 1 {
		t.Fatalf("first version: %+v", res)
	}
	assertWatched(t, r, em, dsWatched, v)
}

// docs/wire.md 9, reading 5: a column the table lacks is added (and merged
// into the rows the version changed); a column removed or retyped reads
// the dataset whole.
func TestWatch_Columns(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	r := mustOpenWatches(t, em, "")
	mustSync(t, r)
	cols := append(watchCols(), emulator.Column{Name: "units", Type: "integer"})
	rows := watchRows(1, 30)
	for i, row := range rows {
		if i%4 == 0 {
			row["units"] = int64(i)
		}
	}
	v1 := latestPloti(t, em, dsWatched)
	v2 := mustPublishRows(t, em, dsWatched, rows, emulator.WithSchema(cols, []string{"k"})).PlotiVersion
	if res := mustSync(t, r); res.WatchMerges != 1 {
		t.Fatalf("a column added: %+v, want a merge", res)
	}
	assertWatched(t, r, em, dsWatched, v1, v2)
	if n := len(datasetRow(t, r, dsWatched).Columns); n != len(cols) {
		t.Fatalf("registry has %d columns, want %d", n, len(cols))
	}
	fewer := watchRows(2, 30)
	for _, row := range fewer {
		delete(row, "j")
	}
	v3 := mustPublishRows(t, em, dsWatched, fewer, emulator.WithSchema(watchCols()[:len(watchCols())-1], []string{"k"}), emulator.SkipReview()).PlotiVersion
	if res := mustSync(t, r); res.WatchReloads != 1 {
		t.Fatalf("columns removed: %+v, want a whole read", res)
	}
	assertWatched(t, r, em, dsWatched, v1, v2, v3)
	retyped := watchCols()[:len(watchCols())-1]
	retyped[1] = emulator.Column{Name: "s", Type: "json"} // string to json
	rows = watchRows(3, 30)
	for _, row := range rows {
		delete(row, "j")
		if row["s"] != nil {
			row["s"] = `{"note": "retyped"}`
		}
	}
	v4 := mustPublishRows(t, em, dsWatched, rows, emulator.WithSchema(retyped, []string{"k"}), emulator.SkipReview()).PlotiVersion
	if res := mustSync(t, r); res.WatchReloads != 1 {
		t.Fatalf("a column retyped: %+v, want a whole read", res)
	}
	assertWatched(t, r, em, dsWatched, v1, v2, v3, v4)
}

// A dataset that moves on while its catch-up reads rows by id is caught up
// to the newer version: every row of the table is of one version.
func TestWatch_MovesOnDuringTheCatchUp(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	var once sync.Once
	target, _ := url.Parse(em.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/rows") && req.URL.Query().Get("ids") != "" {
			once.Do(func() { mustPublishRows(t, em, dsWatched, watchRows(3, 30)) })
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	r := mustOpenWatches(t, em, "", func(o *Options) { o.APIURL = front.URL })
	mustSync(t, r)
	mustPublishRows(t, em, dsWatched, watchRows(1, 30))
	mustPublishRows(t, em, dsWatched, watchRows(2, 30)) // two behind: the older one's rows are read by id
	res := mustSync(t, r)
	if res.WatchMerges != 1 || res.WatchReloads != 0 {
		t.Fatalf("sync = %+v, want one merge", res)
	}
	assertWatched(t, r, em, dsWatched, em.PlotiVersions(dsWatched)[0].Version, latestPloti(t, em, dsWatched))
}

// watch-and-webhooks.txt: "Any kind of dataset can be watched ... as long
// as your workspace's coverage and plan open it." A watched dataset the
// coverage, then the plan, no longer opens (409 outside_coverage, 409
// not_deliverable) keeps its rows and version, marked removed with the
// docs' reasons left_coverage and plan_changed, and fails no sync; once
// opened again, the next sync catches it up.
func TestWatch_LeavesCoverageAndComesBack(t *testing.T) {
	em := mustEmulator(t)
	v1 := seedWatched(t, em, 30)
	em.AddPlace(emulator.Place{ID: "fl-leon", Name: "Leon County, FL", Kind: "county", State: "fl"})
	r := mustOpenWatches(t, em, "")
	mustSync(t, r)
	closed := func(reason string) {
		t.Helper()
		for range 2 { // the second sync tries again, with the same answer
			res, err := r.Sync(context.Background())
			if err != nil || len(res.Failed) != 0 {
				t.Fatalf("sync with the watched dataset closed (%s): %+v, %v", reason, res, err)
			}
			d := datasetRow(t, r, dsWatched)
			if d.Status != storage.StatusRemoved || d.StatusReason != reason || d.Version != v1 || d.RowCount != 30 {
				t.Fatalf("closed (%s): %s (%s), version %d, %d rows; want removed (%s), version %d, 30 rows",
					reason, d.Status, d.StatusReason, d.Version, d.RowCount, reason, v1)
			}
			assertWatchedAs(t, r, em, dsWatched, storage.StatusRemoved, v1)
		}
		st, err := r.Status(context.Background())
		must(t, err)
		if len(st.Datasets) != 1 || !strings.Contains(st.Datasets[0].Detail, "no longer opens it ("+reason+")") {
			t.Fatalf("status of a closed watched dataset: %+v", st.Datasets)
		}
	}
	em.SetCoverage([]string{"fl-leon"})
	v2 := mustPublishRows(t, em, dsWatched, watchRows(1, 30)).PlotiVersion
	closed(storage.ReasonLeftCoverage)

	em.SetCoverage(nil)
	must(t, em.SetPlanClosed(dsWatched, true))
	closed(storage.ReasonPlanChanged)

	must(t, em.SetPlanClosed(dsWatched, false))
	if res := mustSync(t, r); res.WatchMerges != 1 || len(res.Failed) != 0 {
		t.Fatalf("opened again: %+v, want a merge from the version it holds", res)
	}
	assertWatched(t, r, em, dsWatched, v1, v2)
	if d := datasetRow(t, r, dsWatched); d.Status != storage.StatusCurrent || d.StatusReason != "" {
		t.Fatalf("opened again: %s (%s)", d.Status, d.StatusReason)
	}
	// Closed again, then unwatched: the member's choice outranks Ploti's
	// answer.
	em.SetCoverage([]string{"fl-leon"})
	mustPublishRows(t, em, dsWatched, watchRows(2, 30))
	mustSync(t, r)
	if d := datasetRow(t, r, dsWatched); d.Status != storage.StatusRemoved || d.StatusReason != storage.ReasonLeftCoverage {
		t.Fatalf("closed again: %s (%s)", d.Status, d.StatusReason)
	}
	must(t, em.Unwatch(dsWatched))
	mustSync(t, r)
	if d := datasetRow(t, r, dsWatched); d.Status != storage.StatusRemoved || d.StatusReason != storage.ReasonUnwatched {
		t.Fatalf("unwatched while closed: %s (%s), want removed (unwatched)", d.Status, d.StatusReason)
	}
}

// A dataset in the subscription and watched that leaves coverage: the
// feed removes it (left_coverage) and the watch's read whole of it answers
// 409. It stays the feed's, its version the feed's number (a later try
// reads it whole, never walks Ploti's versions from it), and no sync
// fails; back in coverage, the feed takes it again.
func TestWatch_AlsoInTheSubscriptionLeavesCoverage(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	em.AddPlace(emulator.Place{ID: "fl-leon", Name: "Leon County, FL", Kind: "county", State: "fl"})
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.Watch = true })
	mustSync(t, r)
	feedVersion := datasetRow(t, r, dsWatched).Version
	em.SetCoverage([]string{"fl-leon"})
	for range 2 {
		res, err := r.Sync(context.Background())
		if err != nil || len(res.Failed) != 0 {
			t.Fatalf("sync after it left coverage: %+v, %v", res, err)
		}
		d := datasetRow(t, r, dsWatched)
		if d.Source != storage.SourceFeed || d.Status != storage.StatusRemoved || d.StatusReason != storage.ReasonLeftCoverage || d.Version != feedVersion {
			t.Fatalf("left coverage: source %s, %s (%s), version %d; want feed, removed (left_coverage), %d",
				d.Source, d.Status, d.StatusReason, d.Version, feedVersion)
		}
	}
	em.SetCoverage(nil)
	mustSync(t, r)
	d := datasetRow(t, r, dsWatched)
	if d.Source != storage.SourceFeed || d.Status != storage.StatusCurrent {
		t.Fatalf("back in coverage: source %s, %s (%s)", d.Source, d.Status, d.StatusReason)
	}
	assertMatchesTruth(t, r, em, dsWatched, d.Version)
}

// docs/design.md: _ploti.datasets holds each dataset's "title, place, topic,
// version, schemaVersion, keyColumns"; GET /v1/datasets/{id} gives them for
// a watched one (the watches list only its title). A watched dataset read
// whole, and one that has no version yet, have them from its first sync,
// not only once a merge asked for the dataset.
func TestWatch_RegistryDescribesTheDataset(t *testing.T) {
	em := mustEmulator(t)
	seedWatched(t, em, 20)
	const early = "ds_fl_orange_early"
	must(t, em.AddDataset(emulator.DatasetSpec{ID: early, Title: "Early", PlaceID: "fl-orange", Topic: "development-activity",
		KeyColumns: []string{"k"}, Columns: watchCols()}))
	if _, err := em.Watch(early); err != nil {
		t.Fatal(err)
	}
	r := mustOpenWatches(t, em, "")
	mustSync(t, r)
	for _, id := range []string{dsWatched, early} {
		d := datasetRow(t, r, id)
		if d.PlaceID != "fl-orange" || d.Topic != "development-activity" || strings.Join(d.KeyColumns, ",") != "k" {
			t.Fatalf("%s (%s): place %q, topic %q, key %q; want fl-orange, development-activity, k", id, d.Status, d.PlaceID, d.Topic, d.KeyColumns)
		}
	}
}
