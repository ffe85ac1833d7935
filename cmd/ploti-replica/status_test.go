package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
)

// `status` shows each dataset's state with its reason, holds, stale
// and delayed details. One file with every state at once.
func TestStatus_everyState(t *testing.T) {
	ctx := context.Background()
	em, _, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s %s", code, out, errs)
	}
	// pending: a dataset that joins with no version yet.
	if err := em.AddDataset(emulator.DatasetSpec{ID: "ds_fl_orange_zoning", Title: "Zoning", PlaceID: "fl-orange",
		KeyColumns: []string{"zone"}, Columns: []emulator.Column{{Name: "zone", Type: "string"}}}); err != nil {
		t.Fatal(err)
	}
	// delayed: Ploti holds the permits' next version for a data check.
	if _, err := em.Publish(ctx, emulator.DemoPermits, []emulator.Row{{"permit_number": "X-1"}}, emulator.Hold("data_check")); err != nil {
		t.Fatal(err)
	}
	// held locally: a MAJOR change to the inspections (violations dropped).
	cols := []emulator.Column{{Name: "inspection_id", Type: "string"}, {Name: "establishment", Type: "string"},
		{Name: "inspected_on", Type: "date"}, {Name: "recorded_at", Type: "timestamp"},
		{Name: "score", Type: "decimal", Precision: &emulator.Precision{Precision: 5, Scale: 1}}, {Name: "passed", Type: "boolean"}}
	if _, err := em.Publish(ctx, emulator.DemoInspections, []emulator.Row{{"inspection_id": "I-1"}},
		emulator.WithSchema(cols, []string{"inspection_id"}), emulator.SkipReview()); err != nil {
		t.Fatal(err)
	}
	// removed: Seminole leaves the subscription.
	if err := em.PatchSubscription(vars["PLOTI_SUBSCRIPTION"], emulator.SubscriptionSpec{Places: []string{"fl-orange"}}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s %s", code, out, errs)
	}
	code, out, _ := cli(t, vars, "status", "--json")
	var st replica.Status
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: %d %s", code, out)
	}
	byID := map[string]replica.DatasetStatus{}
	for _, d := range st.Datasets {
		byID[d.DatasetID] = d
	}
	checks := []struct {
		id, status, reason, holdKind string
	}{
		{"ds_fl_orange_zoning", "pending", "awaiting_first_version", ""},
		{emulator.DemoPermits, "current", "data_check", "server"},
		{emulator.DemoInspections, "held", "major_schema_change", "local"},
		{emulator.DemoParcels, "removed", "subscription_changed", ""},
	}
	for _, c := range checks {
		d := byID[c.id]
		if d.Status != c.status || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: %s (%s), want %s (%s)", c.id, d.Status, d.Reason, c.status, c.reason)
		}
		if c.holdKind != "" && (len(d.Holds) != 1 || d.Holds[0].Kind != c.holdKind) {
			t.Errorf("%s holds %+v, want one %s hold", c.id, d.Holds, c.holdKind)
		}
	}
	_, text, _ := cli(t, vars, "status")
	for _, want := range []string{"pending", "Ploti holds the next version for review (data_check)", "held for review", "holds release " + emulator.DemoInspections,
		"left the subscription (subscription_changed)", "holds:", "server", "local"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}
	// stale: two days without a source check.
	em.Advance(72 * time.Hour)
	cli(t, vars, "sync")
	_, out, _ = cli(t, vars, "status", "--json")
	st = replica.Status{}
	json.Unmarshal([]byte(out), &st)
	stale := 0
	for _, d := range st.Datasets {
		if d.Stale && d.NextCheckBy != nil {
			stale++
		}
	}
	if stale == 0 {
		t.Errorf("no dataset shows stale after a missed check:\n%s", out)
	}
}

// A dataset whose file is bad fails alone: exit 3, status failed with the
// file and the problem, the last good version kept, the others applied.
func TestSync_partialFailureExitCode(t *testing.T) {
	ctx := context.Background()
	em, d, vars := demoWorld(t)
	if code, _, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s", code, errs)
	}
	if err := d.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if err := em.SpoilFileQuery(ctx, emulator.DemoParcels, d.Round, "changes", 0,
		"SELECT * FROM original UNION ALL (SELECT * FROM original LIMIT 1)"); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, vars, "sync")
	if code != exitPartial || !strings.Contains(out, "failed: "+emulator.DemoParcels) {
		t.Fatalf("sync with a bad changes file: exit %d, want %d\n%s\n%s", code, exitPartial, out, errs)
	}
	// The summary counts the failed dataset's event as failed, not skipped.
	if !strings.Contains(out, "(2 applied, 0 skipped, 1 failed)") {
		t.Fatalf("sync's summary with a failed dataset:\n%s", out)
	}
	_, out, _ = cli(t, vars, "status", "--json")
	var st replica.Status
	json.Unmarshal([]byte(out), &st)
	for _, ds := range st.Datasets {
		switch {
		case ds.DatasetID == emulator.DemoParcels:
			if ds.Status != "failed" || ds.Version != d.Round-1 || !strings.Contains(ds.Reason, "duplicate _ploti_record_id") || !strings.Contains(ds.Reason, ".parquet") {
				t.Errorf("parcels: %s v%d (%s)", ds.Status, ds.Version, ds.Reason)
			}
		case ds.Version != d.Round || ds.Status != "current":
			t.Errorf("%s: %s v%d, want current v%d", ds.DatasetID, ds.Status, ds.Version, d.Round)
		}
	}
	if err := em.RestoreFiles(emulator.DemoParcels, d.Round); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("the next sync should repair the failed dataset: exit %d %s", code, errs)
	}
}
