package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// agoRE is the part of `status` that moves with the clock.
var agoRE = regexp.MustCompile(`\([0-9hms.]+ ago\)`)

// statusOut runs `status` and `status --json`.
func statusOut(t *testing.T, vars map[string]string) (text, js string) {
	t.Helper()
	code, js, errs := cli(t, vars, "status", "--json")
	if code != exitOK {
		t.Fatalf("status --json: %d %s", code, errs)
	}
	code, text, errs = cli(t, vars, "status")
	if code != exitOK {
		t.Fatalf("status: %d %s", code, errs)
	}
	return agoRE.ReplaceAllString(text, "(ago)"), js
}

// Decision 51: `status` reads the status its last writer kept beside the
// file, and prints the very bytes it prints from the file itself: every
// state of a dataset, holds with their details, the last run. The summary
// holds no secret.
func TestStatus_fromTheSummaryAsFromTheFile(t *testing.T) {
	ctx := context.Background()
	em, _, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s %s", code, out, errs)
	}
	if _, err := em.Publish(ctx, emulator.DemoPermits, []emulator.Row{{"permit_number": "X-1"}}, emulator.Hold("data_check")); err != nil {
		t.Fatal(err)
	}
	cols := []emulator.Column{{Name: "inspection_id", Type: "string"}, {Name: "establishment", Type: "string"},
		{Name: "inspected_on", Type: "date"}, {Name: "recorded_at", Type: "timestamp"},
		{Name: "score", Type: "decimal", Precision: &emulator.Precision{Precision: 5, Scale: 1}}, {Name: "passed", Type: "boolean"}}
	if _, err := em.Publish(ctx, emulator.DemoInspections, []emulator.Row{{"inspection_id": "I-1"}},
		emulator.WithSchema(cols, []string{"inspection_id"}), emulator.SkipReview()); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s %s", code, out, errs)
	}
	db := vars["PLOTI_DB"]
	kept, err := os.ReadFile(backends.SummaryPath(db))
	if err != nil {
		t.Fatalf("no summary beside the file after a sync: %v", err)
	}
	if strings.Contains(string(kept), vars["PLOTI_API_KEY"]) {
		t.Fatal("the summary holds the API key")
	}
	if _, ok := replica.StoredStatus(db); !ok {
		t.Fatal("the summary is not read for the file its sync left")
	}
	text, js := statusOut(t, vars)
	for _, want := range []string{"holds release " + emulator.DemoInspections, "(data_check)", "local", "server"} {
		if !strings.Contains(text, want) {
			t.Fatalf("status lacks %q:\n%s", want, text)
		}
	}
	if err := os.Remove(backends.SummaryPath(db)); err != nil {
		t.Fatal(err)
	}
	fileText, fileJS := statusOut(t, vars)
	if js != fileJS {
		t.Errorf("status --json from the summary:\n%s\nfrom the file:\n%s", js, fileJS)
	}
	if text != fileText {
		t.Errorf("status from the summary:\n%s\nfrom the file:\n%s", text, fileText)
	}
}

// cursorOf is the cursor `status --json` shows.
func cursorOf(t *testing.T, vars map[string]string) string {
	t.Helper()
	_, js := statusOut(t, vars)
	var st replica.Status
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatal(err)
	}
	return st.Cursor
}

// "never silently stale": after DuckDB alone (a user's DuckDB CLI) changed
// a _ploti row, in the file or in its write-ahead log only, `status` shows
// the change, not the summary of the sync before it.
func TestStatus_afterDuckDBAloneChangedTheFile(t *testing.T) {
	for _, logOnly := range []bool{false, true} {
		_, _, vars := demoWorld(t)
		if code, out, errs := cli(t, vars, "sync"); code != exitOK {
			t.Fatalf("sync: %d %s %s", code, out, errs)
		}
		db := vars["PLOTI_DB"]
		if _, ok := replica.StoredStatus(db); !ok {
			t.Fatal("no summary after the sync")
		}
		plain, err := duckread.OpenPlain(context.Background(), db, storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		plain.SetMaxOpenConns(1)
		if logOnly {
			plain.Exec("PRAGMA disable_checkpoint_on_shutdown")
		}
		if _, err := plain.Exec("UPDATE _ploti.subscription SET cursor = 'set-by-hand'"); err != nil {
			t.Fatal(err)
		}
		plain.Close()
		if _, err := os.Stat(db + ".wal"); (err == nil) != logOnly {
			t.Fatalf("log only %v, but the log: %v", logOnly, err)
		}
		if c := cursorOf(t, vars); c != "set-by-hand" {
			t.Errorf("log only %v: status shows cursor %q, not the one DuckDB alone wrote", logOnly, c)
		}
	}
}

// "never silently stale": a sync killed midway, after pages committed,
// leaves the file in a state no summary was kept for. Even the summary of
// the sync before it, put back beside the file after the crash, is not
// read: status prints what the file itself holds.
func TestStatus_afterACrashMidSync(t *testing.T) {
	w := newCrashWorld(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "feeds.duckdb")
	vars := map[string]string{"PLOTI_API_URL": w.proxy.URL(), "PLOTI_API_KEY": w.em.APIKey(), "PLOTI_SUBSCRIPTION": w.sub,
		"PLOTI_DB": db}
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s %s", code, out, errs)
	}
	kept, err := os.ReadFile(backends.SummaryPath(db))
	if err != nil {
		t.Fatal(err)
	}
	_, before := statusOut(t, vars)
	w.moreVersions(t)

	// How many requests the catch-up makes, on a copy: the kill comes
	// before its last one, after the walk's pages committed (a kill at an
	// earlier request can come before any commit: files are fetched ahead
	// of the pages that load them).
	learn := filepath.Join(dir, "learn.duckdb")
	copyFile(t, db, learn)
	w.proxy.start(nil, nil)
	learnVars := map[string]string{"PLOTI_API_URL": w.proxy.URL(), "PLOTI_API_KEY": w.em.APIKey(), "PLOTI_SUBSCRIPTION": w.sub, "PLOTI_DB": learn}
	if code, out, errs := cli(t, learnVars, "sync", "--page-size", "3"); code != exitOK {
		t.Fatalf("sync: %d %s %s", code, out, errs)
	}
	w.proxy.mu.Lock()
	last := len(w.proxy.seq)
	w.proxy.mu.Unlock()

	// The same catch-up in a process of its own, killed there.
	started := make(chan *os.Process, 1)
	w.proxy.start(&killPlan{at: last, mode: "before"}, func() { (<-started).Signal(syscall.SIGKILL) })
	cmd, out := cliProcess(t, vars, "sync", "--page-size", "3")
	started <- cmd.Process
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err == nil {
		t.Fatal("the sync ended before its kill")
	}
	if err := os.WriteFile(backends.SummaryPath(db), kept, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := replica.StoredStatus(db); ok {
		t.Fatal("the summary of the sync before the crash is read")
	}
	_, got := statusOut(t, vars)
	if got == before {
		t.Fatal("the killed sync committed nothing: this test wants a crash after commits")
	}
	os.Remove(backends.SummaryPath(db))
	if _, fromFile := statusOut(t, vars); got != fromFile {
		t.Errorf("status after the crash:\n%s\nthe file:\n%s", got, fromFile)
	}
}
