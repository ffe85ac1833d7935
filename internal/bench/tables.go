package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// DefaultManyTables is how many small tables the catalog measure builds
// ("Measure DuckDB with 5,000 tables").
const DefaultManyTables = 5000

// tablesChunk is how many loads the engine shares a transaction with, as
// a bootstrap of small datasets does (replica's sharedLoadCount).
const tablesChunk = 500

// oneFileSource serves the same snapshot files for every dataset: the
// engine's load path with neither HTTP nor the emulator.
type oneFileSource struct {
	files  []string
	schema *ploti.Schema
}

func (s *oneFileSource) Version(ctx context.Context, datasetID string, version int, link string) (*ploti.Version, error) {
	return &ploti.Version{DatasetID: datasetID, Version: version, SchemaVersion: s.schema.SchemaVersion}, nil
}

func (s *oneFileSource) Current(ctx context.Context, datasetID string) (int, error) {
	return 0, errors.New("one-file source: no current version")
}

func (s *oneFileSource) Schema(ctx context.Context, v *ploti.Version) (*ploti.Schema, error) {
	return s.schema, nil
}

func (s *oneFileSource) Download(ctx context.Context, v *ploti.Version, kind string) ([]string, error) {
	if kind != "snapshot" {
		return nil, fmt.Errorf("one-file source: no %s files", kind)
	}
	return s.files, nil
}

func (s *oneFileSource) Discard([]string) {}

// tableMark is what the catalog measure reads at one table count, in the
// engine's file and in DuckDB alone's.
type tableMark struct {
	tables     int
	bytes      [2]int64         // file bytes
	open, ckpt [2]time.Duration // medians
}

// manyTables measures what DuckDB's number of tables drives, up to
// Config.ManyTables small tables (the statewide fixture's smallest
// dataset, loaded again under new names): the engine's file, its tables
// loaded as a bootstrap loads small datasets (apply.Executor.LoadPrepared,
// a shared transaction for up to 500), against DuckDB alone's CREATE
// TABLE AS each. At each mark: the time to open the file and read its
// catalog, a CHECKPOINT after a one-row commit, and the file's bytes a
// table (the catalog's growth with them).
func (r *run) manyTables(ctx context.Context, f *manyFixture) error {
	n := r.cfg.ManyTables
	small := slices.Index(f.sizes, slices.Min(f.sizes))
	src, err := r.tablesSource(ctx, f, small)
	if err != nil {
		return err
	}
	marks := tableMarks(n)
	ep, rp := r.path("tables-engine"), r.path("tables-raw")
	defer removeDB(ep)
	defer removeDB(rp)
	r.logf("catalog: %d tables of %d rows, marks at %v", n, f.sizes[small], marks)
	var got []tableMark
	var build [2]time.Duration
	done := 0
	for _, m := range marks {
		start := time.Now()
		if err := r.addEngineTables(ctx, ep, src, done, m); err != nil {
			return err
		}
		build[0] += time.Since(start)
		start = time.Now()
		if err := r.addRawTables(ctx, rp, src.files, done, m); err != nil {
			return err
		}
		build[1] += time.Since(start)
		done = m
		tm := tableMark{tables: m}
		for k, p := range []string{ep, rp} {
			tm.bytes[k] = fileSize(p)
			if tm.open[k], tm.ckpt[k], err = r.openAndCheckpoint(ctx, p, k == 0); err != nil {
				return err
			}
		}
		r.logf("catalog at %d tables: engine %s, open %s, checkpoint %s; DuckDB alone %s, open %s, checkpoint %s", m,
			mib(float64(tm.bytes[0])), secs(tm.open[0]), secs(tm.ckpt[0]), mib(float64(tm.bytes[1])), secs(tm.open[1]), secs(tm.ckpt[1]))
		got = append(got, tm)
	}
	r.reportTables(got, build, f.sizes[small])
	return nil
}

// tableMarks are the table counts measured on the way to n.
func tableMarks(n int) []int {
	var marks []int
	for _, m := range []int{100, 500, 1000, 2000} {
		if m < n {
			marks = append(marks, m)
		}
	}
	return append(marks, n)
}

// tablesSource serves the statewide fixture's dataset i as every table's
// snapshot, with its schema as the engine's file holds it.
func (r *run) tablesSource(ctx context.Context, f *manyFixture, i int) (*oneFileSource, error) {
	db, err := duckdb.Open(ctx, f.engine, storage.Options{ReadOnly: true, Threads: r.eo.Threads})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	d, err := db.Dataset(ctx, f.ids[i])
	if err != nil {
		return nil, err
	}
	return &oneFileSource{files: f.files[i], schema: &ploti.Schema{DatasetID: d.ID, SchemaVersion: d.SchemaVersion, Columns: d.Columns, KeyColumns: d.KeyColumns}}, nil
}

func tableID(i int) string { return fmt.Sprintf("ds_cat_%05d", i) }

// addEngineTables loads tables from up to to into the engine's file,
// tablesChunk to a transaction, then closes it.
func (r *run) addEngineTables(ctx context.Context, path string, src *oneFileSource, from, to int) error {
	db, err := duckdb.Open(ctx, path, storage.Options{Threads: r.eo.Threads})
	if err != nil {
		return err
	}
	x := &apply.Executor{DB: db, Source: src}
	for lo := from; lo < to && err == nil; lo += tablesChunk {
		var ps []*apply.Prepared
		for i := lo; i < min(to, lo+tablesChunk); i++ {
			id := tableID(i)
			d := &storage.Dataset{ID: id, Table: storage.TableName(id), Title: "Catalog " + id, Status: storage.StatusPending}
			v, _ := src.Version(ctx, id, 1, "")
			p := x.Prepare(ctx, d, v, apply.PrepareOptions{})
			p.NewTable = true
			ps = append(ps, p)
		}
		err = errors.Join(x.LoadPrepared(ctx, ps)...)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// addRawTables creates tables from up to to in DuckDB alone's file, a
// CREATE TABLE AS each, then closes it.
func (r *run) addRawTables(ctx context.Context, path string, files []string, from, to int) error {
	return withPlain(ctx, path, r.eo, func(db *sql.DB) error {
		for i := from; i < to; i++ {
			q := fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM read_parquet(%s)", storage.Ident(storage.TableName(tableID(i))), fileList(files))
			if _, err := db.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// openAndCheckpoint times, three times each, opening the closed file and
// reading its catalog (the engine's file through duckdb.Open, which
// checks its migrations; DuckDB alone's through a plain open), and a
// CHECKPOINT after a one-row commit, the same in both files.
func (r *run) openAndCheckpoint(ctx context.Context, path string, engine bool) (time.Duration, time.Duration, error) {
	var open, ckpt Stat
	for range 3 {
		o, c, err := r.openOnce(ctx, path, engine)
		if err != nil {
			return 0, 0, err
		}
		open.Add(o)
		ckpt.Add(c)
	}
	return open.Median(), ckpt.Median(), nil
}

func (r *run) openOnce(ctx context.Context, path string, engine bool) (open, ckpt time.Duration, err error) {
	settle()
	start := time.Now()
	var db *sql.DB
	closeDB := func() error { return nil }
	if engine {
		e, err := duckdb.Open(ctx, path, storage.Options{Threads: r.eo.Threads})
		if err != nil {
			return 0, 0, err
		}
		db, closeDB = e.SQL(), e.Close
	} else {
		if db, err = duckread.OpenPlain(ctx, path, storage.Options{Threads: r.eo.Threads}); err != nil {
			return 0, 0, err
		}
		closeDB = db.Close
	}
	defer func() {
		if cerr := closeDB(); err == nil {
			err = cerr
		}
	}()
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main'").Scan(&tables); err != nil {
		return 0, 0, err
	}
	open = time.Since(start)
	for _, q := range []string{"CREATE TABLE IF NOT EXISTS bench_tick (ts TIMESTAMP)", "INSERT INTO bench_tick VALUES (now())"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return 0, 0, err
		}
	}
	start = time.Now()
	if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return 0, 0, err
	}
	return open, time.Since(start), nil
}

// reportTables adds the catalog measure's lines: open time, checkpoint and
// bytes a table at each mark, and the target on the last.
func (r *run) reportTables(got []tableMark, build [2]time.Duration, rowsEach int64) {
	last := got[len(got)-1]
	each := func(f func(tableMark) string) string {
		parts := make([]string, len(got))
		for i, m := range got {
			parts[i] = fmt.Sprintf("%d: %s", m.tables, f(m))
		}
		return strings.Join(parts, "; ")
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", d.Seconds()*1000) }
	size := fmt.Sprintf("%d tables of %d rows", last.tables, rowsEach)
	for _, l := range []struct {
		what string
		f    func(tableMark, int) string
	}{
		{"open the file and read its catalog, by tables", func(m tableMark, k int) string { return ms(m.open[k]) }},
		{"a CHECKPOINT after a one-row commit, by tables", func(m tableMark, k int) string { return ms(m.ckpt[k]) }},
		{"file bytes a table, by tables", func(m tableMark, k int) string { return kib(float64(m.bytes[k]) / float64(m.tables)) }},
	} {
		r.rep.add(Line{What: "7d. " + l.what, Size: size,
			Engine:   each(func(m tableMark) string { return l.f(m, 0) }),
			Versus:   "DuckDB alone: " + each(func(m tableMark) string { return l.f(m, 1) }),
			Ratio:    math.NaN(),
			CPURatio: math.NaN()})
	}
	r.rep.target(Line{What: "7d. file bytes a small table", Size: size,
		Engine: fmt.Sprintf("%s (%s a table; built in %s)", mib(float64(last.bytes[0])), kib(float64(last.bytes[0])/float64(last.tables)), secs(build[0])),
		Versus: fmt.Sprintf("DuckDB alone: %s (%s a table; built in %s)", mib(float64(last.bytes[1])), kib(float64(last.bytes[1])/float64(last.tables)), secs(build[1])),
		Ratio:  float64(last.bytes[0]) / float64(last.bytes[1]), CPURatio: math.NaN()}, 1.2, true)
	r.rep.Summary["tables_bytes_ratio"] = float64(last.bytes[0]) / float64(last.bytes[1])
}
