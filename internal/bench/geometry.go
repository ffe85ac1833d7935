package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// DefaultGeometryRows is the size of the table the geometry section
// measures on.
const DefaultGeometryRows = 1000000

// geometryWays are the ways of storing the permits' point that the
// geometry section compares (item 1: DuckDB 1.1–1.4 without the
// spatial extension read no coordinates from GEOMETRY). DuckDB alone runs
// each as a select list over the snapshot or changes file; the engine
// runs the first two through Options.Geometry.
var geometryWays = []struct {
	name, sel string
}{
	{storage.GeometryNative, "*"},
	{storage.GeometryWKB, "* REPLACE (ST_AsWKB(location) AS location)"},
	{"both", "*, ST_AsWKB(location) AS location_wkb"},
}

// geometryRun is one way's measures.
type geometryRun struct {
	load, merge Costs
	size        Quantity
	last        string // the file after the last load
}

// geometry measures, on a table of GeometryRows permits, what each way of
// storing geometry costs: the snapshot load, the file's size after it and
// a 1% merge, through the engine (GEOMETRY and WKB) and DuckDB alone (the
// same two, and a WKB column beside the GEOMETRY one, which a view for
// older clients would need).
func (r *run) geometry(ctx context.Context) error {
	if !r.want("geometry") {
		return nil
	}
	em, err := r.newEmulator("emulator-geometry", emulator.Options{})
	if err != nil {
		return err
	}
	defer closeEmulator(em)
	b, err := r.newBig(ctx, em, r.cfg.GeometryRows)
	if err != nil {
		return err
	}
	engine := map[string]*geometryRun{storage.GeometryNative: {}, storage.GeometryWKB: {}}
	raw := map[string]*geometryRun{}
	for _, w := range geometryWays {
		raw[w.name] = &geometryRun{}
	}
	if err := r.geometryLoads(ctx, b, engine, raw); err != nil {
		return err
	}
	if err := r.geometryMerges(ctx, b, engine, raw); err != nil {
		return err
	}
	size := rows(b.n) + " rows, a point each"
	native, wkb := storage.GeometryNative, storage.GeometryWKB
	r.geometryLines("8a. geometry as WKB instead of GEOMETRY, engine (--geometry wkb)", size, engine[wkb], engine[native], "engine with GEOMETRY")
	r.geometryLines("8a. the same, DuckDB alone", size, raw[wkb], raw[native], "DuckDB alone with GEOMETRY")
	r.geometryLines("8b. a WKB column beside the GEOMETRY one (what a view for older clients needs), DuckDB alone", size, raw["both"], raw[native], "DuckDB alone with GEOMETRY")
	r.rep.Summary["wkb_load"], _ = ratios(engine[wkb].load, engine[native].load)
	for _, g := range append(slicesOf(engine), slicesOf(raw)...) {
		removeDB(g.last)
	}
	return nil
}

func slicesOf(m map[string]*geometryRun) []*geometryRun {
	var out []*geometryRun
	for _, g := range m {
		out = append(out, g)
	}
	return out
}

// geometryLines adds a way's load, size and merge lines against base.
func (r *run) geometryLines(what, size string, g, base *geometryRun, baseName string) {
	ratio, cpu := ratios(g.load, base.load)
	r.rep.add(Line{What: what + ": snapshot load", Size: size, Engine: g.load.String(), Versus: baseName + ": " + base.load.String(), Ratio: ratio, CPURatio: cpu})
	r.rep.add(Line{What: what + ": file size after the load", Size: size, Engine: mib(g.size.Median()), Versus: baseName + ": " + mib(base.size.Median()),
		Ratio: g.size.Median() / base.size.Median(), CPURatio: math.NaN()})
	ratio, cpu = ratios(g.merge, base.merge)
	r.rep.add(Line{What: what + ": 1% merge", Size: size, Engine: g.merge.String(), Versus: baseName + ": " + base.merge.String(), Ratio: ratio, CPURatio: cpu})
}

// geometryLoads loads the first version Repeat times each way, the ways
// taking turns at going first.
func (r *run) geometryLoads(ctx context.Context, b *bigDataset, engine, raw map[string]*geometryRun) error {
	type step struct {
		name string
		fn   func() error
	}
	var steps []step
	for _, w := range []string{storage.GeometryNative, storage.GeometryWKB} {
		steps = append(steps, step{"engine " + w, func() error {
			g, path := engine[w], r.path("geometry-engine-"+w)
			eo := r.eo
			eo.Geometry = w
			run, err := engineSync(ctx, b.em, b.sub, path, eo)
			g.load.Add(run.Engine())
			return g.keep(path, err)
		}})
	}
	for _, w := range geometryWays {
		steps = append(steps, step{"DuckDB alone " + w.name, func() error {
			g, path := raw[w.name], r.path("geometry-raw-"+w.name)
			d, err := rawLoadSelect(ctx, path, b.table, b.files, w.sel, r.eo)
			g.load.Add(d)
			return g.keep(path, err)
		}})
	}
	for i := range r.cfg.Repeat {
		for j := range steps {
			s := steps[(i+j)%len(steps)]
			if err := s.fn(); err != nil {
				return fmt.Errorf("geometry load, %s: %w", s.name, err)
			}
		}
		r.logf("geometry load %s, run %d: engine GEOMETRY %s, WKB %s; DuckDB alone GEOMETRY %s, WKB %s, both %s", rows(b.n), i+1,
			secs(engine[storage.GeometryNative].load.Wall.Runs[i]), secs(engine[storage.GeometryWKB].load.Wall.Runs[i]),
			secs(raw[storage.GeometryNative].load.Wall.Runs[i]), secs(raw[storage.GeometryWKB].load.Wall.Runs[i]), secs(raw["both"].load.Wall.Runs[i]))
	}
	return nil
}

// keep records a loaded file's size and keeps it for the merges (the
// last run's), removing the one before.
func (g *geometryRun) keep(path string, err error) error {
	if err != nil {
		return err
	}
	g.size.Add(float64(fileSize(path)))
	if g.last != "" {
		removeDB(g.last)
	}
	g.last = path
	return nil
}

// geometryMerges merges a 1% version into copies of the loaded files.
func (r *run) geometryMerges(ctx context.Context, b *bigDataset, engine, raw map[string]*geometryRun) error {
	st, err := r.nextVersion(ctx, b, 0.01)
	if err != nil {
		return err
	}
	for i := range r.cfg.Repeat {
		for _, w := range []string{storage.GeometryNative, storage.GeometryWKB} {
			path := r.path("geometry-merge-engine-" + w)
			if err := copyDB(engine[w].last, path); err != nil {
				return err
			}
			eo := r.eo
			eo.Geometry = w
			run, err := engineSync(ctx, b.em, b.sub, path, eo)
			if err == nil && run.Result.ChangesMerged != 1 {
				err = fmt.Errorf("geometry merge %s merged %d files, want 1: %w", w, run.Result.ChangesMerged, errMismatch)
			}
			removeDB(path)
			if err != nil {
				return err
			}
			engine[w].merge.Add(run.Engine())
		}
		for _, w := range geometryWays {
			path := r.path("geometry-merge-raw-" + w.name)
			if err := copyDB(raw[w.name].last, path); err != nil {
				return err
			}
			d, err := rawMergeSelect(ctx, path, b.table, st.changes, w.sel, r.eo)
			removeDB(path)
			if err != nil {
				return fmt.Errorf("geometry merge, DuckDB alone %s: %w", w.name, err)
			}
			raw[w.name].merge.Add(d)
		}
		r.logf("geometry 1%% merge, run %d: engine GEOMETRY %s, WKB %s; DuckDB alone GEOMETRY %s, WKB %s, both %s", i+1,
			secs(engine[storage.GeometryNative].merge.Wall.Runs[i]), secs(engine[storage.GeometryWKB].merge.Wall.Runs[i]),
			secs(raw[storage.GeometryNative].merge.Wall.Runs[i]), secs(raw[storage.GeometryWKB].merge.Wall.Runs[i]), secs(raw["both"].merge.Wall.Runs[i]))
	}
	return nil
}

// rawLoadSelect is rawLoad with a select list over the files.
func rawLoadSelect(ctx context.Context, path, table string, files []string, sel string, eo engineOpts) (cost, error) {
	settle()
	stop := startWatch()
	err := withPlain(ctx, path, eo, func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT %s FROM read_parquet(%s)", storage.Ident(table), sel, fileList(files)))
		return err
	})
	return stop(), err
}

// rawMergeSelect is rawMergeSQL's merge of one changes file, with its
// inserted rows through a select list, in one transaction.
func rawMergeSelect(ctx context.Context, path, table, file, sel string, eo engineOpts) (cost, error) {
	t, f := storage.Ident(table), fileList([]string{file})
	return timedPlain(ctx, path, eo, nil, func(exec func(string) error) error {
		for _, q := range []string{
			"BEGIN",
			fmt.Sprintf("DELETE FROM %s WHERE _ploti_record_id IN (SELECT _ploti_record_id FROM read_parquet(%s) WHERE _ploti_change <> 'added')", t, f),
			fmt.Sprintf("INSERT INTO %s BY NAME SELECT %s FROM (SELECT * EXCLUDE (_ploti_change) FROM read_parquet(%s) WHERE _ploti_change <> 'removed')", t, sel, f),
			"COMMIT",
		} {
			if err := exec(q); err != nil {
				return err
			}
		}
		return nil
	})
}
