package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
)

// staleRound is how far the clock moves for each round of stale events:
// the emulator sends feed.dataset.stale a day past a missed nextCheckBy.
const staleRound = 24*time.Hour + 2*time.Minute

// maxStaleRounds keeps every event inside the 90 days of retention, so
// that a cold cursor still reads the whole log.
const maxStaleRounds = 80

// catchUp measures the walk of the log: (a) state-only and skipped events
// from a cold cursor, (b) small updates merged one after another.
func (r *run) catchUp(ctx context.Context) error {
	if !r.want("log") && !r.want("updates") {
		return nil
	}
	em, err := r.newEmulator("emulator-log", emulator.Options{CheckInterval: time.Minute})
	if err != nil {
		return err
	}
	defer closeEmulator(em)
	if r.want("log") {
		if err := r.stateOnly(ctx, em); err != nil {
			return err
		}
	}
	if !r.want("updates") {
		return nil
	}
	return r.smallUpdates(ctx, em)
}

// logFixture is a replica file holding the latest version of every
// dataset of a subscription whose log is full of state-only events.
type logFixture struct {
	em       *emulator.Emulator
	sub      string
	base     string // closed replica file, caught up
	events   int    // events in the subscription's log
	datasets int
}

// buildLog builds a log of about events events over n tiny datasets (stale
// rounds, versions delayed by a hold then released) and a replica file
// caught up with it.
func (r *run) buildLog(ctx context.Context, em *emulator.Emulator, n, events int) (*logFixture, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ds_log_%02d", i+1)
		if err := em.AddDataset(emulator.DatasetSpec{ID: ids[i], Title: "Log " + ids[i], PlaceID: "fl-orange",
			KeyColumns: permitKey, Columns: permitColumns}); err != nil {
			return nil, err
		}
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Name: "log", DatasetIDs: ids})
	if err != nil {
		return nil, err
	}
	// Per dataset: added + resync_required(first_version), then cycles of
	// delayed + updated, and stale rounds.
	budget := max(events/n-2, 2)
	stale := min(maxStaleRounds, budget/2)
	cycles := (budget - stale + 1) / 2
	stale = min(maxStaleRounds, budget-2*cycles)
	r.logf("emulator: building a log of about %d events over %d datasets (%d delayed+released versions and %d stale rounds each)",
		n*(2+2*cycles+stale), n, cycles, stale)
	start := time.Now()
	for _, id := range ids {
		if _, err := em.PublishQuery(ctx, id, permitsSQL(5, nil)); err != nil {
			return nil, err
		}
	}
	for round := range max(cycles, stale) {
		for _, id := range ids {
			if round < cycles {
				if _, err := em.PublishQuery(ctx, id, permitsSQL(5, []churn{{float64(round%4+1) / 4}}), emulator.Hold("row_drop")); err != nil {
					return nil, err
				}
				if _, err := em.ReleaseHeld(id); err != nil {
					return nil, err
				}
			}
			if round < stale {
				if err := em.Check(id); err != nil {
					return nil, err
				}
			}
		}
		if round < stale {
			em.Advance(staleRound)
		}
	}
	f := &logFixture{em: em, sub: sub, base: r.path("log-base"), events: len(em.Events(sub)), datasets: n}
	r.logf("emulator: %d events in %s", f.events, time.Since(start).Round(time.Millisecond))
	if _, err := engineSync(ctx, em, sub, f.base, r.eo); err != nil {
		return nil, err
	}
	return f, nil
}

// walk syncs a copy of the fixture's file from a cold cursor: every event
// of the log is read again, and each is skipped or state-only.
func (r *run) walk(ctx context.Context, f *logFixture) (syncRun, error) {
	p := r.path("log-walk")
	defer removeDB(p)
	if _, err := copyEngineDB(ctx, f.base, p); err != nil {
		return syncRun{}, err
	}
	if err := coldCursor(ctx, p, emulator.Cursor(f.sub, 0)); err != nil {
		return syncRun{}, err
	}
	run, err := engineSync(ctx, f.em, f.sub, p, r.eo)
	if err != nil {
		return run, err
	}
	res := run.Result
	if res.EventsSeen != f.events || res.SnapshotsLoaded != 0 || res.ChangesMerged != 0 || res.Bootstrapped {
		return run, fmt.Errorf("cold walk saw %d of %d events, loaded %d, merged %d: %w", res.EventsSeen, f.events, res.SnapshotsLoaded, res.ChangesMerged, errMismatch)
	}
	return run, nil
}

// stateOnly measures the cold walk of a log of Config.Events events.
func (r *run) stateOnly(ctx context.Context, em *emulator.Emulator) error {
	f, err := r.buildLog(ctx, em, r.cfg.CatchUpDatasets, r.cfg.Events)
	if err != nil {
		return err
	}
	defer removeDB(f.base)
	var walk Costs
	var rate Quantity
	for i := range r.cfg.Repeat {
		run, err := r.walk(ctx, f)
		if err != nil {
			return err
		}
		res := run.Result
		// Reading the log is part of a catch-up: the pages' API calls stay
		// in the time (downloads there are none).
		w := run.Engine().add(run.API)
		walk.Add(w)
		rate.Add(float64(res.EventsSeen) / w.Wall.Seconds())
		r.logf("cold walk, run %d: %d events (%d applied, %d skipped) in %s", i+1, res.EventsSeen, res.EventsApplied, res.EventsSkipped, secs(w.Wall))
	}
	perSec := rate.Median()
	r.rep.target(Line{What: "3a. log catch-up from a cold cursor: state-only and skipped events", Size: fmt.Sprintf("%d events over %d datasets", f.events, f.datasets),
		Engine: walk.String(), Versus: "events a second: " + rate.Format(func(v float64) string { return fmt.Sprintf("%.0f", v) }), Ratio: perSec}, 2000, false)
	r.rep.Summary["events_per_s"] = perSec
	return nil
}

// coldCursor sets a replica file's stored cursor, as an operator would to
// replay the log.
func coldCursor(ctx context.Context, path, cursor string) error {
	db, err := duckdb.Open(ctx, path, storage.Options{})
	if err != nil {
		return err
	}
	err = db.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, cursor) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// updatesFixture is a subscription of n tables whose log holds small
// updates after the file's cursor, and the files to merge them into.
type updatesFixture struct {
	em       *emulator.Emulator
	sub      string
	base     string      // closed replica file at the first versions
	rawBase  string      // the same tables loaded by DuckDB alone
	merges   [][2]string // table and changes file of each update, in log order
	updates  int
	rowsEach float64 // changed rows per update, on average
	size     int64
	tables   int
}

// buildUpdates loads n tables of size rows, then publishes updates
// versions of about 100 changed rows each (round robin over the tables).
func (r *run) buildUpdates(ctx context.Context, em *emulator.Emulator, n int, size int64, updates int) (*updatesFixture, error) {
	f := &updatesFixture{em: em, base: r.path("updates-base"), rawBase: r.path("updates-raw-base"), updates: updates, size: size, tables: n}
	ids := make([]string, n)
	r.logf("emulator: building %d tables of %s rows", n, rows(size))
	start := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("ds_upd_%02d", i+1)
		if err := em.AddDataset(emulator.DatasetSpec{ID: ids[i], Title: "Updates " + ids[i], PlaceID: "fl-orange",
			KeyColumns: permitKey, Columns: permitColumns}); err != nil {
			return nil, err
		}
	}
	var err error
	if f.sub, err = em.CreateSubscription(emulator.SubscriptionSpec{Name: "updates", DatasetIDs: ids}); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := em.PublishQuery(ctx, id, permitsSQL(size, nil)); err != nil {
			return nil, err
		}
	}
	if _, err := engineSync(ctx, em, f.sub, f.base, r.eo); err != nil {
		return nil, err
	}
	for _, id := range ids {
		files, err := em.SnapshotFiles(ctx, id, 1)
		if err != nil {
			return nil, err
		}
		if _, err := rawLoad(ctx, f.rawBase, storage.TableName(id), files, r.eo); err != nil {
			return nil, err
		}
	}
	// About 100 changed rows: a half changed, a quarter added, a quarter removed.
	frac := 100 / float64(size)
	histories := make([][]churn, n)
	var changed int64
	for u := range updates {
		i := u % n
		histories[i] = append(histories[i], churn{frac})
		rel, err := em.PublishQuery(ctx, ids[i], permitsSQL(size, histories[i]))
		if err != nil {
			return nil, err
		}
		if rel.ResyncRequired || rel.Held {
			return nil, fmt.Errorf("update %d of %s is a resync or held: %w", rel.Version, ids[i], errMismatch)
		}
		file, err := em.ChangesFile(ctx, ids[i], rel.Version)
		if err != nil {
			return nil, err
		}
		f.merges = append(f.merges, [2]string{storage.TableName(ids[i]), file})
		changed += rel.Added + rel.Changed + rel.Removed
	}
	f.rowsEach = float64(changed) / float64(updates)
	r.logf("emulator: built in %s; %d updates, %.0f changed rows each on average", time.Since(start).Round(time.Millisecond), updates, f.rowsEach)
	return f, nil
}

// updatesOnce merges every update into a copy of the base file: "engine"
// by a replica sync (the time without downloads, which come back apart),
// "duckdb" by DuckDB's bare statements, one transaction per update,
// "duckdb-one" with the same statements in one transaction for all.
func (r *run) updatesOnce(ctx context.Context, f *updatesFixture, kind string) (cost, cost, error) {
	p := r.path("updates-" + kind)
	defer removeDB(p)
	if kind == "duckdb" || kind == "duckdb-one" {
		if err := copyDB(f.rawBase, p); err != nil {
			return cost{}, cost{}, err
		}
		d, err := rawMergesIn(ctx, p, f.merges, r.eo, kind == "duckdb-one")
		return d, cost{}, err
	}
	if _, err := copyEngineDB(ctx, f.base, p); err != nil {
		return cost{}, cost{}, err
	}
	run, err := engineSync(ctx, f.em, f.sub, p, r.eo)
	if err == nil && run.Result.ChangesMerged != f.updates {
		err = fmt.Errorf("sync merged %d of %d updates: %w", run.Result.ChangesMerged, f.updates, errMismatch)
	}
	return run.Engine(), run.Network(), err
}

// smallUpdates measures a sync that merges Config.Updates small updates
// against DuckDB applying the same changes files with bare statements.
func (r *run) smallUpdates(ctx context.Context, em *emulator.Emulator) error {
	f, err := r.buildUpdates(ctx, em, r.cfg.CatchUpDatasets, r.cfg.UpdateRows, r.cfg.Updates)
	if err != nil {
		return err
	}
	defer removeDB(f.base)
	defer removeDB(f.rawBase)
	var eng, raw, one, dl Costs
	var rate Quantity
	for i := range r.cfg.Repeat {
		kinds := []string{"engine", "duckdb", "duckdb-one"}
		if i%2 == 1 { // take turns at going first, as in the load
			slices.Reverse(kinds)
		}
		for _, kind := range kinds {
			d, down, err := r.updatesOnce(ctx, f, kind)
			if err != nil {
				return err
			}
			switch kind {
			case "engine":
				eng.Add(d)
				dl.Add(down)
				rate.Add(float64(f.updates) / d.Wall.Seconds())
			case "duckdb":
				raw.Add(d)
			default:
				one.Add(d)
			}
		}
		r.logf("small updates, run %d: engine %s (+ API calls and downloads %s), DuckDB alone %s, in one transaction %s", i+1,
			secs(eng.Wall.Runs[i]), secs(dl.Wall.Runs[i]), secs(raw.Wall.Runs[i]), secs(one.Wall.Runs[i]))
	}
	ratio, cpu := ratios(eng, raw)
	size := fmt.Sprintf("%d updates of ~%.0f rows on %s-row tables", f.updates, f.rowsEach, rows(f.size))
	engine := fmt.Sprintf("%s; %s updates/s", eng.String(), rate.Format(func(v float64) string { return fmt.Sprintf("%.0f", v) }))
	r.rep.target(Line{What: "3b. log catch-up: small updates, one merge each", Size: size, Engine: engine,
		Versus: "DuckDB alone, a transaction each: " + raw.String(), Ratio: ratio, CPURatio: cpu}, 1.5, true)
	// The engine merges small files in the page's transaction: DuckDB alone
	// with one commit for all is its bound.
	oneRatio, oneCPU := ratios(eng, one)
	r.rep.target(Line{What: "3b. the same, against one transaction for all", Size: size, Engine: engine,
		Versus: "DuckDB alone, one transaction: " + one.String(), Ratio: oneRatio, CPURatio: oneCPU}, 1.3, true)
	r.rep.Summary["updates_vs_raw_batch"] = oneRatio
	r.rep.add(Line{What: "3b. API calls and downloads of those updates (reported apart)", Size: fmt.Sprintf("%d files and their versions", 2*f.updates), Engine: dl.Wall.String(), Ratio: math.NaN()})
	r.rep.Summary["updates_vs_raw"] = ratio
	return nil
}
