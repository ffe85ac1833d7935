package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// The crash harness's soak: the quick run above is CI's; the
// soak runs outside it, as long as one asks:
//
//	go test ./cmd/ploti-replica -run 'TestCrash$' -v -timeout 0 -args \
//	    -crash.seed=15 -crash.scenarios=400 -crash.rows=1000000
//
// It adds to the quick run's world a second one with one large dataset
// (-crash.rows rows; at 1M DuckDB writes and checkpoints for real), whose
// load and merge the kills land inside at delays spread over the whole of
// them (commit, checkpoint and close included), and it spoils a share of
// the requests of every resumed run with a transport fault (-crash.faults)
// at the proxy: resets, 500s, 503s and 429s with Retry-After, bodies cut
// off, truncated or corrupted. Each scenario ends with a clean sync whose
// file must equal a never-killed run's and the emulator's truth.
var (
	soakSeed      = flag.Uint64("crash.seed", 15, "soak: seed of the kill and fault plans")
	soakScenarios = flag.Int("crash.scenarios", 0, "soak: scenarios to run (0: the quick run, CI's)")
	soakRows      = flag.Int("crash.rows", 1_000_000, "soak: rows of the large dataset")
	soakFaultRate = flag.Float64("crash.faults", 0.3, "soak: share of a resumed run's requests given a transport fault")
	soakLarge     = flag.Int("crash.large-every", 8, "soak: one scenario in this many runs in the large world")
	// crashFull runs the crash harnesses' whole plans (TestCrash's 42
	// scenarios and 50 kills or more); without it `go test ./...`
	// plays about a third of each plan, spread over the same requests, so
	// the package stays well inside go test's default ten minutes on two
	// shared cores. .ci/run runs the whole plans on a line of their own.
	crashFull = flag.Bool("crash.full", false, "crash harnesses: play the whole plans (CI's own line) instead of a third")
)

// crashShare is the share of a harness's plan a run plays: n scenarios
// from one start in the whole plan, about a third of them (at least two)
// by default.
func crashShare(n int) int {
	if *crashFull {
		return n
	}
	return max(2, (n+2)/3)
}

// crashKills is the fewest kills a harness's run must land: want for the
// whole plan of planned scenarios, in proportion for the share played
// (a kill can outrun its child, so a scenario may land none).
func crashKills(want, planned, played int) int {
	return want * played / planned
}

// childTimeout bounds one child run (a large bootstrap on a busy machine
// takes a minute or more).
var childTimeout = 10 * time.Minute

// proxyFaults spoils a share of the requests the proxy forwards; the
// proxy's mutex guards it.
type proxyFaults struct {
	rate   float64
	rng    *rand.Rand
	byKind map[string]int // faults that fired, by kind
}

var faultKinds = []string{"reset", "500", "503 Retry-After", "429 Retry-After", "cut off", "truncated", "corrupted"}

// pick says which fault, if any, request kind gets.
func (f *proxyFaults) pick(kind string) string {
	if f.rate <= 0 || f.rng.Float64() >= f.rate {
		return ""
	}
	k := faultKinds[f.rng.IntN(len(faultKinds))]
	if (k == "truncated" || k == "corrupted") && apiKinds[kind] {
		// A well-framed API answer with other bytes than the server sent
		// cannot cross TLS; a file's can reach the disk, where its
		// sha256 catches it.
		k = "cut off"
	}
	f.byKind[k]++
	return k
}

// before answers the faults that need no upstream answer; it reports
// whether the request was answered.
func (f *proxyFaults) before(w http.ResponseWriter, fault string) bool {
	switch fault {
	case "reset":
		hj, _ := w.(http.Hijacker)
		conn, _, err := hj.Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
	case "503 Retry-After", "429 Retry-After":
		status, code := http.StatusServiceUnavailable, "plan_unavailable"
		if fault[0] == '4' {
			status, code = http.StatusTooManyRequests, "rate_limited"
		}
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":"injected by the crash harness"}}`, code)
	default:
		return false
	}
	return true
}

// body spoils an upstream answer b; it reports whether it answered.
func (f *proxyFaults) body(w http.ResponseWriter, fault string, status int, b []byte) bool {
	switch fault {
	case "cut off":
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(status)
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case "truncated":
		w.Header().Set("Content-Length", fmt.Sprint(len(b)/2))
		w.WriteHeader(status)
		w.Write(b[:len(b)/2])
	case "corrupted":
		c := append([]byte(nil), b...)
		for i := len(c) / 3; i < len(c)/3+16 && i < len(c); i++ {
			c[i] ^= 0xff
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(c)))
		w.WriteHeader(status)
		w.Write(c)
	default:
		return false
	}
	return true
}

// largeAt is the large dataset at a round: each round drops the first
// thousand rows, adds a thousand and changes one row in fifty.
func largeAt(round, rows int) string {
	return fmt.Sprintf(`SELECT 'L-' || lpad(i::VARCHAR, 9, '0') AS record_no, 'name ' || (i %% 1009) AS name,
	(i %% 100000) / 100.0 + CASE WHEN i %% 50 = %[1]d THEN %[1]d ELSE 0 END AS amount,
	DATE '2020-01-01' + (i %% 2000)::INTEGER AS day, i %% 3 = 0 AS flag
FROM range(%[1]d * 1000, %[1]d * 1000 + %[2]d) t(i)`, round, rows)
}

// newLargeWorld is one dataset of rows rows, at version 1, in a place no
// other subscription delivers.
func newLargeWorld(t *testing.T, rows int) *crashWorld {
	t.Helper()
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.StartOn("127.0.0.1:0", ""); err != nil {
		t.Fatal(err)
	}
	em.AddPlace(emulator.Place{ID: "ga-fulton", Name: "Fulton County, GA", Kind: "county", State: "ga"})
	cols := []emulator.Column{{Name: "record_no", Type: "string"}, {Name: "name", Type: "string"}, {Name: "amount", Type: "number"},
		{Name: "day", Type: "date"}, {Name: "flag", Type: "boolean"}}
	if err := em.AddDataset(emulator.DatasetSpec{ID: "ds_large", Title: "Large", PlaceID: "ga-fulton", KeyColumns: []string{"record_no"}, Columns: cols}); err != nil {
		t.Fatal(err)
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{DatasetIDs: []string{"ds_large"}})
	if err != nil {
		t.Fatal(err)
	}
	w := &crashWorld{em: em, sub: sub, dir: t.TempDir()}
	w.publish(t, "ds_large", largeAt(0, rows), emulator.Parts(2))
	w.proxy = newCrashProxy(t, em.URL())
	return w
}

// soakWorld is one world of the soak with its clean runs.
type soakWorld struct {
	name string
	w    *crashWorld
	base string                       // the file synced before the later versions
	want map[string]map[string]string // by from: a clean run's fingerprint
	seqs map[string][]string          // by from: a clean run's requests
	// gaps: by from, the large files' requests (1-based) and how long the
	// child worked after each answer before its next request or its exit.
	gaps map[string]map[int]time.Duration
}

// soakFigures are the soak's counts.
type soakFigures struct {
	scenarios, kills, outran, syncs, mismatches int
	walLeft, walReplayFailures, failedRuns      int
	byMoment                                    map[string]int
}

func soak(t *testing.T) {
	began := time.Now()
	bin := harnessBinary(t)
	rng := rand.New(rand.NewPCG(*soakSeed, 2026))
	fig := soakFigures{byMoment: map[string]int{}}
	faults := &proxyFaults{rate: *soakFaultRate, rng: rand.New(rand.NewPCG(*soakSeed, 7)), byKind: map[string]int{}}

	small := &soakWorld{name: "small", w: newCrashWorld(t)}
	large := &soakWorld{name: "large", w: newLargeWorld(t, *soakRows)}
	for _, sw := range []*soakWorld{small, large} {
		sw.w.bin = bin
		sw.w.proxy.faults = nil
		sw.prepare(t, &fig)
		t.Logf("soak: %s world ready after %s: catch-up %d requests, bootstrap %d", sw.name, time.Since(began).Round(time.Second),
			len(sw.seqs["catch-up"]), len(sw.seqs["bootstrap"]))
	}
	delays := []time.Duration{0, time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 60 * time.Millisecond}
	firsts := map[string][]killPlan{}
	for _, from := range []string{"bootstrap", "catch-up"} {
		plans := firstKills(small.seqs[from], delays)
		firsts[from] = spread(plans, small.seqs[from], len(plans))
	}
	for i := range *soakScenarios {
		sw := small
		if *soakLarge > 0 && i%*soakLarge == *soakLarge-1 {
			sw = large
		}
		from := []string{"bootstrap", "catch-up"}[rng.IntN(2)]
		sc := crashScenario{from: from}
		if sw == large {
			sc.plans = append(sc.plans, sw.insideLarge(rng, from))
		} else {
			fp := firsts[from]
			sc.plans = append(sc.plans, fp[rng.IntN(len(fp))])
		}
		for range 2 + rng.IntN(4) {
			sc.plans = append(sc.plans, sw.resumedKill(rng, from, delays))
		}
		sw.run(t, i, sc, faults, &fig)
		fig.scenarios++
		if (i+1)%20 == 0 {
			t.Logf("soak: %d scenarios, %d kills, %d faults, %d mismatches, %s", i+1, fig.kills, sumCounts(faults.byKind), fig.mismatches,
				time.Since(began).Round(time.Second))
		}
	}
	t.Log(fig.report(faults.byKind, time.Since(began)))
	if fig.mismatches > 0 {
		t.Errorf("%d content mismatches", fig.mismatches)
	}
}

// prepare runs the clean syncs: base, then the later versions, then a
// catch-up from base and a bootstrap.
func (sw *soakWorld) prepare(t *testing.T, fig *soakFigures) {
	t.Helper()
	w := sw.w
	sw.base = filepath.Join(w.dir, "base.duckdb")
	sw.want, sw.seqs, sw.gaps = map[string]map[string]string{}, map[string][]string{}, map[string]map[int]time.Duration{}
	clean := func(name, from string) childRun {
		path := filepath.Join(w.dir, name)
		if from != "" {
			copyFile(t, from, path)
		}
		run := w.runChild(t, path, nil)
		fig.syncs++
		if run.killed || run.code != 0 {
			t.Fatalf("clean sync %s: exit %d\n%s", name, run.code, run.stderr)
		}
		if bad := truthMismatches(t, path, w.em); len(bad) > 0 {
			t.Fatalf("clean sync %s differs from the emulator's truth:\n%s", name, strings.Join(bad, "\n"))
		}
		return run
	}
	clean("base.duckdb", "")
	if sw.name == "large" {
		w.publish(t, "ds_large", largeAt(1, *soakRows), emulator.Parts(2))
		w.publish(t, "ds_large", largeAt(2, *soakRows), emulator.Parts(2))
	} else {
		w.moreVersions(t)
	}
	for _, from := range []string{"catch-up", "bootstrap"} {
		name, src := "clean-"+from+".duckdb", map[string]string{"catch-up": sw.base}[from]
		run := clean(name, src)
		fp, err := fingerprint(t, filepath.Join(w.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sw.want[from], sw.seqs[from] = fp, run.seq
		sw.gaps[from] = map[int]time.Duration{}
		for k, p := range run.paths {
			if kind := run.seq[k]; sw.name == "large" && (kind == "snapshot" || kind == "changes") {
				next := run.ended
				if k+1 < len(run.took) && !run.took[k+1].IsZero() {
					next = run.took[k+1]
				}
				sw.gaps[from][k+1] = next.Sub(run.took[k])
				t.Logf("soak: large %s: %s answered, then %s of DuckDB work", from, p, next.Sub(run.took[k]).Round(time.Millisecond))
			}
		}
		os.Remove(filepath.Join(w.dir, name))
	}
	if sw.name == "large" && (len(sw.gaps["bootstrap"]) == 0 || len(sw.gaps["catch-up"]) == 0) {
		t.Fatalf("the large world's clean runs fetched no large file: %v", sw.seqs)
	}
}

// insideLarge is a kill after one of the large files' answers, at a delay
// spread over the DuckDB work that follows it (a little past it too).
func (sw *soakWorld) insideLarge(rng *rand.Rand, from string) killPlan {
	var ks []int
	for k := range sw.gaps[from] {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	k := ks[rng.IntN(len(ks))]
	gap := sw.gaps[from][k]
	return killPlan{at: k, mode: "after", delay: time.Duration(rng.Float64() * 1.1 * float64(gap))}
}

// resumedKill is a kill for a run after the first: at any of the clean
// run's requests, in any mode; in the large world an "after" kill's delay
// is spread over the large files' work.
func (sw *soakWorld) resumedKill(rng *rand.Rand, from string, delays []time.Duration) killPlan {
	seq := sw.seqs[from]
	// a resumed run asks less than a whole one
	p := killPlan{at: 1 + rng.IntN(max(4, len(seq)/2)), mode: []string{"before", "mid", "after", "after"}[rng.IntN(4)]}
	if p.mode == "after" {
		p.delay = delays[rng.IntN(len(delays))]
		if sw.name == "large" && rng.IntN(2) == 0 {
			var longest time.Duration
			for _, g := range sw.gaps[from] {
				longest = max(longest, g)
			}
			p.delay = time.Duration(rng.Float64() * float64(longest))
		}
	}
	return p
}

// run plays one scenario: the kills in turn, the resumed runs with
// transport faults, then a clean sync checked against the clean run and
// the truth.
func (sw *soakWorld) run(t *testing.T, i int, sc crashScenario, faults *proxyFaults, fig *soakFigures) {
	t.Helper()
	w := sw.w
	path := filepath.Join(w.dir, fmt.Sprintf("s%04d.duckdb", i))
	if sc.from == "catch-up" {
		copyFile(t, sw.base, path)
	}
	var story []string
	afterKill := false
	for j, p := range sc.plans {
		w.proxy.mu.Lock()
		if j > 0 {
			w.proxy.faults = faults
		}
		w.proxy.mu.Unlock()
		run := w.runChild(t, path, &p)
		fig.syncs++
		w.proxy.mu.Lock()
		w.proxy.faults = nil
		w.proxy.mu.Unlock()
		if afterKill && !run.killed && run.code != 0 && walTrouble(run.stderr) {
			fig.walReplayFailures++
			story = append(story, "WAL replay failed: "+lastLine(run.stderr))
		}
		if !run.killed {
			fig.outran++
			if run.code != 0 {
				fig.failedRuns++
			}
			story = append(story, fmt.Sprintf("%v: no kill (exit %d)", p, run.code))
			if run.code != 0 {
				story = append(story, warnings(run.stderr))
			}
			afterKill = false
			continue
		}
		fig.kills++
		afterKill = true
		moment := sw.name + " " + crashKind(sc.from, p, run)
		if _, err := os.Stat(path + ".wal"); err == nil {
			fig.walLeft++
			if sw.name == "large" {
				moment += " (WAL left)"
			}
		}
		fig.byMoment[moment]++
		story = append(story, fmt.Sprintf("%v: killed at %s", p, run.hit))
	}
	run := w.runChild(t, path, nil)
	fig.syncs++
	var bad []string
	if afterKill && run.code != 0 && walTrouble(run.stderr) {
		fig.walReplayFailures++
	}
	if run.killed || run.code != 0 {
		bad = append(bad, fmt.Sprintf("the sync after the kills exited %d:\n%s", run.code, run.stderr))
	} else if fp, err := fingerprint(t, path); err != nil {
		bad = append(bad, "read the file: "+err.Error())
	} else {
		bad = append(bad, diff(fp, sw.want[sc.from])...)
		bad = append(bad, truthMismatches(t, path, w.em)...)
		if _, err := os.Stat(path + ".spool"); err == nil {
			bad = append(bad, "the spool folder is left after a finished sync")
		}
		if left, _ := filepath.Glob(path + ".walcheck-*"); len(left) > 0 {
			bad = append(bad, fmt.Sprintf("a WAL check's links are left: %v", left))
		}
	}
	if len(bad) > 0 {
		fig.mismatches++
		t.Errorf("scenario %d (%s %s, seed %d): %s\n%s", i, sw.name, sc.from, *soakSeed, strings.Join(story, "; "), strings.Join(bad, "\n"))
		return // keep the file to look at
	}
	os.Remove(path)
	os.Remove(path + ".wal")
}

// walTrouble says whether a run's log tells of DuckDB failing to replay
// the write-ahead log.
func walTrouble(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "wal") || strings.Contains(s, "replay")
}

// warnings are a run's log lines at warn level and above.
func warnings(stderr string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (f soakFigures) report(faults map[string]int, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "crash soak (seed %d, %d rows in the large dataset): %d scenarios, %d kills (SIGKILL), %d transport faults injected, "+
		"%d syncs run, %d content mismatches, %d DuckDB WAL-replay failures, in %s\n", *soakSeed, *soakRows, f.scenarios, f.kills,
		sumCounts(faults), f.syncs, f.mismatches, f.walReplayFailures, took.Round(time.Second))
	fmt.Fprintf(&b, "%d kills left a .wal beside the file for the next open to replay; %d planned kills came after the child had finished "+
		"(%d of those runs failed, on their faults, and the next run resumed)\n", f.walLeft, f.outran, f.failedRuns)
	b.WriteString("kills by moment:\n")
	var ks []string
	for k, n := range f.byMoment {
		ks = append(ks, fmt.Sprintf("  %4d %s", n, k))
	}
	sort.Strings(ks)
	b.WriteString(strings.Join(ks, "\n"))
	b.WriteString("\nfaults by kind:\n")
	ks = nil
	for k, n := range faults {
		ks = append(ks, fmt.Sprintf("  %4d %s", n, k))
	}
	sort.Strings(ks)
	b.WriteString(strings.Join(ks, "\n"))
	return b.String()
}
