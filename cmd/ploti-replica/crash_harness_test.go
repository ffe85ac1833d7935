package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// What the crash harnesses share (TestCrash on a file, TestCrashWatch on
// watched datasets, TestCrash_postgres on a database): scenarios planned
// from the request sequences of clean runs, each played as kills in turn
// and then a sync to the end, whose result each harness checks its own
// way, and the figures they log.

// scenarioPlan says how a harness spreads its scenarios over the moments
// of the clean runs.
type scenarioPlan struct {
	seed   uint64
	counts map[string]int // scenarios from each start: "bootstrap", "catch-up"
	delays []time.Duration
	// resumes is the number of kills that follow scenario i's first, each
	// in a resumed run, within its first maxAt requests.
	resumes func(i int) int
	maxAt   int
	// Scenario i adds a network fault (crashFaults, in turn) to its resumed
	// runs when faultEvery > 0 and i%faultEvery == faultAt.
	faultEvery, faultAt int
}

// scenarios plans them from the clean runs' request sequences, the
// bootstrap's first.
func (sp scenarioPlan) scenarios(seqs map[string][]string) []crashScenario {
	rng := rand.New(rand.NewPCG(sp.seed, 2026))
	modes := []string{"before", "mid", "after", "after"}
	var out []crashScenario
	for _, from := range []string{"bootstrap", "catch-up"} {
		for i, p := range spread(firstKills(seqs[from], sp.delays), seqs[from], sp.counts[from]) {
			sc := crashScenario{from: from, plans: []killPlan{p}}
			for range sp.resumes(i) {
				sc.plans = append(sc.plans, killPlan{at: 1 + rng.IntN(sp.maxAt), mode: modes[rng.IntN(len(modes))], delay: sp.delays[rng.IntN(len(sp.delays))]})
			}
			if sp.faultEvery > 0 && i%sp.faultEvery == sp.faultAt {
				f := crashFaults()[len(out)%len(crashFaults())]
				sc.fault = &f
			}
			out = append(out, sc)
		}
	}
	return out
}

// harness plays scenarios on one crashWorld and keeps the figures.
type harness struct {
	t     *testing.T
	w     *crashWorld
	name  string
	began time.Time
	// kindOf names the moment a kill interrupted, for the figures.
	kindOf func(from string, p killPlan, run childRun) string

	syncs, kills, outran, faults, mismatches int
	byKind                                   map[string]int
}

func newHarness(t *testing.T, w *crashWorld, name string, kindOf func(string, killPlan, childRun) string) *harness {
	return &harness{t: t, w: w, name: name, began: time.Now(), kindOf: kindOf, byKind: map[string]int{}}
}

// clean runs a sync that is never killed on target and fails the test
// unless it ends well.
func (h *harness) clean(target string) childRun {
	h.t.Helper()
	run := h.w.runChild(h.t, target, nil)
	h.syncs++
	if run.killed || run.code != 0 {
		h.t.Fatalf("clean sync of %s: exit %d\n%s", target, run.code, run.stderr)
	}
	return run
}

// play kills a sync of target at each of sc's plans in turn, its fault (if
// any) on from the second run, then runs the sync to the end and checks it
// with check, which reads target and says what differs. A scenario that
// differs is an error naming its story.
func (h *harness) play(i int, target string, sc crashScenario, check func() []string) {
	h.t.Helper()
	var story []string
	for j, p := range sc.plans {
		if sc.fault != nil && j == 1 { // in a resumed run: the first kill lands where planned
			h.w.em.Inject(*sc.fault)
			h.faults++
		}
		run := h.w.runChild(h.t, target, &p)
		h.syncs++
		if !run.killed {
			h.outran++
			story = append(story, fmt.Sprintf("%v: no kill (exit %d)", p, run.code))
			if run.code != 0 {
				story = append(story, run.stderr)
			}
			continue
		}
		h.kills++
		h.byKind[h.kindOf(sc.from, p, run)]++
		story = append(story, fmt.Sprintf("%v: killed at %s", p, run.hit))
	}
	h.w.em.ClearFaults()
	run := h.w.runChild(h.t, target, nil)
	h.syncs++
	var bad []string
	if run.killed || run.code != 0 {
		bad = append(bad, fmt.Sprintf("the sync after the kills exited %d:\n%s", run.code, run.stderr))
	} else {
		bad = check()
	}
	if len(bad) > 0 {
		h.mismatches++
		h.t.Errorf("scenario %d (%s, %s): content differs from a clean run\n%s", i, sc.from, strings.Join(story, "; "), strings.Join(bad, "\n"))
	}
}

// report logs the figures and fails the test with fewer than minKills.
func (h *harness) report(scenarios, minKills int) {
	h.t.Helper()
	var kinds []string
	for k, n := range h.byKind {
		kinds = append(kinds, fmt.Sprintf("  %3d %s", n, k))
	}
	sort.Strings(kinds)
	h.t.Logf("%s: %d scenarios, %d kills (SIGKILL), %d faults injected, %d syncs run, %d content mismatches, in %s\n"+
		"(%d planned kills came after the child had finished)\nkills by moment:\n%s",
		h.name, scenarios, h.kills, h.faults, h.syncs, h.mismatches, time.Since(h.began).Round(time.Second), h.outran, strings.Join(kinds, "\n"))
	if h.kills < minKills {
		h.t.Errorf("only %d kills; want at least %d", h.kills, minKills)
	}
}

// countKinds counts the requests of kind in a run's sequence.
func countKinds(seq []string, kind string) int {
	n := 0
	for _, k := range seq {
		if k == kind {
			n++
		}
	}
	return n
}
