package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
)

func TestHistoryAndDiff(t *testing.T) {
	ctx := context.Background()
	_, d, vars := demoWorld(t)
	for round := 0; round < 2; round++ {
		if code, out, errs := cli(t, vars, "sync", "--history", "all", "--history-keep", "10"); code != exitOK {
			t.Fatalf("sync --history all: %d\n%s%s", code, out, errs)
		}
		if err := d.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := cli(t, vars, "diff", emulator.DemoPermits, "--from", "1", "--to", "2", "--json")
	var df diffOut
	if code != exitOK || json.Unmarshal([]byte(out), &df) != nil || df.From != 1 || df.To != 2 || len(df.Changes) == 0 {
		t.Fatalf("diff --json: exit %d\n%s\n%s", code, out, errs)
	}
	var changed *diffChangeOut
	for i, c := range df.Changes {
		if c.Change == storage.ChangeChanged {
			changed = &df.Changes[i]
			break
		}
	}
	if changed == nil || len(changed.Columns) == 0 {
		t.Fatalf("diff lists no changed record with its columns: %s", out)
	}
	code, out, _ = cli(t, vars, "history", emulator.DemoPermits, changed.RecordID)
	col := changed.Columns[0]
	if code != exitOK || !strings.Contains(out, col.Name+": "+wordOf(col.Old)+" → "+wordOf(col.New)) {
		t.Fatalf("history of %s lacks the change of %s: exit %d\n%s", changed.RecordID, col.Name, code, out)
	}
	code, out, _ = cli(t, vars, "history", emulator.DemoPermits, changed.RecordID, "--json")
	var story []struct{ ValidFrom int }
	if code != exitOK || json.Unmarshal([]byte(out), &story) != nil || len(story) < 2 || story[0].ValidFrom != 1 {
		t.Fatalf("history --json: exit %d\n%s", code, out)
	}
	if code, _, errs := cli(t, vars, "diff", emulator.DemoPermits, "--from", "1", "--to", "9"); code == exitOK || !strings.Contains(errs, "not in the dataset's history") {
		t.Fatalf("diff to a version not held: exit %d %s", code, errs)
	}
	// --history-keep 1 after the next version keeps that one only.
	if code, out, errs := cli(t, vars, "sync", "--history", "all", "--history-keep", "1"); code != exitOK {
		t.Fatalf("sync --history-keep 1: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := cli(t, vars, "diff", emulator.DemoPermits, "--from", "2", "--to", "3"); code == exitOK || !strings.Contains(errs, "not in the dataset's history") {
		t.Fatalf("diff from a version --history-keep 1 pruned: exit %d %s", code, errs)
	}
	code, out, _ = cli(t, vars, "history", emulator.DemoPermits, changed.RecordID, "--json")
	story = nil
	if code != exitOK || json.Unmarshal([]byte(out), &story) != nil || len(story) != 1 { // the row v3 shows, nothing before
		t.Fatalf("history after --history-keep 1: exit %d\n%s", code, out)
	}
	for _, bad := range []string{"0", "x", "-3d"} {
		if code, _, _ := cli(t, vars, "sync", "--history-keep", bad); code != exitUsage {
			t.Fatalf("--history-keep %s: exit %d, want usage", bad, code)
		}
	}
}

func TestParseHistoryKeep(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want replica.HistoryKeep
	}{
		{"", replica.HistoryKeep{}},
		{"10", replica.HistoryKeep{Versions: 10}},
		{"30d", replica.HistoryKeep{Age: 30 * 24 * time.Hour}},
		{"36h", replica.HistoryKeep{Age: 36 * time.Hour}},
	} {
		got, err := parseHistoryKeep(tc.in)
		if err != nil || got != tc.want {
			t.Fatalf("parseHistoryKeep(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// A record's current row reads "v3 → now", not an arrow to nothing.
func TestSpan_theCurrentRowSaysNow(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	later := at.Add(24 * time.Hour)
	three := 3
	for _, tc := range []struct {
		to     *int
		toAt   *time.Time
		fromAt *time.Time
		want   string
	}{
		{nil, nil, &at, "v2 → now (since 2026-11-01T00:00:00Z)"},
		{nil, nil, nil, "v2 → now"},
		{&three, &later, &at, "v2 → v3 (2026-11-01T00:00:00Z → 2026-11-02T00:00:00Z)"},
		{&three, nil, nil, "v2 → v3"},
	} {
		if got := span(2, tc.to, tc.fromAt, tc.toAt); got != tc.want {
			t.Fatalf("span = %q, want %q", got, tc.want)
		}
	}
}
