package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// The scale section: the same steps at every size of Config.Rows (1M, 10M
// and 100M rows for the record), so that a table of the sizes side by side
// shows whether a step's cost grows with the rows and nothing else. It runs
// only when asked (--only scale): at 100M rows it takes hours on two
// cores, and the scratch folder (--dir) needs 70 GB or more free: the
// emulator's Parquet of three versions, both files and their copies, and
// what the emulator's DuckDB spills while it builds a version.

// scaleMerges are the fractions the scale section merges at every size.
var scaleMerges = []float64{0.01, 0.0001}

// scalePoint is one size's measures.
type scalePoint struct {
	n                  int64
	parquet            int64
	load, rawLoad      Costs
	merge, rawMerge    []Costs // by scaleMerges
	reload             Costs
	rss, rawRSS        float64 // peak RSS of a bootstrap, under the memory limit
	fileB, rawFileB    int64   // the files after the load
	mergedB, peakDiskB int64   // the engine's file after the merges; the scratch folder's largest
}

// scale runs the scale section.
func (r *run) scale(ctx context.Context) error {
	if !r.wantOnly("scale") {
		return nil
	}
	// The emulator builds each next version of a 100M-row table against
	// the last: with its default 4GB it spilled 27 GB to disk for the
	// first one, and with 60% of memory more than 45 GB for the next, so
	// here it keeps its tables compressed and may use more memory.
	opts := emulator.Options{CompressTables: true}
	if kb := memTotalKB(); kb > 0 {
		opts.DuckDBMemoryLimit = fmt.Sprintf("%dMiB", kb*6/10/1024)
	}
	em, err := r.newEmulator("emulator-scale", opts)
	if err != nil {
		return err
	}
	defer closeEmulator(em)
	var points []*scalePoint
	for _, n := range r.cfg.Rows {
		p, err := r.scaleAt(ctx, em, n)
		if err != nil {
			return err
		}
		points = append(points, p)
		r.reportScale(p)
	}
	r.scaleNotes(points)
	return nil
}

// wantOnly reports whether --only names the section (sections that run
// only when named).
func (r *run) wantOnly(section string) bool {
	return slices.Contains(r.cfg.Only, section)
}

// scaleAt measures one size: the bootstrap beside DuckDB's CTAS, the peak
// RSS of both in a process of their own under the memory limit, the
// merges beside DuckDB's DELETE + INSERT, and a reload.
func (r *run) scaleAt(ctx context.Context, em *emulator.Emulator, n int64) (*scalePoint, error) {
	b, err := r.newBig(ctx, em, n)
	if err != nil {
		return nil, err
	}
	defer func() { removeDB(b.engine); removeDB(b.raw) }()
	p := &scalePoint{n: n, parquet: b.parquetB, merge: make([]Costs, len(scaleMerges)), rawMerge: make([]Costs, len(scaleMerges))}
	// The RSS children first, while no other file of this size is on
	// disk: at 100M rows each file is about 10 GB.
	if err := r.scaleRSS(ctx, b, p); err != nil {
		return nil, err
	}
	if err := r.scaleLoad(ctx, b, p); err != nil {
		return nil, err
	}
	for i, f := range scaleMerges {
		if err := r.scaleMerge(ctx, b, f, &p.merge[i], &p.rawMerge[i], &p.reload, p); err != nil {
			return nil, err
		}
	}
	p.mergedB = fileSize(b.engine)
	return p, nil
}

// scaleLoad bootstraps the engine's file and DuckDB alone's, in turns.
func (r *run) scaleLoad(ctx context.Context, b *bigDataset, p *scalePoint) error {
	for i := range r.cfg.Repeat {
		removeDB(b.engine)
		removeDB(b.raw)
		b.engine, b.raw = r.path("scale-engine"), r.path("scale-raw")
		err := inTurns(i, func() error {
			run, err := r.loadEngineOnce(ctx, b, b.engine, false)
			p.load.Add(run.Engine())
			return err
		}, func() error {
			d, err := r.loadRawOnce(ctx, b, b.raw)
			p.rawLoad.Add(d)
			return err
		})
		if err != nil {
			return err
		}
		p.peakDiskB = max(p.peakDiskB, dirSize(r.dir))
		r.logf("scale %s, load %d: engine %s, DuckDB alone %s", rows(b.n), i+1, secs(p.load.Wall.Runs[i]), secs(p.rawLoad.Wall.Runs[i]))
	}
	p.fileB, p.rawFileB = fileSize(b.engine), fileSize(b.raw)
	return checkRows(ctx, b.engine, b.table, b.n)
}

// scaleRSS is the peak RSS of a process that bootstraps the dataset with
// the run's memory limit, and of one that loads it with DuckDB alone.
func (r *run) scaleRSS(ctx context.Context, b *bigDataset, p *scalePoint) error {
	if r.cfg.Exe == "" {
		return nil
	}
	limit := r.scaleLimit()
	path := r.path("scale-rss-engine")
	rss, err := r.child(ctx, childJob{Mode: "sync", APIURL: b.em.URL(), APIKey: b.em.APIKey(), Sub: b.sub, Path: path, Threads: r.cfg.Threads, MemoryLimit: limit})
	p.peakDiskB = max(p.peakDiskB, dirSize(r.dir))
	removeDB(path)
	if err != nil {
		return err
	}
	path = r.path("scale-rss-raw")
	raw, err := r.child(ctx, childJob{Mode: "raw-load", Path: path, Table: b.table, Files: b.files, Threads: r.cfg.Threads, MemoryLimit: limit})
	removeDB(path)
	p.rss, p.rawRSS = rss, raw
	return err
}

// scaleLimit is the memory limit of the scale section's RSS measure.
func (r *run) scaleLimit() string {
	if r.cfg.MemoryLimit != "" {
		return r.cfg.MemoryLimit
	}
	return MemoryLimit
}

// scaleMerge publishes the next version with a fraction f changed and
// merges it into copies of both files, then reloads the engine's; b moves
// to the version.
func (r *run) scaleMerge(ctx context.Context, b *bigDataset, f float64, eng, raw, reload *Costs, p *scalePoint) error {
	st, err := r.nextVersion(ctx, b, f)
	if err != nil {
		return err
	}
	for i := range r.cfg.Repeat {
		ep, rp := r.path("scale-merge-engine"), r.path("scale-merge-raw")
		if err := r.scaleFiles(ctx, b, ep, rp, i == r.cfg.Repeat-1); err != nil {
			return err
		}
		err := inTurns(i, func() error {
			d, _, err := r.mergeOnce(ctx, b, st, "engine", ep)
			eng.Add(d)
			return err
		}, func() error {
			d, _, err := r.mergeOnce(ctx, b, st, "duckdb", rp)
			raw.Add(d)
			return err
		})
		if err != nil {
			return err
		}
		p.peakDiskB = max(p.peakDiskB, dirSize(r.dir))
		r.logf("scale %s, %s merge %d: engine %s, DuckDB alone %s", rows(b.n), pct(f), i+1, secs(eng.Wall.Runs[i]), secs(raw.Wall.Runs[i]))
		removeDB(b.engine)
		removeDB(b.raw)
		b.engine, b.raw = ep, rp
	}
	b.version = st.rel.Version
	if f == scaleMerges[0] {
		// The reload of the same version, on the merged file itself (a
		// copy would be a third file of the size on disk): LoadVersion
		// loads and swaps whatever version the table holds.
		d, _, err := r.mergeOnce(ctx, b, st, "reload", b.engine)
		if err != nil {
			return err
		}
		reload.Add(d)
		p.peakDiskB = max(p.peakDiskB, dirSize(r.dir))
		r.logf("scale %s, reload of version %d: %s", rows(b.n), st.rel.Version, secs(d.Wall))
	}
	return checkRows(ctx, b.engine, b.table, st.rel.RowCount)
}

// scaleFiles makes the files a merge turn runs on: copies of both sides'
// files, or on the last turn the files themselves, moved (at 100M rows a
// copy is 10 GB, and the turn's result becomes the next step's file
// anyway).
func (r *run) scaleFiles(ctx context.Context, b *bigDataset, ep, rp string, last bool) error {
	if !last {
		if _, err := copyEngineDB(ctx, b.engine, ep); err != nil {
			return err
		}
		return copyDB(b.raw, rp)
	}
	for _, m := range [][2]string{{b.engine, ep}, {b.raw, rp}} {
		removeDB(m[1])
		for _, ext := range []string{"", ".wal", ".spool"} {
			if err := os.Rename(m[0]+ext, m[1]+ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	// A file at another path is one the engine has not read back (its
	// stamp names the path and the change time): read it now, untimed, as
	// copyEngineDB does.
	return readOnce(ctx, ep)
}

// reportScale adds one size's lines: each step beside DuckDB alone, with
// its time a million rows.
func (r *run) reportScale(p *scalePoint) {
	size := fmt.Sprintf("%s rows, %s Parquet", rows(p.n), mib(float64(p.parquet)))
	perM := func(c Costs) string {
		return fmt.Sprintf("%s; %.3f s per 1M rows", c.String(), c.Wall.Seconds()/(float64(p.n)/1e6))
	}
	ratio, cpu := ratios(p.load, p.rawLoad)
	r.rep.add(Line{What: "8. scale: snapshot load", Size: size, Engine: perM(p.load), Versus: "DuckDB CTAS: " + perM(p.rawLoad), Ratio: ratio, CPURatio: cpu})
	for i, f := range scaleMerges {
		ratio, cpu := ratios(p.merge[i], p.rawMerge[i])
		r.rep.add(Line{What: "8. scale: " + pct(f) + " changes merge", Size: size, Engine: p.merge[i].String(), Versus: "DuckDB alone: " + p.rawMerge[i].String(), Ratio: ratio, CPURatio: cpu})
	}
	ratio, cpu = ratios(p.reload, p.load)
	r.rep.add(Line{What: "8. scale: full reload of the next version", Size: size, Engine: perM(p.reload), Versus: "the bootstrap: " + p.load.String(), Ratio: ratio, CPURatio: cpu})
	if p.rss > 0 {
		r.rep.add(Line{What: "8. scale: peak RSS of a bootstrap, memory limit " + r.scaleLimit(), Size: size, Engine: mib(p.rss),
			Versus: "DuckDB alone: " + mib(p.rawRSS), Ratio: p.rss / p.rawRSS, CPURatio: math.NaN()})
	}
	r.rep.add(Line{What: "8. scale: disk", Size: size,
		Engine: fmt.Sprintf("file %s after the load, %s after the merges; scratch folder at most %s", mib(float64(p.fileB)), mib(float64(p.mergedB)), mib(float64(p.peakDiskB))),
		Versus: "DuckDB alone's file: " + mib(float64(p.rawFileB)), Ratio: float64(p.fileB) / float64(p.rawFileB), CPURatio: math.NaN()})
}

// scaleNotes puts the sizes side by side: each step's time a million rows
// (a merge's a changed row), so that a cost that grows faster than the
// table shows as a growing number.
func (r *run) scaleNotes(points []*scalePoint) {
	var b strings.Builder
	b.WriteString("scale, seconds per 1M rows of the table (merges: per 1M changed rows):")
	for _, p := range points {
		m := float64(p.n) / 1e6
		fmt.Fprintf(&b, " %s rows: load %.3f (DuckDB alone %.3f), reload %.3f", rows(p.n), p.load.Wall.Seconds()/m, p.rawLoad.Wall.Seconds()/m, p.reload.Wall.Seconds()/m)
		for i, f := range scaleMerges {
			changed := m * f // the rows the version adds, changes or removes
			fmt.Fprintf(&b, ", %s merge %.3f (DuckDB alone %.3f)", pct(f), p.merge[i].Wall.Seconds()/changed, p.rawMerge[i].Wall.Seconds()/changed)
		}
		fmt.Fprintf(&b, ", peak RSS %s;", mib(p.rss))
	}
	r.rep.note("%s", strings.TrimSuffix(b.String(), ";"))
}

// dirSize is the bytes of the files in dir and the folders below it.
func dirSize(dir string) int64 {
	var n int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() {
			n += info.Size()
		} else if e.IsDir() {
			n += dirSize(dir + "/" + e.Name())
		}
	}
	return n
}
