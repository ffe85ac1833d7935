package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/storage"
)

// manyLogFixture is a log after the statewide file's cursor: rounds of a
// stale event for every dataset and a small update for one in ten.
type manyLogFixture struct {
	events   int
	updates  int
	rowsEach float64 // changed rows per update, on average
	pages    [][][2]string
}

// buildManyLog publishes the log's rounds and collects, page by page (500
// events from the file's cursor, as the walk reads them), the changes
// files its updates bring.
func (r *run) buildManyLog(ctx context.Context, f *manyFixture) (*manyLogFixture, error) {
	em, n := f.em, len(f.ids)
	from := len(em.Events(f.sub))
	rounds := max(1, int(math.Round(float64(r.cfg.ManyEvents)/float64(n+n/manyUpdateEvery))))
	r.logf("emulator: building a log of %d rounds over %d datasets (a stale event each, an update for one in %d)", rounds, n, manyUpdateEvery)
	start := time.Now()
	histories := make([][]churn, n)
	versions := map[[2]any]string{} // dataset, version → changes file
	var changed int64
	l := &manyLogFixture{}
	for round := range rounds {
		for i, id := range f.ids {
			if (i+round)%manyUpdateEvery == 0 {
				histories[i] = append(histories[i], churn{0.01})
				rel, err := em.PublishQuery(ctx, id, permitsSQL(f.sizes[i], histories[i]))
				if err != nil {
					return nil, err
				}
				if rel.ResyncRequired || rel.Held {
					return nil, fmt.Errorf("update %d of %s is a resync or held: %w", rel.Version, id, errMismatch)
				}
				file, err := em.ChangesFile(ctx, id, rel.Version)
				if err != nil {
					return nil, err
				}
				versions[[2]any{id, rel.Version}] = file
				changed += rel.Added + rel.Changed + rel.Removed
				l.updates++
			}
			if err := em.Check(id); err != nil {
				return nil, err
			}
		}
		em.Advance(staleRound)
	}
	evs := em.Events(f.sub)[from:]
	l.events = len(evs)
	pages, err := manyLogPages(evs, versions)
	if err != nil {
		return nil, err
	}
	l.pages = pages
	l.rowsEach = float64(changed) / float64(max(l.updates, 1))
	r.logf("emulator: %d events, %d updates of %.0f rows on average, built in %s", l.events, l.updates, l.rowsEach, time.Since(start).Round(time.Second))
	return l, nil
}

// manyLogPages cuts the log's events into pages of 500 (as the walk reads
// them from the file's cursor) and lists, for each page, the tables and
// changes files (versions: dataset, version → file) of its updates.
func manyLogPages(evs []emulator.Event, versions map[[2]any]string) ([][][2]string, error) {
	var pages [][][2]string
	for p := 0; p*500 < len(evs); p++ {
		var page [][2]string
		for _, ev := range evs[p*500 : min(len(evs), (p+1)*500)] {
			if ev.Type != "feed.dataset.updated" {
				continue
			}
			var body struct {
				Data struct {
					Version int `json:"version"`
				} `json:"data"`
			}
			if err := json.Unmarshal(ev.JSON, &body); err != nil {
				return nil, err
			}
			file, ok := versions[[2]any{ev.DatasetID, body.Data.Version}]
			if !ok {
				return nil, fmt.Errorf("event %s names %s v%d, not published here: %w", ev.ID, ev.DatasetID, body.Data.Version, errMismatch)
			}
			page = append(page, [2]string{storage.TableName(ev.DatasetID), file})
		}
		pages = append(pages, page)
	}
	return pages, nil
}

// manyLog measures the catch-up of the log: on loopback with the rate
// limits off (the engine's own speed, events a second, and against DuckDB
// alone applying the same files in one transaction per page), its API
// calls, the time the client's rate limiter alone would make it take, and
// one run over the imitated link.
func (r *run) manyLog(ctx context.Context, f *manyFixture) error {
	l, err := r.buildManyLog(ctx, f)
	if err != nil {
		return err
	}
	if err := r.manyLogWarmUp(ctx, f, l); err != nil {
		return err
	}
	t, err := r.manyLogTurns(ctx, f, l)
	if err != nil {
		return err
	}
	// As a user runs it: the rate limits on, over the imitated link.
	limited := r.eo
	limited.RateLimit = true
	f.em.SetWire(r.cfg.Wire)
	var userBytes int64
	user, err := r.manyCatchUp(ctx, f, l, limited, &userBytes)
	f.em.SetWire(emulator.Wire{})
	if err != nil {
		return err
	}
	r.logf("many catch-up with the rate limits on, over the wire: %s, %s", secs(user.Total.Wall), callText(user.Calls))
	perSec := t.rate.Median()
	size := fmt.Sprintf("%d events over %d datasets, %d updates of ~%.0f rows", l.events, len(f.ids), l.updates, l.rowsEach)
	r.rep.target(Line{What: "7c. catch-up of a statewide log (stale events, small updates), loopback, rate limits off", Size: size,
		Engine: fmt.Sprintf("%s; API calls and downloads within it, %s in all", t.eng.String(), t.net.Wall.String()),
		Versus: "events a second: " + t.rate.Format(func(v float64) string { return fmt.Sprintf("%.0f", v) }), Ratio: perSec, CPURatio: math.NaN()}, 2000, false)
	r.rep.Summary["many_events_per_s"] = perSec
	r.manyUpdatesLines(size, t)
	r.manyBatchedLine(size, l.events, t)
	r.rep.add(Line{What: "7c. the same runs' kernel time and page faults (in the bench's process: the emulator's serving with the engine's)", Size: size,
		Engine: t.engK.String() + apartText("; the engine apart (the whole child): ", t.apartK), Versus: "DuckDB alone: " + t.rawK.String() + apartText("; DuckDB alone apart (the whole child): ", t.rawApartK),
		Ratio: float64(median(faultCounts(t.engK))) / float64(median(faultCounts(t.rawK))), CPURatio: math.NaN()})
	r.manyLogCallLines(f, l, t, user, size)
	r.rep.add(Line{What: "7c. file bytes after the catch-up", Size: fmt.Sprintf("%d tables, after the bootstrap: engine %s, DuckDB alone %s", len(f.ids),
		mib(float64(fileSize(f.engine))), mib(float64(fileSize(f.raw)))),
		Engine: fmt.Sprintf("merges: %s; from the manifest: %s", mib(float64(t.engBytes)), mib(float64(userBytes))),
		Versus: "DuckDB alone's merges: " + mib(float64(t.rawBytes)), Ratio: float64(t.engBytes) / float64(t.rawBytes), CPURatio: math.NaN()})
	return nil
}

// logTurns are the measured catch-ups of the log, run by run: the engine
// in the bench's process, DuckDB alone, and each in a process of its own.
type logTurns struct {
	eng, net, raw, apart Costs
	batched              Costs // DuckDB alone batched as the walk (rawWay)
	rawApart             Costs // DuckDB alone a transaction a page, in a process of its own
	engK, rawK, apartK   kernels
	rawApartK            kernels
	gcs                  []gcCost
	serving              []time.Duration // the emulator's CPU while the engine apart ran
	rate                 Quantity
	last                 syncRun // the in-process engine's last run
	engBytes, rawBytes   int64   // the files' sizes after the catch-up, closed
}

// manyLogTurns runs the catch-up r.cfg.Repeat times each way, each side
// going first in turn (the two in processes of their own as one side, in
// turn between them: apartTurn).
func (r *run) manyLogTurns(ctx context.Context, f *manyFixture, l *manyLogFixture) (*logTurns, error) {
	t := &logTurns{}
	for i := range r.cfg.Repeat {
		steps := []func() error{
			func() error {
				k, g := kernelNow(), gcNow()
				defer func() { t.engK, t.gcs = append(t.engK, kernelNow().sub(k)), append(t.gcs, gcNow().sub(g)) }()
				run, err := r.manyCatchUp(ctx, f, l, r.eo, &t.engBytes)
				// The whole sync: its API calls and downloads on loopback
				// overlap the engine's work (a page's merges are fetched
				// ahead), so subtracting their sum would flatter it.
				t.eng.Add(run.Total)
				t.net.Add(run.Network())
				t.rate.Add(float64(run.Result.EventsSeen) / run.Total.Wall.Seconds())
				t.last = run
				return err
			},
			func() error {
				d, k, err := r.rawCatchUp(ctx, f, l, "many-log-raw", aPage, &t.rawBytes)
				t.raw.Add(d)
				t.rawK = append(t.rawK, k)
				return err
			},
			func() error {
				var size int64
				d, _, err := r.rawCatchUp(ctx, f, l, "many-log-raw-batched", batchedAsTheWalk, &size)
				t.batched.Add(d)
				return err
			},
		}
		if r.cfg.Exe != "" {
			steps = append(steps, func() error { return r.apartTurn(ctx, f, l, t, i) })
		}
		steps = append(steps[i%len(steps):], steps[:i%len(steps)]...)
		for _, s := range steps {
			if err := s(); err != nil {
				return nil, err
			}
		}
		r.logf("many catch-up, run %d: engine %s (API calls and downloads within it, %s in all; %s; %s), DuckDB alone %s (%s), batched as the walk %s", i+1,
			secs(t.eng.Wall.Runs[i]), secs(t.net.Wall.Runs[i]), t.engK[i], t.gcs[i], secs(t.raw.Wall.Runs[i]), t.rawK[i], secs(t.batched.Wall.Runs[i]))
		if len(t.apart.Wall.Runs) > i {
			r.logf("many catch-up, run %d, each in a process of its own: the engine %s wall, %s of its CPU (%s), the emulator's serving %s; DuckDB alone %s (%s)", i+1,
				secs(t.apart.Wall.Runs[i]), secs(t.apart.CPU.Runs[i]), t.apartK[i], secs(t.serving[i]), secs(t.rawApart.Wall.Runs[i]), t.rawApartK[i])
		}
	}
	return t, nil
}

// apartTurn runs the catch-up in processes of their own, the engine and
// DuckDB alone, run i's first the one that did not go first in run i-1.
func (r *run) apartTurn(ctx context.Context, f *manyFixture, l *manyLogFixture, t *logTurns, i int) error {
	return inTurns(i, func() error {
		c, k, s, err := r.manyCatchUpApart(ctx, f, l, i == 0)
		t.apart.Add(c)
		t.apartK, t.serving = append(t.apartK, k), append(t.serving, s)
		return err
	}, func() error {
		c, k, err := r.rawCatchUpApart(ctx, f, l)
		t.rawApart.Add(c)
		t.rawApartK = append(t.rawApartK, k)
		return err
	})
}

// manyLogCallLines reports the catch-up's API calls and its wall time
// under Ploti's rate limits.
func (r *run) manyLogCallLines(f *manyFixture, l *manyLogFixture, t *logTurns, user syncRun, size string) {
	calls := user.CallCount()
	cpv := float64(calls) / float64(l.updates)
	walked := t.last.CallCount()
	// A sync asks whether stale datasets' sources were checked since only
	// once their rows have rested an hour (replica.recheckStale: a datasets
	// list, 200 a page): calls of a sync, never of its state-only events,
	// counted apart should one be made.
	other := walked - t.last.Calls["events"] - t.last.Calls["version"] - t.last.Calls["datasets"]
	r.rep.target(Line{What: "7c. API calls per version the catch-up brings, rate limits on", Size: fmt.Sprintf("%d versions, %d state-only events", l.updates, l.events-l.updates),
		Engine: fmt.Sprintf("%s; %d datasets loaded from the manifest, %d merged", callText(user.Calls), user.Result.SnapshotsLoaded, user.Result.ChangesMerged),
		Versus: fmt.Sprintf("limits off (a merge each): %s; calls for state-only events: %d (the stale datasets rechecked after the walk: %d datasets pages)", callText(t.last.Calls), other, t.last.Calls["datasets"]),
		Ratio:  cpv, CPURatio: math.NaN()}, 1.0, true)
	r.rep.Summary["calls_per_version"] = cpv
	limited := user.Total.Wall.Seconds()
	r.rep.target(Line{What: "7c. the catch-up's wall time under Ploti's rate limits, over the link, seconds", Size: size,
		Engine: fmt.Sprintf("%s (%d API calls; the limiter alone lets them take %s)", secs(user.Total.Wall), calls, secs(limiterWait(user.Calls))),
		Versus: fmt.Sprintf("with the limits off, on loopback: %s; a merge each under the limits would wait at least %s (the client's limiter alone, %d calls)",
			secs(t.eng.Wall.Median()), secs(limiterWait(t.last.Calls)), walked),
		Ratio: limited, CPURatio: math.NaN()}, 300, true)
	r.rep.Summary["many_limited_catchup_s"] = limited
}

// rawCatchUp applies the log's files with DuckDB alone to a copy of its
// bootstrapped file: its cost, kernel time and page faults, and the
// file's size after.
func (r *run) rawCatchUp(ctx context.Context, f *manyFixture, l *manyLogFixture, name string, way rawWay, size *int64) (cost, kernel, error) {
	p := r.path(name)
	defer removeDB(p)
	if err := copyDB(f.raw, p); err != nil {
		return cost{}, kernel{}, err
	}
	k := kernelNow()
	d, err := rawMergePages(ctx, p, l.pages, way, r.eo)
	k = kernelNow().sub(k)
	*size = fileSize(p)
	return d, k, err
}

// manyLogWarmUp applies the log's files once with DuckDB alone, untimed,
// before the measured runs. The catch-up holds ~6 GB at its peak at 2,000
// datasets (DuckDB's fresh blocks of every table a checkpoint's commits
// append to, both ways), and on a VM whose host backs memory as the guest
// first touches it, the first run to reach that far paid ~12 µs of kernel
// time a page fault where the next paid ~4 (docs/bench-history.md, "The
// catch-up's page faults"): without this, whichever side ran first was
// slower by up to 17 s of kernel time.
func (r *run) manyLogWarmUp(ctx context.Context, f *manyFixture, l *manyLogFixture) error {
	var size int64
	d, k, err := r.rawCatchUp(ctx, f, l, "many-log-warm-up", aPage, &size)
	if err != nil {
		return err
	}
	r.logf("many catch-up, warm-up (DuckDB alone, not measured): %s (%s)", secs(d.Wall), k)
	return nil
}

// faultCounts are the runs' page faults.
func faultCounts(ks kernels) []float64 {
	out := make([]float64, len(ks))
	for i, k := range ks {
		out[i] = float64(k.Faults)
	}
	return out
}

// manyCatchUp syncs a copy of the bootstrapped file with the log and
// checks that it merged every update.
func (r *run) manyCatchUp(ctx context.Context, f *manyFixture, l *manyLogFixture, eo engineOpts, size *int64) (syncRun, error) {
	p := r.path("many-log-engine")
	defer removeDB(p)
	if _, err := copyEngineDB(ctx, f.engine, p); err != nil {
		return syncRun{}, err
	}
	run, err := syncWith(ctx, f.em.URL(), f.em.APIKey(), f.sub, p, eo)
	*size = fileSize(p)
	if err == nil && (run.Result.EventsSeen != l.events || len(run.Result.Failed) > 0) {
		err = fmt.Errorf("catch-up saw %d of %d events, %d failed: %w", run.Result.EventsSeen, l.events, len(run.Result.Failed), errMismatch)
	}
	if err == nil {
		err = r.checkHistoryRecorded(ctx, l, p, !eo.RateLimit)
	}
	return run, err
}

// manyUpdatesLines reports the catch-up against DuckDB alone applying the
// same files. The engine in a process of its own, as users run it, carries
// the target (decision 59), against DuckDB alone in a process of its own
// too (rawCatchUpApart): in the bench's process the engine shares a Go
// runtime and an address space with the emulator, which holds and serves
// every dataset's files (Go's collector's share is shown beside it).
// Without a binary to run, the in-process runs carry it.
func (r *run) manyUpdatesLines(size string, t *logTurns) {
	versus := "DuckDB alone, a transaction a page: " + t.raw.String()
	ratio, cpu := ratios(t.eng, t.raw)
	in := Line{What: "7c. the same against DuckDB alone, the engine in the bench's process (its loopback API calls and downloads included)", Size: size,
		Engine: fmt.Sprintf("%s; Go's collector: %s", t.eng.String(), gcText(t.gcs)), Versus: versus, Ratio: ratio, CPURatio: cpu}
	if len(t.apart.Wall.Runs) == 0 {
		r.rep.target(in, 1.3, true)
		r.rep.Summary["many_updates_vs_raw"] = ratio
		return
	}
	r.rep.add(in)
	apartVsInProcess, _ := ratios(t.apart, t.raw)
	ratio, cpu = ratios(t.apart, t.rawApart)
	r.rep.target(Line{What: "7c. the same, each in a process of its own: the engine as users run it (the emulator serving from the bench's, on the same two cores), DuckDB alone a transaction a page",
		Size:   size,
		Engine: fmt.Sprintf("%s (the engine's process alone); the emulator's serving meanwhile: cpu %s", t.apart.String(), secs(median(t.serving))),
		Versus: fmt.Sprintf("DuckDB alone in a process of its own: %s; the engine apart against DuckDB alone in the bench's process: %.2f",
			t.rawApart.String(), apartVsInProcess),
		Ratio: ratio, CPURatio: cpu}, 1.3, true)
	r.rep.Summary["many_updates_vs_raw"] = ratio
}

// apartText is the child processes' kernel figures after label, if any ran.
func apartText(label string, ks kernels) string {
	if len(ks) == 0 {
		return ""
	}
	return label + ks.String()
}

// manyCatchUpApart runs the same catch-up with the engine in a process of
// its own, the emulator serving it from the bench's: the child's CPU is
// the engine's alone (its fetchers and downloads included), the bench's
// meanwhile (serving) is the emulator's, which a real server spends
// elsewhere. On two cores the two still share the machine, so the wall
// time is not freed of the serving.
func (r *run) manyCatchUpApart(ctx context.Context, f *manyFixture, l *manyLogFixture, first bool) (c cost, k kernel, serving time.Duration, err error) {
	p := r.path("many-log-apart")
	defer removeDB(p)
	if _, err := copyEngineDB(ctx, f.engine, p); err != nil {
		return c, k, 0, err
	}
	settle()
	serving = cpuTime()
	prof := ""
	if r.cfg.CPUProfile != "" && first {
		prof = r.cfg.CPUProfile + ".catchup"
		r.logf("many catch-up apart: its first run under the CPU profiler (%s)", prof)
	}
	c, k, events, err := r.childSync(ctx, childJob{APIURL: f.em.URL(), APIKey: f.em.APIKey(), Sub: f.sub, Path: p,
		Threads: r.eo.Threads, MemoryLimit: r.eo.MemoryLimit, CPUProfile: prof, History: r.eo.History})
	serving = cpuTime() - serving
	if err == nil && events != l.events {
		err = fmt.Errorf("catch-up in a child saw %d of %d events: %w", events, l.events, errMismatch)
	}
	if err == nil {
		err = r.checkHistoryRecorded(ctx, l, p, true)
	}
	return c, k, serving, err
}

// limiterWait is the least time the client's rate limiter lets calls
// take: every call beyond the burst waits for a token.
func limiterWait(calls map[string]int) time.Duration {
	all, heavy := 0, calls["manifest"]
	for _, n := range calls {
		all += n
	}
	perMin := func(n, rate int) float64 { return float64(max(0, n-max(1, rate/6))) / (float64(rate) / 60) }
	return time.Duration(max(perMin(all, fetch.DefaultCallsPerMinute), perMin(heavy, fetch.DefaultHeavyCallsPerMinute)) * float64(time.Second))
}
