package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
)

// bigDataset is one permits dataset of n rows on the emulator, with its
// own subscription, and the files that hold its latest state in the
// engine's format and in DuckDB's alone.
type bigDataset struct {
	em       *emulator.Emulator
	id, sub  string
	table    string
	n        int64
	version  int
	engine   string   // a closed replica file at version
	raw      string   // a closed plain DuckDB file at version
	files    []string // the first version's snapshot parts
	history  []churn
	parquetB int64
}

// mergeStep is a version published for a merge: its release and changes file.
type mergeStep struct {
	rel     emulator.Release
	changes string
	f       float64
}

// snapshots measures, for each size, the snapshot load; for the largest
// also the merges, the peak memory and the file size.
func (r *run) snapshots(ctx context.Context) error {
	if !r.want("load") && !r.want("memory") && !r.want("file") && !r.want("publish") {
		return nil
	}
	em, err := r.newEmulator("emulator-snapshots", emulator.Options{})
	if err != nil {
		return err
	}
	defer closeEmulator(em)
	for i, n := range r.cfg.Rows {
		b, err := r.newBig(ctx, em, n)
		if err != nil {
			return err
		}
		if r.want("load") {
			if err := r.load(ctx, b); err != nil {
				return err
			}
		}
		if i == len(r.cfg.Rows)-1 {
			for _, step := range []struct {
				name string
				fn   func(context.Context, *bigDataset) error
			}{{"merge", r.merges}, {"history", r.historyMerge}, {"publish", r.publish}, {"memory", r.memory}, {"file", r.fileGrowth}} {
				if !r.want(step.name) {
					continue
				}
				if err := step.fn(ctx, b); err != nil {
					return err
				}
			}
		}
		removeDB(b.engine)
		removeDB(b.raw)
	}
	return nil
}

// newBig adds a permits dataset of n rows, with a subscription of its
// own, and publishes its first version.
func (r *run) newBig(ctx context.Context, em *emulator.Emulator, n int64) (*bigDataset, error) {
	id := "ds_permits_" + rows(n)
	sub, err := addPermits(em, id)
	if err != nil {
		return nil, err
	}
	r.logf("emulator: building %s rows of %s", rows(n), id)
	start := time.Now()
	if _, err := em.PublishQuery(ctx, id, permitsSQL(n, nil)); err != nil {
		return nil, err
	}
	r.logf("emulator: built in %s", time.Since(start).Round(time.Millisecond))
	b := &bigDataset{em: em, id: id, sub: sub, table: storage.TableName(id), n: n, version: 1}
	files, err := em.SnapshotFiles(ctx, id, 1)
	if err != nil {
		return nil, err
	}
	b.files = files
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			b.parquetB += st.Size()
		}
	}
	return b, nil
}

// loadEngineOnce bootstraps a replica of the dataset into a fresh file.
func (r *run) loadEngineOnce(ctx context.Context, b *bigDataset, path string, stream bool) (syncRun, error) {
	eo := r.eo
	eo.Stream = stream
	run, err := engineSync(ctx, b.em, b.sub, path, eo)
	if err == nil && run.Result.SnapshotsLoaded != 1 {
		err = fmt.Errorf("bootstrap of %s loaded %d snapshots, want 1: %w", b.id, run.Result.SnapshotsLoaded, errMismatch)
	}
	return run, err
}

// loadRawOnce loads the dataset's first snapshot with DuckDB alone.
func (r *run) loadRawOnce(ctx context.Context, b *bigDataset, path string) (cost, error) {
	return rawLoad(ctx, path, b.table, b.files, r.eo)
}

// load measures a replica bootstrap of the dataset's first version against
// DuckDB's CREATE TABLE … AS SELECT * FROM read_parquet of the same files.
func (r *run) load(ctx context.Context, b *bigDataset) error {
	var eng, raw, dl, api Costs
	for i := range r.cfg.Repeat {
		ep, rp := r.path("load-engine"), r.path("load-raw")
		engineRun := func() error {
			run, err := r.loadEngineOnce(ctx, b, ep, false)
			eng.Add(run.Engine())
			dl.Add(run.Download)
			api.Add(run.API)
			return err
		}
		rawRun := func() error {
			d, err := r.loadRawOnce(ctx, b, rp)
			raw.Add(d)
			return err
		}
		if err := inTurns(i, engineRun, rawRun); err != nil {
			return err
		}
		r.logf("load %s, run %d: engine %s (+ download %s, API calls %s), DuckDB alone %s", rows(b.n), i+1,
			secs(eng.Wall.Runs[i]), secs(dl.Wall.Runs[i]), secs(api.Wall.Runs[i]), secs(raw.Wall.Runs[i]))
		if i < r.cfg.Repeat-1 {
			removeDB(ep)
			removeDB(rp)
		} else {
			b.engine, b.raw = ep, rp
		}
	}
	if err := checkRows(ctx, b.engine, b.table, b.n); err != nil {
		return err
	}
	ratio, cpu := ratios(eng, raw)
	size := fmt.Sprintf("%s rows, %s Parquet", rows(b.n), mib(float64(b.parquetB)))
	line := Line{What: "1. snapshot load (replica bootstrap, download and API calls excluded)", Size: size, Engine: eng.String(),
		Versus: "DuckDB CTAS from read_parquet: " + raw.String(), Ratio: ratio, CPURatio: cpu}
	if b.n == slices.Max(r.cfg.Rows) { // the target is at the largest size
		r.rep.target(line, 1.10, true)
		r.rep.Summary["load_ratio"] = ratio
	} else {
		r.rep.add(line)
	}
	r.rep.add(Line{What: "1. download and API calls on loopback (reported apart)", Size: mib(float64(b.parquetB)),
		Engine: fmt.Sprintf("download %s; API calls %s", dl.Wall.String(), api.Wall.String()),
		Versus: fmt.Sprintf("%.0f MB/s", float64(b.parquetB)/1e6/dl.Wall.Seconds()), Ratio: math.NaN()})
	if b.n == slices.Max(r.cfg.Rows) {
		return r.wireLoad(ctx, b, raw)
	}
	return nil
}

// wireLoad measures the bootstrap of the dataset over the imitated link,
// download and API calls included, against the least any bootstrap
// costs: max(bytes / bandwidth, DuckDB alone's CTAS of the same files,
// raw).
func (r *run) wireLoad(ctx context.Context, b *bigDataset, raw Costs) error {
	wire := r.cfg.Wire
	var wired Costs
	var bytes int64
	for i := range r.cfg.Repeat {
		p := r.path("load-wire")
		b.em.SetWire(wire)
		run, err := r.loadEngineOnce(ctx, b, p, true)
		b.em.SetWire(emulator.Wire{})
		removeDB(p)
		if err != nil {
			return err
		}
		wired.Add(run.Total)
		bytes = run.Bytes
		r.logf("load %s over the wire, run %d: %s (download %s)", rows(b.n), i+1, secs(run.Total.Wall), secs(run.Download.Wall))
	}
	wireBound := time.Duration(float64(bytes) / float64(wire.Bandwidth) * float64(time.Second))
	bound := max(wireBound, raw.Wall.Median())
	ratio := wired.Wall.Seconds() / bound.Seconds()
	r.rep.target(Line{What: fmt.Sprintf("1. bootstrap over a %s link (%s a request), download included", mbps(wire.Bandwidth), wire.Latency),
		Size:   fmt.Sprintf("%s rows, %s", rows(b.n), mib(float64(bytes))),
		Engine: wired.String(),
		Versus: fmt.Sprintf("max(bytes / bandwidth %s, DuckDB CTAS %s)", secs(wireBound), raw.Wall.String()),
		Ratio:  ratio, CPURatio: math.NaN()}, 1.15, true)
	r.rep.Summary["wire_bootstrap_ratio"] = ratio
	return nil
}

func checkRows(ctx context.Context, path, table string, want int64) error {
	got, err := tableRows(ctx, path, table)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s in %s has %d rows, want %d: %w", table, path, got, want, errMismatch)
	}
	return nil
}

// merges publishes one version per merge size (each from the one before)
// and measures, from the file at the previous version: the replica's
// merge of its changes file, the engine's full reload of the same version,
// and DuckDB's bare DELETE and INSERT of the same file.
func (r *run) merges(ctx context.Context, b *bigDataset) error {
	for _, f := range r.cfg.Merges {
		if err := r.mergeAt(ctx, b, f); err != nil {
			return err
		}
	}
	return nil
}

// mergeCosts are one fraction's measures over the repeats.
type mergeCosts struct {
	eng, raw, rawCk, reload, dl Costs
	readBack                    Stat
}

// mergeAt measures the merge of the next version, which changes a
// fraction f of b's rows, against DuckDB alone and a reload, and leaves b
// at that version.
func (r *run) mergeAt(ctx context.Context, b *bigDataset, f float64) error {
	st, err := r.nextVersion(ctx, b, f)
	if err != nil {
		return err
	}
	rel := st.rel
	var c mergeCosts
	var nextE, nextR string
	for i := range r.cfg.Repeat {
		ep, rp, err := r.mergeRun(ctx, b, st, f, i, &c)
		if err != nil {
			return err
		}
		if i < r.cfg.Repeat-1 {
			removeDB(ep)
			removeDB(rp)
		} else {
			nextE, nextR = ep, rp
		}
	}
	for _, p := range []string{nextE, nextR} {
		if err := checkRows(ctx, p, b.table, rel.RowCount); err != nil {
			return err
		}
	}
	removeDB(b.engine)
	removeDB(b.raw)
	b.engine, b.raw, b.version = nextE, nextR, rel.Version
	r.reportMerge(fmt.Sprintf("%s of %s rows: +%d ~%d −%d", pct(f), rows(b.n), rel.Added, rel.Changed, rel.Removed), f, b.n, &c)
	return nil
}

// mergeRun is run i of a merge: copies of b's files, the engine's merge,
// DuckDB alone's with either checkpoint setting, and a reload. It returns
// the engine's and DuckDB alone's files after the merge.
func (r *run) mergeRun(ctx context.Context, b *bigDataset, st *mergeStep, f float64, i int, c *mergeCosts) (ep, rp string, err error) {
	ep, rp, kp, lp := r.path("merge-engine"), r.path("merge-raw"), r.path("merge-raw-ckpt"), r.path("merge-reload")
	for _, cp := range [][2]string{{b.raw, rp}, {b.raw, kp}} {
		if err := copyDB(cp[0], cp[1]); err != nil {
			return "", "", err
		}
	}
	for _, cp := range [][2]string{{b.engine, ep}, {b.engine, lp}} {
		d, err := copyEngineDB(ctx, cp[0], cp[1])
		if err != nil {
			return "", "", err
		}
		c.readBack.Add(d)
	}
	// The engine and DuckDB alone take turns at going first, as in
	// the load: whichever runs first after the copies met a slower
	// disk in some runs.
	steps := []struct {
		kind, path string
		into       *Costs
	}{{"engine", ep, &c.eng}, {"duckdb", rp, &c.raw}, {"duckdb-ckpt", kp, &c.rawCk}}
	if i%2 == 1 {
		slices.Reverse(steps)
	}
	for _, s := range steps {
		d, down, err := r.mergeOnce(ctx, b, st, s.kind, s.path)
		if err != nil {
			return "", "", err
		}
		s.into.Add(d)
		if s.kind == "engine" {
			c.dl.Add(down)
		}
	}
	removeDB(kp)
	d, _, err := r.mergeOnce(ctx, b, st, "reload", lp)
	if err != nil {
		return "", "", err
	}
	c.reload.Add(d)
	r.logf("merge %s of %s, run %d: engine %s (+ API calls and download %s), reload %s, DuckDB alone %s (%s with the engine's checkpoint_threshold)", pct(f), rows(b.n), i+1,
		secs(c.eng.Wall.Runs[i]), secs(c.dl.Wall.Runs[i]), secs(c.reload.Wall.Runs[i]), secs(c.raw.Wall.Runs[i]), secs(c.rawCk.Wall.Runs[i]))
	removeDB(lp)
	return ep, rp, nil
}

// reportMerge adds a fraction's lines; the 1% merge carries the targets.
func (r *run) reportMerge(size string, f float64, n int64, c *mergeCosts) {
	vsReload, cpuReload := ratios(c.eng, c.reload)
	vsRaw, cpuRaw := ratios(c.eng, c.raw)
	line := Line{What: "2a. changes merge vs full reload of the same version", Size: size, Engine: c.eng.String(),
		Versus: "engine reload: " + c.reload.String(), Ratio: vsReload, CPURatio: cpuReload}
	if f == 0.01 {
		r.rep.target(line, 0.15, true)
		r.rep.Summary["merge_vs_reload"] = vsReload
	} else {
		r.rep.add(line)
	}
	line = Line{What: "2b. changes merge vs DuckDB's DELETE + INSERT", Size: size, Engine: c.eng.String(),
		Versus: "DuckDB alone: " + c.raw.String(), Ratio: vsRaw, CPURatio: cpuRaw}
	if f == 0.01 {
		r.rep.target(line, 1.1, true)
		r.rep.Summary["merge_vs_raw"] = vsRaw
		// The wall time's difference is the key; the CPU time's, which
		// moves less on a machine shared with other work, goes beside it.
		fixed, fixedCPU := c.eng.Wall.Median()-c.raw.Wall.Median(), c.eng.CPU.Median()-c.raw.CPU.Median()
		r.rep.add(Line{What: "2b. the engine's time above DuckDB alone's statements (its rules: the file's checks, the change log, the registry and state around them)",
			Size: size, Engine: fmt.Sprintf("%.0f ms; cpu %.0f ms", fixed.Seconds()*1e3, fixedCPU.Seconds()*1e3), Ratio: math.NaN()})
		r.rep.Summary["merge_fixed_ms"] = fixed.Seconds() * 1e3
		r.rep.add(Line{What: "2. API calls and download on loopback (reported apart)", Size: size, Engine: c.dl.Wall.String(), Ratio: math.NaN()})
		r.rep.add(Line{What: "2. not in the merge's time: the whole read of a file the engine has not seen in its state (decision 31; a copy, not its own last close)",
			Size: fmt.Sprintf("%s rows", rows(n)), Engine: c.readBack.String(), Ratio: math.NaN()})
	} else {
		r.rep.add(line)
	}
	// The engine checkpoints a large commit as it commits (storage.
	// BulkCommit), where DuckDB's default writes the WAL and
	// checkpoints at the close: the same setting for DuckDB alone shows
	// what of the ratio is that choice.
	vsCk, cpuCk := ratios(c.eng, c.rawCk)
	r.rep.add(Line{What: "2b. the same, DuckDB alone with checkpoint_threshold at the engine's bulk commit (" + bulkThreshold + ")", Size: size, Engine: c.eng.String(),
		Versus: "DuckDB alone: " + c.rawCk.String(), Ratio: vsCk, CPURatio: cpuCk})
}

// bulkThreshold is duckdb.BulkCommit as DuckDB's setting: a merge into a
// file whose WAL is empty is checkpointed as it commits past it, in the
// engine as in DuckDB alone with it.
var bulkThreshold = fmt.Sprintf("%dMB", duckdb.BulkCommit/1_000_000)

// nextVersion publishes the dataset's next version with a fraction f of
// its rows changed (a half changed, a quarter added, a quarter removed).
func (r *run) nextVersion(ctx context.Context, b *bigDataset, f float64) (*mergeStep, error) {
	b.history = append(b.history, churn{f})
	r.logf("emulator: building the next version of %s (%s changed)", b.id, pct(f))
	start := time.Now()
	rel, err := b.em.PublishQuery(ctx, b.id, permitsSQL(b.n, b.history))
	if err != nil {
		return nil, err
	}
	r.logf("emulator: built version %d in %s: %d added, %d changed, %d removed", rel.Version, time.Since(start).Round(time.Millisecond), rel.Added, rel.Changed, rel.Removed)
	if rel.ResyncRequired || rel.Held {
		return nil, fmt.Errorf("version %d of %s is a resync or held: %w", rel.Version, b.id, errMismatch)
	}
	changes, err := b.em.ChangesFile(ctx, b.id, rel.Version)
	if err != nil {
		return nil, err
	}
	return &mergeStep{rel: rel, changes: changes, f: f}, nil
}

// mergeOnce brings the file at path (a copy of the previous version's
// file, the engine's or DuckDB's alone) to the step's version: "engine" by
// a replica sync (API calls and download excluded from the time, and
// returned apart),
// "reload" by the engine's full reload, "duckdb" by DuckDB's bare DELETE
// and INSERT of the changes file.
func (r *run) mergeOnce(ctx context.Context, b *bigDataset, st *mergeStep, kind, path string) (cost, cost, error) {
	switch kind {
	case "engine":
		run, err := engineSync(ctx, b.em, b.sub, path, r.eo)
		if err == nil && (run.Result.ChangesMerged != 1 || run.Result.SnapshotsLoaded != 0) {
			err = fmt.Errorf("sync of version %d merged %d and loaded %d, want one merge: %w", st.rel.Version, run.Result.ChangesMerged, run.Result.SnapshotsLoaded, errMismatch)
		}
		return run.Engine(), run.Network(), err
	case "reload":
		d, err := engineReload(ctx, b.em, path, b.id, st.rel.Version, 1, r.eo, nil)
		return d, cost{}, err
	}
	var setup []string
	if kind == "duckdb-ckpt" {
		setup = append(setup, "SET checkpoint_threshold = '"+bulkThreshold+"'")
	}
	d, err := rawMergesIn(ctx, path, [][2]string{{b.table, st.changes}}, r.eo, false, setup...)
	return d, cost{}, err
}

func pct(f float64) string {
	return fmt.Sprintf("%g%%", f*100)
}

// fileGrowth bootstraps a fresh file, then reloads the same dataset
// Config.Reloads times in one session, and compares the file's sizes.
func (r *run) fileGrowth(ctx context.Context, b *bigDataset) error {
	p := r.path("file-size")
	defer removeDB(p)
	if _, err := engineSync(ctx, b.em, b.sub, p, r.eo); err != nil {
		return err
	}
	s0 := fileSize(p)
	r.logf("file size after the bootstrap: %s; reloading %d times", mib(float64(s0)), r.cfg.Reloads)
	var sizes []string
	peak := s0
	if _, err := engineReload(ctx, b.em, p, b.id, b.version, r.cfg.Reloads, r.eo, func(i int) {
		s := fileSize(p)
		peak = max(peak, s)
		sizes = append(sizes, fmt.Sprintf("%.0f", float64(s)/(1<<20)))
	}); err != nil {
		return err
	}
	s1 := fileSize(p)
	peak = max(peak, s1)
	growth := float64(peak) / float64(s0)
	// A swap keeps the replaced table until it commits, so the file must
	// hold two tables at its peak: bounded means about twice the first.
	r.rep.target(Line{What: "5. file size: largest over reloads of the same dataset, one open session", Size: fmt.Sprintf("%s rows, %d reloads", rows(b.n), r.cfg.Reloads),
		Engine: fmt.Sprintf("%s; %s after closing", mib(float64(peak)), mib(float64(s1))), Versus: "after the bootstrap: " + mib(float64(s0)), Ratio: growth}, 2.1, true)
	r.rep.note("file size in MiB after each reload (in one session): %s; after closing: %.0f", strings.Join(sizes, ", "), float64(s1)/(1<<20))
	r.rep.Summary["file_growth"] = growth
	return nil
}
