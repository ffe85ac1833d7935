package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The batched walk's kill points (--batch-events: two pages of three
// events a transaction): the catch-up is killed at each request of its
// walk, inside a transaction holding pages uncommitted, in a commit made
// before a load of its own in the middle of one, and after the commit of
// one; then a sync runs to the end, and the file must equal a clean
// run's and the emulator's truth, and `verify` must find every table
// whole. Both moments of a multi-page transaction must be among the
// kills.
func TestCrash_batchedWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it around every page of a catch-up")
	}
	w := newCrashWorld(t)
	w.bin = harnessBinary(t)
	h := newHarness(t, w, "crash harness of the batched walk", func(from string, p killPlan, run childRun) string {
		if m := walkMoment(strings.Split(strings.TrimSpace(run.stderr), "\n")); m != "" {
			return from + ": " + m
		}
		return crashKind(from, p, run)
	})
	base := filepath.Join(w.dir, "base.duckdb")
	h.clean(base)
	w.moreVersions(t)
	clean := filepath.Join(w.dir, "clean.duckdb")
	copyFile(t, base, clean)
	seq := h.clean(clean).seq
	want, err := fingerprint(t, clean)
	if err != nil {
		t.Fatal(err)
	}
	// The catch-up reads its pages of events first (to weigh them
	// against the manifest), then walks them: its kills land at the
	// walk's requests (versions, changes files, snapshots), each in turn
	// on arrival or at a delay after its answer.
	modes := []killPlan{{mode: "before"}, {mode: "after", delay: 2 * time.Millisecond}, {mode: "after", delay: 30 * time.Millisecond}}
	var scenarios []crashScenario
	walk := false
	for i, kind := range seq {
		walk = walk || kind != "events"
		if !walk {
			continue
		}
		for j, m := range modes {
			if *crashFull || j == i%len(modes) {
				m.at = i + 1
				scenarios = append(scenarios, crashScenario{from: "catch-up", plans: []killPlan{m}})
			}
		}
	}
	for i, sc := range scenarios {
		path := filepath.Join(w.dir, fmt.Sprintf("b%03d.duckdb", i))
		copyFile(t, base, path)
		h.play(i, path, sc, func() []string {
			return append(fileMismatches(t, path, want, w), verifyMismatches(t, w, path)...)
		})
		os.Remove(path)
	}
	h.report(len(scenarios), len(scenarios)/2)
	for _, moment := range []string{inBatch, afterBatch} {
		if h.byKind["catch-up: "+moment] == 0 {
			t.Errorf("no kill landed %s: %v", moment, h.byKind)
		}
	}
}

// verifyMismatches runs `verify` on a file: it compares every table with
// Ploti's current version.
func verifyMismatches(t *testing.T, w *crashWorld, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, "verify", "--db", path)
	cmd.Env = append(os.Environ(), "PLOTI_API_URL="+w.proxy.URL(), "PLOTI_API_KEY="+w.em.APIKey(), "PLOTI_SUBSCRIPTION="+w.sub)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("verify: %v\n%s", err, strings.TrimSpace(string(out)))}
	}
	return nil
}
