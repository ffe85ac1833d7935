package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// parseJSON decodes a command's --json output into v and fails on any
// null in it (STYLE.md 15: "empty lists as [], absent values omitted").
func parseJSON(t *testing.T, out string, v any) {
	t.Helper()
	var raw any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if path := findNull(raw, "$"); path != "" {
		t.Fatalf("--json output has a null at %s (want [] or the field left out):\n%s", path, out)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("--json output: %v\n%s", err, out)
		}
	}
}

func findNull(v any, path string) string {
	switch x := v.(type) {
	case nil:
		return path
	case map[string]any:
		for k, e := range x {
			if p := findNull(e, path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := findNull(e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func mustCLI(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, vars, args...)
	if code != exitOK {
		t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func TestPlacesAndTopics(t *testing.T) {
	_, _, vars := demoWorld(t)
	out := mustCLI(t, vars, "places")
	for _, want := range []string{"fl-orange", "Orange County, FL", "fl-counties", "development-activity 1"} {
		if !strings.Contains(out, want) {
			t.Fatalf("places lacks %q:\n%s", want, out)
		}
	}
	var places []placeOut
	parseJSON(t, mustCLI(t, vars, "places", "--json", "--state", "fl", "--kind", "county", "--deliverable"), &places)
	if len(places) != 2 || places[0].ID != "fl-orange" || places[0].DatasetCount != 2 || places[0].DatasetCounts["health-safety"] != 1 {
		t.Fatalf("places --json = %+v", places)
	}
	var topics []struct{ ID, Name string }
	parseJSON(t, mustCLI(t, vars, "topics", "--json"), &topics)
	if len(topics) != 3 || topics[0].ID != "development-activity" {
		t.Fatalf("topics --json = %+v", topics)
	}
	if out := mustCLI(t, vars, "topics"); !strings.Contains(out, "Parcels and property") {
		t.Fatalf("topics:\n%s", out)
	}
}

func TestDatasetsListAndShow(t *testing.T) {
	em, d, vars := demoWorld(t)
	var list []datasetOut
	parseJSON(t, mustCLI(t, vars, "datasets", "list", "--json"), &list)
	if len(list) != 3 || list[0].Current == nil || list[0].Current.Version != 1 || !strings.HasPrefix(list[0].MapURL, mapURL) {
		t.Fatalf("datasets list --json = %+v", list)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--place", "fl-seminole"}, emulator.DemoParcels},
		{[]string{"--topic", "health-safety"}, emulator.DemoInspections},
		{[]string{"--subscription", d.SubscriptionID, "--limit", "1"}, emulator.DemoPermits},
		{[]string{"--updated-since", "2020-01-01", "--topic", "parcels-property"}, emulator.DemoParcels},
		{[]string{"--updated-since", em.Now().Add(1e9 * 3600).Format("2006-01-02T15:04:05Z")}, ""},
	} {
		var got []datasetOut
		parseJSON(t, mustCLI(t, vars, append([]string{"datasets", "list", "--json"}, tc.args...)...), &got)
		var ids []string
		for _, g := range got {
			ids = append(ids, g.ID)
		}
		if strings.Join(ids, ",") != tc.want {
			t.Errorf("datasets list %v = %v, want %s", tc.args, ids, tc.want)
		}
	}
	if out := mustCLI(t, vars, "datasets", "list"); !strings.Contains(out, "Orange County Building Permits") || !strings.Contains(out, "fl-seminole") {
		t.Fatalf("datasets list:\n%s", out)
	}
	if code, _, errs := cli(t, vars, "datasets", "list", "--updated-since", "last week"); code != exitUsage || !strings.Contains(errs, "--updated-since") {
		t.Fatalf("a bad --updated-since: exit %d %s", code, errs)
	}
	// show: versions back through previousVersion, the schema, and what
	// the replica file holds once synced.
	if err := d.Next(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, vars, "sync")
	var show datasetShow
	parseJSON(t, mustCLI(t, vars, "datasets", "show", emulator.DemoPermits, "--json"), &show)
	if len(show.Versions) != 2 || show.Versions[0].Version != 2 || show.Versions[0].PreviousVersion != 1 || show.Schema == nil ||
		show.Schema.Columns[0].Name != "permit_number" || show.Local == nil || show.Local.Version != 2 {
		t.Fatalf("datasets show --json = %+v", show)
	}
	out := mustCLI(t, vars, "datasets", "show", emulator.DemoPermits)
	for _, want := range []string{"versions:", "decimal(14,2)", "geometry(Point, EPSG:4326)", "table ds_fl_orange_permits, version 2", "holds: none"} {
		if !strings.Contains(out, want) {
			t.Fatalf("datasets show lacks %q:\n%s", want, out)
		}
	}
	code, _, errs := cli(t, vars, "datasets", "show", "ds_nope")
	if code != exitFailure || !strings.Contains(errs, "dataset ds_nope: not found (404)") {
		t.Fatalf("an unknown dataset: exit %d %s", code, errs)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Every command puts a 429 and a 503 in words ("every error the
// docs name ... shown to the user in words").
func TestCommands_rateLimitAndPlanInWords(t *testing.T) {
	em, d, vars := demoWorld(t)
	for _, tc := range []struct {
		match string
		args  []string
	}{
		{"GET /v1/places", []string{"places"}},
		{"GET /v1/topics", []string{"topics"}},
		{"GET /v1/feeds/datasets", []string{"datasets", "list"}},
		{"GET /v1/feeds/datasets/*", []string{"datasets", "show", emulator.DemoPermits}},
		{"GET /v1/feeds/subscriptions", []string{"subscriptions", "list"}},
		{"GET /v1/feeds/subscriptions/*", []string{"subscriptions", "show", d.SubscriptionID}},
		{"POST /v1/feeds/subscriptions/preview", []string{"subscriptions", "preview", "--place", "fl-orange"}},
		{"GET /v1/feeds/subscriptions/*", []string{"subscriptions", "update", d.SubscriptionID, "--add-topic", "health-safety"}},
		{"DELETE /v1/feeds/subscriptions/*", []string{"subscriptions", "delete", d.SubscriptionID}},
	} {
		for _, status := range []int{429, 503} {
			em.ClearFaults()
			em.FailNext(tc.match, status, 1)
			code, _, errs := cli(t, vars, append(tc.args, "--max-attempts", "1")...)
			want := map[int]string{429: "over Ploti's rate limit (429", 503: "cannot read your workspace's plan just now (503 plan_unavailable)"}[status]
			if code != exitFailure || !strings.Contains(errs, want) {
				t.Errorf("%v after a %d: exit %d, stderr %q; want %q", tc.args, status, code, errs, want)
			}
		}
	}
	em.ClearFaults()
	var del struct {
		ID      string `json:"id"`
		Deleted bool   `json:"deleted"`
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "delete", d.SubscriptionID, "--json"), &del)
	if del.ID != d.SubscriptionID || !del.Deleted {
		t.Fatalf("delete --json = %+v", del)
	}
}

// sync and status --behind put a 429 or a 503 that outlasted the retries
// in words, as the other commands do (they ended on the client's raw
// "429 rate_limited: … (gave up after 6 attempts)"); status --behind
// prints the file's status first (it printed nothing).
func TestSync_rateLimitAndPlanInWords(t *testing.T) {
	em, _, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	for _, tc := range []struct {
		status int
		want   string
	}{{429, "over Ploti's rate limit (429"}, {503, "Ploti cannot read your workspace's plan just now (503 plan_unavailable)"}} {
		em.ClearFaults()
		em.FailNext("GET /v1/feeds/subscriptions/*/events", tc.status, 100)
		code, _, errs := cli(t, vars, "sync")
		if code != exitFailure || !strings.Contains(errs, "sync "+vars["PLOTI_DB"]+": "+tc.want) || strings.Contains(errs, "gave up after") {
			t.Errorf("sync after %ds: exit %d, stderr %q; want %q", tc.status, code, errs, tc.want)
		}
		// status --behind still prints the file's status, then fails.
		code, out, errs := cli(t, vars, "status", "--behind")
		if code != exitFailure || !strings.Contains(errs, tc.want) || !strings.Contains(out, emulator.DemoPermits) {
			t.Errorf("status --behind after %ds: exit %d, stdout %q, stderr %q; want %q", tc.status, code, out, errs, tc.want)
		}
	}
}
