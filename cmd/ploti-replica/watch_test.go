package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
)

const watchedDataset = "ds_fl_orange_inspections"

// watchWorld is an emulator with one dataset outside any subscription and
// the variables of a member without Data Feeds: a key, no subscription.
func watchWorld(t *testing.T) (*emulator.Emulator, map[string]string) {
	t.Helper()
	em := inspectionsEmulator(t, emulator.Options{NoRateLimit: true, DuckDBThreads: 2})
	return em, map[string]string{"PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": em.APIKey(), "PLOTI_DB": filepath.Join(t.TempDir(), "watches.duckdb")}
}

// inspectionsEmulator starts an emulator holding version 1 of one
// dataset, watchedDataset, in no subscription.
func inspectionsEmulator(t *testing.T, opts emulator.Options) *emulator.Emulator {
	t.Helper()
	em, err := emulator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	if err := em.AddDataset(emulator.DatasetSpec{ID: watchedDataset, Title: "Inspections", PlaceID: "fl-orange", KeyColumns: []string{"k"},
		Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "result", Type: "string"}, {Name: "geometry", Type: "geometry"}}}); err != nil {
		t.Fatal(err)
	}
	publishInspections(t, em, 0)
	return em
}

func publishInspections(t *testing.T, em *emulator.Emulator, round int) int {
	t.Helper()
	var rows []emulator.Row
	for i := round; i < round+10; i++ {
		rows = append(rows, emulator.Row{"k": fmt.Sprintf("I-%03d", i), "result": fmt.Sprintf("passed in round %d", round*(i%2)),
			"geometry": fmt.Sprintf("POINT (-81.%d 28.5)", i)})
	}
	rel, err := em.Publish(context.Background(), watchedDataset, rows)
	if err != nil {
		t.Fatal(err)
	}
	return rel.PlotiVersion
}

// A member without Data Feeds: watch add, sync (no subscription), watch
// list (behind or not), status's source column, watch remove.
func TestWatch_commands(t *testing.T) {
	em, vars := watchWorld(t)
	code, out, errs := cli(t, vars, "watch", "add", watchedDataset)
	if code != exitOK || !strings.Contains(out, "watching "+watchedDataset+" (version 11)") {
		t.Fatalf("watch add: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := cli(t, vars, "watch", "add", "ds_nope"); code != exitFailure || !strings.Contains(errs, "watch ds_nope: not found (404)") {
		t.Fatalf("watch add of an unknown dataset: exit %d: %s", code, errs)
	}
	code, out, errs = cli(t, vars, "sync", "--log-format", "json")
	if code != exitOK || !strings.Contains(out, "watches: 1 dataset(s) watched, 0 merged, 1 read whole") {
		t.Fatalf("sync without a subscription: exit %d\n%s%s", code, out, errs)
	}
	v := publishInspections(t, em, 1)
	code, out, _ = cli(t, vars, "watch", "list", "--json")
	var list []struct {
		DatasetID string
		Version   *int
		Local     *struct{ Version int }
		Behind    *bool
	}
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("watch list --json: exit %d: %s", code, out)
	}
	if w := list[0]; *w.Version != v || w.Local == nil || w.Local.Version != 11 || w.Behind == nil || !*w.Behind {
		t.Fatalf("watch list after a new version: %s", out)
	}
	if code, out, _ = cli(t, vars, "sync"); code != exitOK || !strings.Contains(out, "1 merged") {
		t.Fatalf("sync: %s", out)
	}
	code, out, _ = cli(t, vars, "watch", "list")
	if code != exitOK || !strings.Contains(out, "BEHIND") || !strings.Contains(out, fmt.Sprintf("%d  ", v)) || !strings.HasSuffix(strings.TrimSpace(out), "no") {
		t.Fatalf("watch list after the sync:\n%s", out)
	}
	code, out, _ = cli(t, vars, "status")
	if code != exitOK || !strings.Contains(out, "SOURCE") || !strings.Contains(out, watchedDataset+"  watch") {
		t.Fatalf("status:\n%s", out)
	}
	if code, out, _ = cli(t, vars, "watch", "remove", watchedDataset); code != exitOK || !strings.Contains(out, "no longer watching "+watchedDataset+"; its table stays and stops updating") {
		t.Fatalf("watch remove: %s", out)
	}
	cli(t, vars, "sync")
	code, out, _ = cli(t, vars, "status", "--json")
	var st replica.Status
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || len(st.Datasets) != 1 || st.Datasets[0].Status != "removed" ||
		st.Datasets[0].Source != "watch" || !strings.Contains(st.Datasets[0].Detail, "no longer watched") {
		t.Fatalf("status after watch remove: %s", out)
	}
}

// watch-and-webhooks.txt: "Any kind of dataset can be watched ... as long
// as your workspace's coverage and plan open it." A watched dataset the
// coverage no longer opens fails no sync (exit 0), and watch list and
// status say why it stopped updating.
func TestWatch_listSaysWhyItStopped(t *testing.T) {
	em, vars := watchWorld(t)
	if code, out, errs := cli(t, vars, "watch", "add", watchedDataset); code != exitOK {
		t.Fatalf("watch add: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	em.SetCoverage([]string{"fl-leon"})
	publishInspections(t, em, 1)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync with the watched dataset outside coverage: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ := cli(t, vars, "watch", "list")
	if code != exitOK || !strings.Contains(out, "removed (left_coverage)") {
		t.Fatalf("watch list of a dataset outside coverage:\n%s", out)
	}
	code, out, _ = cli(t, vars, "status", "--json")
	var st replica.Status
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || len(st.Datasets) != 1 || st.Datasets[0].Reason != "left_coverage" ||
		!strings.Contains(st.Datasets[0].Detail, "no longer opens it") {
		t.Fatalf("status of a watched dataset outside coverage: %s", out)
	}
}

// watch-and-webhooks.txt: "A member may watch 100 datasets." The 101st
// gets Ploti's error in words.
func TestWatch_limitInWords(t *testing.T) {
	em, vars := watchWorld(t)
	ids := []string{watchedDataset}
	for i := 1; i <= emulator.MaxWatches; i++ {
		id := fmt.Sprintf("ds_extra_%03d", i)
		if err := em.AddDataset(emulator.DatasetSpec{ID: id, PlaceID: "fl-orange", Columns: []emulator.Column{{Name: "k", Type: "string"}}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The first 80 watches are the emulator's own; the CLI adds the next
	// 20 (within its limiter's burst: 80 more calls would wait 40 s for
	// tokens, the client's pace and not what this test is about).
	for _, id := range ids[:emulator.MaxWatches-20] {
		if _, err := em.Watch(id); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := cli(t, vars, append([]string{"watch", "add"}, ids[emulator.MaxWatches-20:emulator.MaxWatches]...)...); code != exitOK {
		t.Fatalf("100 watches: %s", errs)
	}
	code, _, errs := cli(t, vars, "watch", "add", ids[emulator.MaxWatches])
	for _, want := range []string{"watch " + ids[emulator.MaxWatches], "100 datasets a member may watch", "409 watch_limit", "Ploti said:"} {
		if code != exitFailure || !strings.Contains(errs, want) {
			t.Fatalf("the 101st watch: exit %d: %s; want it to say %q", code, errs, want)
		}
	}
}

// watch-and-webhooks.txt: "A member may have 20 webhooks." The 21st, made
// by `webhooks create`, gets Ploti's error in its words.
func TestWebhooks_limitInWords(t *testing.T) {
	em, vars := watchWorld(t)
	for i := range 20 {
		if _, err := em.CreateWebhook(emulator.WebhookSpec{URL: fmt.Sprintf("https://example.org/hook/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errs := cli(t, vars, "webhooks", "create", "--url", "https://example.org/hook/21")
	for _, want := range []string{"create webhook", "409 webhook_limit", "20 webhooks"} {
		if code != exitFailure || !strings.Contains(errs, want) {
			t.Fatalf("the 21st webhook: exit %d: %s; want it to say %q", code, errs, want)
		}
	}
}

// watch-and-webhooks.txt: watching "works on any plan", and "Any kind of
// dataset can be watched ... as long as your workspace's coverage and
// plan open it". datasets show describes a watched dataset that Data Feeds
// does not deliver through the watch API, with what the file holds of it,
// and says its version is Ploti's own number ("data.version is ...
// separate from Data Feeds version numbers"). It used to stop at the Data
// Feeds answer: "dataset ...: not found (404)".
func TestDatasetsShow_aWatchedDatasetDataFeedsDoesNotDeliver(t *testing.T) {
	em, vars := watchWorld(t)
	must(t, em.SetDeliverable(watchedDataset, false))
	mustCLI(t, vars, "watch", "add", watchedDataset)
	mustCLI(t, vars, "sync")
	code, out, errs := cli(t, vars, "datasets", "show", watchedDataset)
	if code != exitOK {
		t.Fatalf("datasets show of a watched dataset Data Feeds does not deliver: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("datasets show:\n%s", out)
	for _, want := range []string{"Inspections", "watch:    version 11 (Ploti's own number, not a Data Feeds version)",
		"not a Data Feeds dataset of your workspace", "result", "version 11 (a watch version: Ploti's own number, not a Data Feeds version), 10 rows, current"} {
		if !strings.Contains(out, want) {
			t.Fatalf("datasets show lacks %q:\n%s", want, out)
		}
	}
	var show datasetShow
	parseJSON(t, mustCLI(t, vars, "datasets", "show", watchedDataset, "--json"), &show)
	if show.Watch == nil || show.Watch.Version == nil || *show.Watch.Version != 11 || show.Local == nil || show.Local.Source != "watch" ||
		show.Schema == nil || len(show.Schema.Columns) != 3 || show.Dataset.Status != "" {
		t.Fatalf("datasets show --json = %+v", show)
	}
	if code, _, errs := cli(t, vars, "datasets", "show", "ds_nope"); code != exitFailure || !strings.Contains(errs, "dataset ds_nope: not found (404)") {
		t.Fatalf("an unknown dataset: exit %d %s", code, errs)
	}
}

// watch remove says what becomes of the table: a dataset the subscription
// also delivers stays current, a watched one stops updating. And a watch
// the coverage or plan refuses is said in the watch's words (watching is
// open on any plan, for a dataset the coverage and plan open), not Data
// Feeds'.
func TestWatch_wordsForWhatAWatchIs(t *testing.T) {
	em, _, vars := demoWorld(t)
	mustCLI(t, vars, "watch", "add", emulator.DemoPermits)
	mustCLI(t, vars, "sync")
	if out := mustCLI(t, vars, "watch", "remove", emulator.DemoPermits); !strings.Contains(out, "the subscription delivers it, and keeps its table current") {
		t.Fatalf("watch remove of a dataset the subscription delivers:\n%s", out)
	}
	var added []struct {
		DatasetID string
		Version   *int
	}
	parseJSON(t, mustCLI(t, vars, "watch", "add", emulator.DemoPermits, "--json"), &added)
	if len(added) != 1 || added[0].DatasetID != emulator.DemoPermits || added[0].Version == nil {
		t.Fatalf("watch add --json = %+v", added)
	}
	var removed []struct {
		DatasetID  string
		KeptByFeed bool
	}
	parseJSON(t, mustCLI(t, vars, "watch", "remove", emulator.DemoPermits, "--json"), &removed)
	if len(removed) != 1 || !removed[0].KeptByFeed {
		t.Fatalf("watch remove --json = %+v", removed)
	}
	must(t, em.SetPlanClosed(emulator.DemoParcels, true))
	code, _, errs := cli(t, vars, "watch", "add", emulator.DemoParcels)
	if code != exitFailure || !strings.Contains(errs, "your workspace's plan does not open this dataset (409 not_deliverable)") || strings.Contains(errs, "datasets list") {
		t.Fatalf("watch add of a dataset the plan closes: exit %d %s", code, errs)
	}
}

// status of a file that keeps only watches says when it last synced. And
// verify --help: a watched dataset is "unverifiable, not a difference".
// On a file that keeps only watches (no subscription to name), verify says
// so and exits 0, and holds release says the dataset is not held, instead
// of asking for a subscription (exit 2) as both did.
func TestWatch_verifyAndReleaseOnAFileOfWatchesOnly(t *testing.T) {
	_, vars := watchWorld(t)
	mustCLI(t, vars, "watch", "add", watchedDataset)
	mustCLI(t, vars, "sync")
	// status says when it last synced: the runs of a file with no
	// subscription row.
	var st replica.Status
	parseJSON(t, mustCLI(t, vars, "status", "--json"), &st)
	if st.LastSyncAt == nil {
		t.Fatalf("status --json of a file of watches only, synced: no lastSyncAt")
	}
	if out := mustCLI(t, vars, "status"); strings.Contains(out, "never") {
		t.Fatalf("status of a file of watches only, synced:\n%s", out)
	}
	code, out, errs := cli(t, vars, "verify")
	if code != exitOK || !strings.Contains(out, "unverifiable") {
		t.Fatalf("verify of a file of watches only: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = cli(t, vars, "holds", "release", watchedDataset)
	if code != exitFailure || !strings.Contains(errs, "not held") {
		t.Fatalf("holds release of a watched dataset: exit %d %s", code, errs)
	}
}

// README: every --json output leaves out "a value that is not known ...
// rather than given as -1 or null". A watched dataset before its first
// version has no version: watch list --json leaves it out, as watch add
// --json does.
func TestWatch_listJSONLeavesOutAVersionNotYetThere(t *testing.T) {
	em, vars := watchWorld(t)
	const early = "ds_fl_orange_early"
	if err := em.AddDataset(emulator.DatasetSpec{ID: early, Title: "Early", PlaceID: "fl-orange",
		Columns: []emulator.Column{{Name: "k", Type: "string"}}}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"watch", "add", early, "--json"}, {"sync"}, {"watch", "list", "--json"}} {
		code, out, errs := cli(t, vars, args...)
		if code != exitOK || strings.Contains(out, "null") {
			t.Fatalf("%s: exit %d, want no null:\n%s%s", strings.Join(args, " "), code, out, errs)
		}
	}
}
