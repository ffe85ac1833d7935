package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// cli runs the command line with the emulator's variables in the environment.
func cli(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}
	code = run(context.Background(), env, args)
	return code, out.String(), errb.String()
}

func demoWorld(t *testing.T) (*emulator.Emulator, *emulator.Demo, map[string]string) {
	t.Helper()
	return demoWorldSeeded(t, emulator.SeedDemo)
}

// demoWorldSeeded is demoWorld with the world seed gives (SeedDemoWorld:
// the watched dataset too).
func demoWorldSeeded(t *testing.T, seed func(context.Context, *emulator.Emulator) (*emulator.Demo, error)) (*emulator.Emulator, *emulator.Demo, map[string]string) {
	t.Helper()
	em, err := emulator.New(emulator.Options{NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	d, err := seed(context.Background(), em)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": em.APIKey(), "PLOTI_SUBSCRIPTION": d.SubscriptionID,
		"PLOTI_DB": filepath.Join(t.TempDir(), "feeds.duckdb")}
	return em, d, vars
}

func TestSyncAndStatus(t *testing.T) {
	_, d, vars := demoWorld(t)
	code, out, errs := cli(t, vars, "sync", "--log-format", "json")
	if code != exitOK || !strings.Contains(out, "bootstrapped from the manifest") || !strings.Contains(out, "3 snapshot(s) loaded") {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errs)
	}
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, vars, "sync", "--json")
	var res replica.SyncResult
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil || res.ChangesMerged != 3 {
		t.Fatalf("sync --json: exit %d: %s", code, out)
	}
	code, out, _ = cli(t, vars, "status")
	for _, want := range []string{emulator.DemoPermits, emulator.DemoParcels, emulator.DemoInspections, "current", "cursor:", d.SubscriptionID} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	code, out, _ = cli(t, vars, "status", "--json", "--behind")
	var st replica.Status
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || len(st.Datasets) != 3 || st.Behind == nil || *st.Behind != 0 {
		t.Fatalf("status --json --behind: exit %d: %s", code, out)
	}
	for _, ds := range st.Datasets {
		if ds.Version != 2 || ds.Status != "current" || ds.Rows == 0 || ds.Table == "" {
			t.Fatalf("dataset status: %+v", ds)
		}
	}
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, out, _ = cli(t, vars, "status", "--behind")
	if !strings.Contains(out, "behind:        3 event(s)") {
		t.Fatalf("status --behind should count the 3 waiting events:\n%s", out)
	}
}

func TestSync_usageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"no key", map[string]string{"PLOTI_SUBSCRIPTION": "sub_1"}, []string{"sync"}, "PLOTI_API_KEY"},
		{"no subscription and no watches", map[string]string{"PLOTI_API_KEY": "k"}, []string{"sync", "--watches=false"}, "PLOTI_SUBSCRIPTION"},
		{"bad flag", nil, []string{"sync", "--nope"}, "unknown flag"},
		{"bad id-ref", map[string]string{"PLOTI_API_KEY": "k", "PLOTI_SUBSCRIPTION": "s"}, []string{"sync", "--id-ref", "notes"}, "TABLE.COLUMN=DATASET"},
		{"no attempts", map[string]string{"PLOTI_API_KEY": "k", "PLOTI_SUBSCRIPTION": "s"}, []string{"sync", "--max-attempts", "0"}, "--max-attempts 0"},
		{"no plan wait", map[string]string{"PLOTI_API_KEY": "k", "PLOTI_SUBSCRIPTION": "s"}, []string{"sync", "--plan-unavailable-wait", "0s"}, "--plan-unavailable-wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, tc.vars, tc.args...)
			if code != exitUsage || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d mentioning %q", code, errs, exitUsage, tc.want)
			}
		})
	}
}

func TestSync_failureIsOneLineAndSecretFree(t *testing.T) {
	vars := map[string]string{"PLOTI_API_URL": "http://127.0.0.1:1", "PLOTI_API_KEY": "sekrit_key_123", "PLOTI_SUBSCRIPTION": "sub_1",
		"PLOTI_DB": filepath.Join(t.TempDir(), "f.duckdb")}
	code, _, errs := cli(t, vars, "sync", "--log-level", "debug", "--log-format", "json")
	if code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", code, exitFailure, errs)
	}
	if strings.Contains(errs, "sekrit_key_123") {
		t.Fatalf("the API key leaked into stderr:\n%s", errs)
	}
	last := strings.Split(strings.TrimSpace(errs), "\n")
	if !strings.HasPrefix(last[len(last)-1], "ploti-replica: ") {
		t.Fatalf("the cause should end stderr on one line:\n%s", errs)
	}
}

func TestHolds_listAndRelease(t *testing.T) {
	em, _, vars := demoWorld(t)
	ctx := context.Background()
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s %s", code, out, errs)
	}
	if _, out, _ := cli(t, vars, "holds", "list"); !strings.Contains(out, "no holds") {
		t.Fatalf("holds list on a fresh file: %s", out)
	}
	// A MAJOR change: drop the inspections' violations column.
	cols := []emulator.Column{{Name: "inspection_id", Type: "string"}, {Name: "establishment", Type: "string"},
		{Name: "inspected_on", Type: "date"}, {Name: "recorded_at", Type: "timestamp"},
		{Name: "score", Type: "decimal", Precision: &emulator.Precision{Precision: 5, Scale: 1}}, {Name: "passed", Type: "boolean"}}
	rows := []emulator.Row{{"inspection_id": "INS-1", "establishment": "Cafe", "score": "90.5", "passed": true}}
	if _, err := em.Publish(ctx, emulator.DemoInspections, rows, emulator.WithSchema(cols, []string{"inspection_id"}), emulator.SkipReview()); err != nil {
		t.Fatal(err)
	}
	// schemas-and-holds.txt: "hold the dataset at its current version
	// until someone on your side has reviewed it": every sync says so
	// until the review, in words and in --json.
	for _, args := range [][]string{{"sync"}, {"sync"}} {
		if out := mustCLI(t, vars, args...); !strings.Contains(out, "held for review: "+emulator.DemoInspections) ||
			!strings.Contains(out, "holds release "+emulator.DemoInspections) {
			t.Fatalf("sync should name the dataset held for review:\n%s", out)
		}
	}
	var res replica.SyncResult
	parseJSON(t, mustCLI(t, vars, "sync", "--json"), &res)
	if len(res.HeldForReview) != 1 || res.HeldForReview[0] != emulator.DemoInspections {
		t.Fatalf("sync --json heldForReview = %v", res.HeldForReview)
	}
	_, out, _ := cli(t, vars, "holds", "list")
	if !tableRow(out, emulator.DemoInspections, "local", "schema_review", "at version 1") {
		t.Fatalf("holds list should show the local review hold:\n%s", out)
	}
	_, out, _ = cli(t, vars, "status")
	if !strings.Contains(out, "held") || !strings.Contains(out, "holds release "+emulator.DemoInspections) {
		t.Fatalf("status should show the hold and how to release it:\n%s", out)
	}
	code, out, errs := cli(t, vars, "holds", "release", emulator.DemoInspections, "--json")
	var released replica.DatasetStatus
	parseJSON(t, out, &released)
	if code != exitOK || released.DatasetID != emulator.DemoInspections || released.Version != 2 || released.Status != "current" || len(released.Holds) != 0 {
		t.Fatalf("holds release --json: exit %d\n%s\n%s", code, out, errs)
	}
	if _, out, _ := cli(t, vars, "holds", "list"); !strings.Contains(out, "no holds") {
		t.Fatalf("holds list after release: %s", out)
	}
	if out := mustCLI(t, vars, "sync"); strings.Contains(out, "held for review") {
		t.Fatalf("a sync after the release names no hold:\n%s", out)
	}
	if code, _, errs := cli(t, vars, "holds", "release", emulator.DemoPermits); code != exitFailure || !strings.Contains(errs, "not held") {
		t.Fatalf("release of a dataset not held: exit %d %s", code, errs)
	}
	if code, _, errs := cli(t, vars, "holds", "release", "ds_nope"); code != exitFailure ||
		!strings.Contains(errs, "release ds_nope: "+vars["PLOTI_DB"]+" holds no dataset ds_nope") || strings.Contains(errs, "ds_nope: ds_nope") {
		t.Fatalf("release of a dataset the file does not hold: exit %d %s", code, errs)
	}
	// Ploti's own hold (holds list shows it): not one to release here, and
	// release says whose it is and what ends it.
	if _, err := em.Publish(ctx, emulator.DemoPermits, []emulator.Row{{"permit_number": "X-1"}}, emulator.Hold("data_check")); err != nil {
		t.Fatal(err)
	}
	cli(t, vars, "sync")
	// feed-events.txt: "version is the version you hold, which stays
	// current meanwhile": the line says so, not that it is the one held.
	if _, out, _ := cli(t, vars, "holds", "list"); !tableRow(out, emulator.DemoPermits, "server", "data_check", "version 1 stays current, Ploti holds the next") {
		t.Fatalf("holds list should show Ploti's hold:\n%s", out)
	}
	code, _, errs = cli(t, vars, "holds", "release", emulator.DemoPermits)
	if code != exitFailure || !strings.Contains(errs, "not held by you: Ploti holds its next version (data_check)") || !strings.Contains(errs, "once its team releases it") {
		t.Fatalf("release of a dataset Ploti holds: exit %d %s", code, errs)
	}
}

func TestDemo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.duckdb")
	code, out, errs := cli(t, nil, "demo", "--db", path)
	if code != exitOK {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errs)
	}
	// the demo starts from discovery: find a place, preview,
	// subscribe, sync.
	for _, want := range []string{"$ ploti-replica places --state fl", "fl-counties", "$ ploti-replica subscriptions preview --place fl-counties",
		"would deliver 3 dataset(s)", "$ ploti-replica subscriptions create --name 'Central Florida' --place fl-counties", "export PLOTI_SUBSCRIPTION=sub_1",
		"bootstrapped", "3 changes file(s) merged", emulator.DemoParcels, "issued permits worth",
		"data-dictionary.csv (text/csv, 225 bytes, kept inline)", "duckdb -readonly",
		// it shows a watched dataset too
		"$ ploti-replica watch add " + emulator.DemoWatched, "watches: 1 dataset(s) watched, 1 merged", emulator.DemoWatched + "  watch",
		// it keeps history and ends with a record's story and a
		// diff between the first version and the last
		"$ ploti-replica sync --history all", "$ ploti-replica history " + emulator.DemoPermits + " rec_", "version(s) in the history\nfirst    v1 → v2",
		"$ ploti-replica diff " + emulator.DemoPermits + " --from 1 --to 3\n" + emulator.DemoPermits + " (table " + emulator.DemoPermits + "), v1 → v3: 2 added, ",
		"\n  changed  rec_", "\n  removed  rec_"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// A file remembers what it replicates: later commands need only the key.
func TestCommands_readTheStoredSubscription(t *testing.T) {
	_, d, vars := demoWorld(t)
	if code, _, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s", code, errs)
	}
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	keyOnly := map[string]string{"PLOTI_API_KEY": vars["PLOTI_API_KEY"], "PLOTI_DB": vars["PLOTI_DB"]}
	if code, out, errs := cli(t, keyOnly, "status", "--behind"); code != exitOK || !strings.Contains(out, "behind:        3 event(s)") {
		t.Fatalf("status --behind with the key only: %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := cli(t, keyOnly, "sync"); code != exitOK || !strings.Contains(out, "3 changes file(s) merged") {
		t.Fatalf("sync with the key only: %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := cli(t, vars, "sync", "--on-major", "nope"); code != exitUsage || !strings.Contains(errs, "hold or reload") {
		t.Fatalf("--on-major nope: %d %s", code, errs)
	}
}

// The file the demo leaves opens read-only in another client, and
// each table equals the emulator's truth for the version it holds. The demo
// world is deterministic, so a second emulator seeded the same way holds the
// same truth.
func TestDemo_fileMatchesTruth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.duckdb")
	if code, out, errs := cli(t, nil, "demo", "--db", path); code != exitOK {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errs)
	}
	em, d, _ := demoWorld(t)
	if err := d.AddWatched(); err != nil {
		t.Fatal(err)
	}
	// SeedDemo published the first round before the watched dataset
	// joined: its first version, then the demo's two more rounds.
	if _, err := em.PublishNext(context.Background(), emulator.DemoWatched); err != nil {
		t.Fatal(err)
	}
	for d.Round < 3 {
		if err := d.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var synced []int // the demo syncs once a round
	for _, pv := range em.PlotiVersions(emulator.DemoWatched) {
		synced = append(synced, pv.Version)
	}
	if bad := truthMismatches(t, path, em); len(bad) > 0 {
		t.Fatalf("the demo's file differs from the truth:\n%s", strings.Join(bad, "\n"))
	}
	if bad := watchTruthMismatches(t, path, em, map[string][]int{emulator.DemoWatched: synced}); len(bad) > 0 {
		t.Fatalf("the demo's watched dataset differs from the truth:\n%s", strings.Join(bad, "\n"))
	}
	_, out, _ := cli(t, map[string]string{"PLOTI_DB": path}, "status", "--json")
	var st replica.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Datasets) != 4 {
		t.Fatalf("status of the demo file: %v\n%s", err, out)
	}
	for _, ds := range st.Datasets {
		want := 3
		if ds.Source == storage.SourceWatch {
			want = synced[len(synced)-1]
		}
		if ds.Version != want || ds.Status != "current" {
			t.Fatalf("the demo should leave every dataset current at its latest version: %+v", ds)
		}
	}
}

// --keep-changes N keeps each dataset's N latest merged versions in
// _ploti.changes; a negative N is a usage error.
func TestSync_keepChanges(t *testing.T) {
	_, d, vars := demoWorld(t)
	if code, _, errs := cli(t, vars, "sync", "--keep-changes", "-1"); code != exitUsage || !strings.Contains(errs, "--keep-changes -1") {
		t.Fatalf("--keep-changes -1: exit %d, %q", code, errs)
	}
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	for range 2 {
		if err := d.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := cli(t, vars, "sync", "--keep-changes", "1"); code != exitOK {
		t.Fatalf("sync --keep-changes 1: exit %d\n%s%s", code, out, errs)
	}
	db, err := backends.Open(context.Background(), vars["PLOTI_DB"], storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var datasets, most int
	err = db.SQL().QueryRow(`SELECT count(*), coalesce(max(n), 0) FROM (SELECT dataset_id, count(DISTINCT version) AS n FROM _ploti.changes GROUP BY ALL)`).Scan(&datasets, &most)
	if err != nil || datasets == 0 || most != 1 {
		t.Fatalf("_ploti.changes: %d datasets, at most %d versions each (%v); want some, 1 each", datasets, most, err)
	}
}

// docs/wire.md 8.3: "a 503 plan_unavailable without [Retry-After] waits a
// configurable minute": sync's --plan-unavailable-wait sets it, and
// --max-attempts bounds the tries.
func TestSync_planUnavailableWaitIsConfigurable(t *testing.T) {
	em, _, vars := demoWorld(t)
	em.Inject(emulator.Fault{Match: "/v1/**", Kind: emulator.FaultStatus, Status: 503, Code: "plan_unavailable", Count: 2})
	start := time.Now()
	code, _, errs := cli(t, vars, "sync", "--plan-unavailable-wait", "50ms")
	if code != 0 || time.Since(start) > 30*time.Second {
		t.Fatalf("sync through two 503 plan_unavailable: exit %d after %s: %s", code, time.Since(start), errs)
	}
	em.Inject(emulator.Fault{Match: "/v1/**", Kind: emulator.FaultStatus, Status: 503, Code: "plan_unavailable", Count: -1})
	defer em.ClearFaults()
	code, _, errs = cli(t, vars, "sync", "--plan-unavailable-wait", "10ms", "--max-attempts", "2")
	if code != exitFailure || !strings.Contains(errs, "plan") {
		t.Fatalf("sync against a plan that stays unreadable: exit %d, stderr %q; want %d naming the plan", code, errs, exitFailure)
	}
}

// A bad attachment (its sha256 not as signed) does not fail its dataset
// (docs/decisions.md 26) but is bad input all the same, and the sync's
// summary says so, as its --json does (attachmentsFailed): bad input gets
// a clear error naming what and where.
func TestSync_summaryNamesAttachmentsNotKept(t *testing.T) {
	em, _, vars := demoWorld(t)
	em.Inject(emulator.Fault{Match: "/files/*/attachments/*/*", Kind: emulator.FaultCorrupt, Count: -1})
	code, out, errs := cli(t, vars, "sync")
	if code != exitOK {
		t.Fatalf("sync: exit %d, want %d (an attachment does not fail its dataset)\n%s\n%s", code, exitOK, out, errs)
	}
	if want := "attachments not all kept: " + emulator.DemoPermits + ": attachments of " + emulator.DemoPermits; !strings.Contains(out, want) {
		t.Fatalf("the summary does not say %q:\n%s", want, out)
	}
}
