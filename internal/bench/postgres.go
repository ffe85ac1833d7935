package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// DefaultPostgresRows is the size of the PostgreSQL section's snapshot
// (a 1M-row load).
const DefaultPostgresRows = 1000000

// PostgresHint is what a run without a PostgreSQL says.
const PostgresHint = `no PostgreSQL: give --postgres a superuser's URL (the bench creates a database of its own and drops it), ` +
	`or set PLOTI_TEST_POSTGRES; a throwaway cluster with PostGIS: eval "$(.ci/pg start)", stopped with .ci/pg stop`

// pgBench is the PostgreSQL section's cluster: the admin connection's URL,
// a template database with PostGIS that every database of the section is
// made from, and those databases, dropped at the end.
type pgBench struct {
	r     *run
	admin string
	conn  *pgx.Conn // the admin's session: CREATE/DROP DATABASE, CHECKPOINT
	base  string    // the template database
	made  []string
	seq   int
	cpu   *serverCPU // nil when the cluster's processes are not readable here
	// server is the cluster's share of the last step's CPU time.
	server time.Duration
}

// postgres measures a replica kept in PostgreSQL (item 4): the
// bootstrap of a PostgresRows-row snapshot against PostgreSQL's own COPY
// of the same rows from a CSV file, a 1% merge against the raw SQL of a
// merge, and a reader's latency while the engine merges and reloads.
func (r *run) postgres(ctx context.Context) error {
	if !r.want("postgres") {
		return nil
	}
	if r.cfg.Postgres == "" {
		r.logf("postgres: skipped: %s", PostgresHint)
		r.rep.note("postgres: skipped: %s", PostgresHint)
		return nil
	}
	p, err := newPGBench(ctx, r)
	if err != nil {
		return err
	}
	defer p.close()
	em, err := r.newEmulator("emulator-postgres", emulator.Options{})
	if err != nil {
		return err
	}
	defer closeEmulator(em)
	b, err := r.newBig(ctx, em, r.cfg.PostgresRows)
	if err != nil {
		return err
	}
	fx, err := p.load(ctx, b)
	if err != nil {
		return err
	}
	if err := p.merge(ctx, b, fx); err != nil {
		return err
	}
	return p.readers(ctx, b, fx)
}

// newPGBench connects to the admin URL and makes the template database
// with PostGIS (CREATE EXTENSION takes about a second: never timed).
func newPGBench(ctx context.Context, r *run) (*pgBench, error) {
	conn, err := pgx.Connect(ctx, r.cfg.Postgres)
	if err != nil {
		return nil, fmt.Errorf("connect to --postgres %s: %w", redactURL(r.cfg.Postgres), err)
	}
	var b [4]byte
	rand.Read(b[:])
	p := &pgBench{r: r, admin: r.cfg.Postgres, conn: conn, base: "ploti_bench_" + hex.EncodeToString(b[:])}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{p.base}.Sanitize()); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("create database %s: %w", p.base, err)
	}
	p.made = append(p.made, p.base)
	err = p.on(ctx, p.base, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE EXTENSION postgis")
		return err
	})
	if err != nil {
		p.close()
		return nil, fmt.Errorf("create extension postgis in %s (apt-get install postgresql-15-postgis-3): %w", p.base, err)
	}
	p.cpu = newServerCPU(ctx, conn)
	var version string
	conn.QueryRow(ctx, "SELECT current_setting('server_version')").Scan(&version)
	var postgis string
	p.on(ctx, p.base, func(c *pgx.Conn) error { return c.QueryRow(ctx, "SELECT postgis_lib_version()").Scan(&postgis) })
	r.rep.note("postgres: PostgreSQL %s, PostGIS %s, at %s; databases %s_* made for the run and dropped after; server CPU %s",
		version, postgis, redactURL(p.admin), p.base, p.cpu.describe())
	return p, nil
}

// close drops every database the section made and hangs up.
func (p *pgBench) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := len(p.made) - 1; i >= 0; i-- {
		if _, err := p.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{p.made[i]}.Sanitize()+" WITH (FORCE)"); err != nil {
			p.r.logf("postgres: drop database %s: %v", p.made[i], err)
		}
	}
	p.made = nil
	p.conn.Close(ctx)
}

// fresh makes a database from the template (PostGIS in it, nothing else)
// and returns its name.
func (p *pgBench) fresh(ctx context.Context, kind string) (string, error) {
	return p.copyOf(ctx, p.base, kind)
}

// copyOf makes a database that is a copy of from (nothing may be
// connected to it), as the DuckDB sections copy a file.
func (p *pgBench) copyOf(ctx context.Context, from, kind string) (string, error) {
	p.seq++
	name := fmt.Sprintf("%s_%03d_%s", p.base, p.seq, kind)
	if _, err := p.conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", pgx.Identifier{name}.Sanitize(), pgx.Identifier{from}.Sanitize())); err != nil {
		return "", fmt.Errorf("create database %s from %s: %w", name, from, err)
	}
	p.made = append(p.made, name)
	return name, nil
}

// drop drops a database the section made.
func (p *pgBench) drop(ctx context.Context, name string) error {
	if _, err := p.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	for i, n := range p.made {
		if n == name {
			p.made = append(p.made[:i], p.made[i+1:]...)
			break
		}
	}
	return nil
}

// url is the URL of one of the section's databases.
func (p *pgBench) url(name string) string {
	u, err := withDatabase(p.admin, name)
	if err != nil { // the admin URL parsed when it connected
		panic(err)
	}
	return u
}

// on runs fn on a session of the database name.
func (p *pgBench) on(ctx context.Context, name string, fn func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, p.url(name))
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return fn(c)
}

// watch starts measuring a step on the database db: a CHECKPOINT first
// (so that no step pays for writing out the one before it), the dirty
// pages synced, then wall time and CPU time, this process's and the
// cluster's, read once the step's server processes have ended.
func (p *pgBench) watch(ctx context.Context, db string) (func() cost, error) {
	if _, err := p.conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	settle()
	stop := startWatch()
	s0 := p.cpu.now()
	return func() cost {
		c := stop()
		p.server = p.cpu.after(db) - s0
		c.CPU += p.server
		return c
	}, nil
}

// engine is one engine sync into the database name (a bootstrap or a
// merge): its time without the downloads and API calls, the cluster's CPU
// added.
func (p *pgBench) engine(ctx context.Context, b *bigDataset, name string) (syncRun, cost, error) {
	if _, err := p.conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return syncRun{}, cost{}, fmt.Errorf("checkpoint: %w", err)
	}
	s0 := p.cpu.now()
	run, err := engineSync(ctx, b.em, b.sub, p.url(name), p.r.eo)
	c := run.Engine()
	p.server = p.cpu.after(name) - s0
	c.CPU += p.server
	return run, c, err
}

// pgLoadFixture is what the load leaves for the merge and the readers.
type pgLoadFixture struct {
	engineDB string   // a database the engine bootstrapped (version 1)
	table    *pgTable // the engine's table, as DDL
	csv      string   // the snapshot's rows as CSV, in the table's column order
}

// load measures the engine's bootstrap of the dataset into fresh
// databases against PostgreSQL alone: the same DDL, COPY FROM STDIN of a
// CSV file DuckDB wrote from the same Parquet (untimed), the same
// constraints and indexes, one transaction. The engine goes first in the
// first run (its table's DDL is the raw side's), then they take turns.
func (p *pgBench) load(ctx context.Context, b *bigDataset) (*pgLoadFixture, error) {
	lr := &pgLoadRuns{p: p, b: b, fx: &pgLoadFixture{}}
	for i := range p.r.cfg.Repeat {
		if err := inTurns(i, func() error { return lr.engineRun(ctx) }, func() error { return lr.rawRun(ctx) }); err != nil {
			return nil, err
		}
		p.r.logf("postgres load %s, run %d: engine %s (+ download and API calls %s), PostgreSQL alone %s", rows(b.n), i+1,
			secs(lr.eng.Wall.Runs[i]), secs(lr.dl.Wall.Runs[i]), secs(lr.raw.Wall.Runs[i]))
	}
	fx := lr.fx
	if err := p.sameTables(ctx, fx.engineDB, lr.rawDB, fx.table, b.n); err != nil {
		return nil, err
	}
	if err := p.drop(ctx, lr.rawDB); err != nil {
		return nil, err
	}
	ratio, cpu := ratios(lr.eng, lr.raw)
	size := fmt.Sprintf("%s rows, %s Parquet", rows(b.n), mib(float64(b.parquetB)))
	line := Line{What: "9a. snapshot load into PostgreSQL (bootstrap, download and API calls excluded; cpu: this process and the cluster's)", Size: size,
		Engine: p.costText(lr.eng, lr.engSrv), Versus: "PostgreSQL alone, one transaction: the same DDL, COPY FROM STDIN of a CSV, the same primary key and GiST index: " + p.costText(lr.raw, lr.rawSrv),
		Ratio: ratio, CPURatio: cpu}
	p.targetOrLine(line, 1.15, "pg_load_ratio", ratio)
	p.targetOrLine(Line{What: "9a. of which CPU: this process and the cluster's, against PostgreSQL alone's (its process and the cluster's)", Size: size,
		Engine: p.cpuText(lr.eng.CPU, lr.engSrv), Versus: p.cpuText(lr.raw.CPU, lr.rawSrv), Ratio: cpu, CPURatio: math.NaN()},
		1.15, "pg_load_cpu_ratio", cpu)
	return fx, nil
}

// pgLoadRuns is what the load's runs gather: each side's costs, the
// cluster's share, and the databases the last runs left.
type pgLoadRuns struct {
	p              *pgBench
	b              *bigDataset
	fx             *pgLoadFixture
	eng, raw, dl   Costs
	engSrv, rawSrv Stat
	rawDB          string
}

// engineRun bootstraps the dataset into a fresh database; the first run
// also reads the table's shape and writes the snapshot's rows as the CSV
// PostgreSQL alone copies (untimed).
func (lr *pgLoadRuns) engineRun(ctx context.Context) error {
	p, b, fx := lr.p, lr.b, lr.fx
	db, err := p.fresh(ctx, "load_engine")
	if err != nil {
		return err
	}
	run, c, err := p.engine(ctx, b, db)
	if err == nil && run.Result.SnapshotsLoaded != 1 {
		err = fmt.Errorf("bootstrap of %s loaded %d snapshots, want 1: %w", b.id, run.Result.SnapshotsLoaded, errMismatch)
	}
	if err != nil {
		return err
	}
	lr.eng.Add(c)
	lr.engSrv.Add(p.server)
	lr.dl.Add(run.Network())
	if fx.table == nil {
		if fx.table, err = readTable(ctx, p.url(db), "public", b.table); err != nil {
			return err
		}
		fx.csv = filepath.Join(p.r.dir, "postgres-snapshot.csv")
		start := time.Now()
		if err := writeCSV(ctx, fx.table, b.files, "", fx.csv); err != nil {
			return err
		}
		p.r.logf("postgres: the snapshot's rows written as CSV by DuckDB in %s (untimed)", time.Since(start).Round(time.Millisecond))
	}
	if fx.engineDB != "" {
		if err := p.drop(ctx, fx.engineDB); err != nil {
			return err
		}
	}
	fx.engineDB = db
	return nil
}

// rawRun loads the CSV into a fresh database as PostgreSQL alone would.
func (lr *pgLoadRuns) rawRun(ctx context.Context) error {
	p := lr.p
	db, err := p.fresh(ctx, "load_raw")
	if err != nil {
		return err
	}
	stop, err := p.watch(ctx, db)
	if err != nil {
		return err
	}
	if err := rawPGLoad(ctx, p.url(db), lr.fx.table, lr.fx.csv); err != nil {
		return fmt.Errorf("postgres alone, load: %w", err)
	}
	lr.raw.Add(stop())
	lr.rawSrv.Add(p.server)
	if lr.rawDB != "" {
		if err := p.drop(ctx, lr.rawDB); err != nil {
			return err
		}
	}
	lr.rawDB = db
	return nil
}

// costText is c's text with the cluster's share of the CPU time.
func (p *pgBench) costText(c Costs, server Stat) string {
	if p.cpu == nil || len(server.Runs) == 0 {
		return c.String()
	}
	return fmt.Sprintf("%s (of which the cluster %s)", c, secs(server.Median()))
}

// cpuText is a step's CPU time and the cluster's share, the rest this
// process's.
func (p *pgBench) cpuText(c, server Stat) string {
	if p.cpu == nil || len(server.Runs) != len(c.Runs) {
		return "cpu " + c.String()
	}
	var own Stat
	for i, d := range c.Runs {
		own.Add(d - server.Runs[i])
	}
	return fmt.Sprintf("cpu %s: the cluster %s, the process %s", c, server, own)
}

// targetOrLine adds a line with its target at the section's full size,
// without one in a smaller run (--quick), and its summary key either way.
func (p *pgBench) targetOrLine(l Line, limit float64, key string, v float64) {
	if p.r.cfg.PostgresRows >= DefaultPostgresRows {
		p.r.rep.target(l, limit, true)
	} else {
		p.r.rep.add(l)
	}
	p.r.rep.Summary[key] = v
}

// sameTables refuses a run whose engine and raw tables differ: other
// columns, constraints or indexes, another row count, or other rows.
func (p *pgBench) sameTables(ctx context.Context, engineDB, rawDB string, t *pgTable, want int64) error {
	ge, err := readTable(ctx, p.url(engineDB), t.Schema, t.Name)
	if err != nil {
		return err
	}
	gr, err := readTable(ctx, p.url(rawDB), t.Schema, t.Name)
	if err != nil {
		return err
	}
	if d := ge.diff(gr); d != "" {
		return fmt.Errorf("the engine's table and PostgreSQL alone's differ: %s: %w", d, errMismatch)
	}
	se, err := tableSum(ctx, p.url(engineDB), t)
	if err != nil {
		return err
	}
	sr, err := tableSum(ctx, p.url(rawDB), t)
	if err != nil {
		return err
	}
	if se != sr || (want >= 0 && se.Rows != want) {
		return fmt.Errorf("the engine's table holds %d rows (checksum %s), PostgreSQL alone's %d (%s), want %d: %w", se.Rows, se.Sum, sr.Rows, sr.Sum, want, errMismatch)
	}
	return nil
}

// merge publishes a 1% version and merges it into copies of the engine's
// database: the engine's sync against the raw SQL of a merge (a temporary
// table COPY'd from a CSV of the same changes file, DELETE … USING,
// INSERT … SELECT, one transaction).
func (p *pgBench) merge(ctx context.Context, b *bigDataset, fx *pgLoadFixture) error {
	st, err := p.r.nextVersion(ctx, b, 0.01)
	if err != nil {
		return err
	}
	changes := filepath.Join(p.r.dir, "postgres-changes.csv")
	if err := writeCSV(ctx, fx.table, []string{st.changes}, "_ploti_change", changes); err != nil {
		return err
	}
	mr := &pgMergeRuns{p: p, b: b, fx: fx, st: st, changes: changes}
	for i := range p.r.cfg.Repeat {
		if err := inRotation(i, func() error { return mr.engineRun(ctx) }, func() error { return mr.rawRun(ctx, false) },
			func() error { return mr.rawRun(ctx, true) }); err != nil {
			return err
		}
		p.r.logf("postgres merge %s of %s, run %d: engine %s (of which replica.Open %s), PostgreSQL alone %s, updating in place %s", pct(st.f), rows(b.n), i+1,
			secs(mr.eng.Wall.Runs[i]), secs(mr.opens.Runs[i]), secs(mr.raw.Wall.Runs[i]), secs(mr.upd.Wall.Runs[i]))
	}
	for _, other := range []string{mr.lastR, mr.lastU} {
		if err := p.sameTables(ctx, mr.lastE, other, fx.table, st.rel.RowCount); err != nil {
			return err
		}
	}
	for _, db := range []string{mr.lastE, mr.lastR, mr.lastU} {
		if err := p.drop(ctx, db); err != nil {
			return err
		}
	}
	b.version = st.rel.Version
	ratio, cpu := ratios(mr.eng, mr.raw)
	size := fmt.Sprintf("%s of %s rows: +%d ~%d −%d", pct(st.f), rows(b.n), st.rel.Added, st.rel.Changed, st.rel.Removed)
	p.targetOrLine(Line{What: "9b. changes merge in PostgreSQL (download and API calls excluded; cpu: this process and the cluster's)", Size: size, Engine: p.costText(mr.eng, mr.engSrv),
		Versus: "PostgreSQL alone, one transaction: temporary table by COPY of a CSV, DELETE … USING, INSERT … SELECT: " + p.costText(mr.raw, mr.rawSrv),
		Ratio:  ratio, CPURatio: cpu}, 1.2, "pg_merge_ratio", ratio)
	upd, updCPU := ratios(mr.eng, mr.upd)
	p.r.rep.add(Line{What: "9b. the same merge against PostgreSQL alone the engine's way: UPDATE … FROM of the changed rows (on the table's free room, no new index entries when the indexed columns stay), DELETE … USING of the removed, INSERT of the added", Size: size,
		Engine: p.costText(mr.eng, mr.engSrv), Versus: "PostgreSQL alone, one transaction, updating in place: " + p.costText(mr.upd, mr.updSrv), Ratio: upd, CPURatio: updCPU})
	p.r.rep.Summary["pg_merge_vs_update"] = upd
	p.r.rep.add(Line{What: "9b. of which replica.Open (two sessions, the writer's advisory lock, the migrations' check, the in-memory DuckDBs)", Size: size,
		Engine: mr.opens.String(), Ratio: math.NaN()})
	return nil
}

// pgMergeRuns is what the merge's runs gather: each side's costs (the
// engine, PostgreSQL alone deleting and inserting, PostgreSQL alone
// updating in place), the cluster's share, the engine's opens, and the
// databases the last runs left.
type pgMergeRuns struct {
	p                             *pgBench
	b                             *bigDataset
	fx                            *pgLoadFixture
	st                            *mergeStep
	changes                       string
	eng, raw, upd                 Costs
	engSrv, rawSrv, updSrv, opens Stat
	lastE, lastR, lastU           string
}

// engineRun syncs a copy of the loaded database to the next version.
func (mr *pgMergeRuns) engineRun(ctx context.Context) error {
	p := mr.p
	db, err := p.copyOf(ctx, mr.fx.engineDB, "merge_engine")
	if err != nil {
		return err
	}
	run, c, err := p.engine(ctx, mr.b, db)
	if err == nil && (run.Result.ChangesMerged != 1 || run.Result.SnapshotsLoaded != 0) {
		err = fmt.Errorf("sync of version %d merged %d and loaded %d, want one merge: %w", mr.st.rel.Version, run.Result.ChangesMerged, run.Result.SnapshotsLoaded, errMismatch)
	}
	if err != nil {
		return err
	}
	mr.eng.Add(c)
	mr.engSrv.Add(p.server)
	mr.opens.Add(run.Open.Wall)
	return p.keep(ctx, &mr.lastE, db)
}

// rawRun merges the changes' CSV into a copy as PostgreSQL alone would:
// deleting and inserting, or with update the changed rows updated in
// place.
func (mr *pgMergeRuns) rawRun(ctx context.Context, update bool) error {
	p := mr.p
	costs, srv, last := &mr.raw, &mr.rawSrv, &mr.lastR
	if update {
		costs, srv, last = &mr.upd, &mr.updSrv, &mr.lastU
	}
	db, err := p.copyOf(ctx, mr.fx.engineDB, "merge_raw")
	if err != nil {
		return err
	}
	stop, err := p.watch(ctx, db)
	if err != nil {
		return err
	}
	if err := rawPGMerge(ctx, p.url(db), mr.fx.table, mr.changes, update); err != nil {
		return fmt.Errorf("postgres alone, merge: %w", err)
	}
	costs.Add(stop())
	srv.Add(p.server)
	return p.keep(ctx, last, db)
}

// keep makes db the last one of its kind, dropping the one before.
func (p *pgBench) keep(ctx context.Context, last *string, db string) error {
	if *last != "" {
		if err := p.drop(ctx, *last); err != nil {
			return err
		}
	}
	*last = db
	return nil
}

// readers runs a reader on its own session (a bbox query on the GiST
// index, in a loop) while the engine merges the next version into a copy
// of the loaded database and then reloads it whole, and reports the
// reader's latency and errors during each.
func (p *pgBench) readers(ctx context.Context, b *bigDataset, fx *pgLoadFixture) error {
	db, err := p.copyOf(ctx, fx.engineDB, "readers")
	if err != nil {
		return err
	}
	q := readerQuery(fx.table)
	// The same reader with no writer first: what contention with the
	// writer for the cores, or a wait for its lock, adds shows against it.
	rd, err := startReader(ctx, p.url(db), q)
	if err != nil {
		return err
	}
	time.Sleep(readerQuiet)
	quiet := rd.stop()
	p.r.logf("postgres reader alone: %s", quiet)
	var all []readerStats
	eo := p.r.eo
	eo.Settled = true // settled here, before the reader's window opens
	for _, step := range []struct{ name, what string }{{"merge", "the 1% merge"}, {"reload", "a reload of the whole table (the snapshot swapped in)"}} {
		settle()
		rd, err := startReader(ctx, p.url(db), q)
		if err != nil {
			return err
		}
		if step.name == "merge" {
			var run syncRun
			run, err = engineSync(ctx, b.em, b.sub, p.url(db), eo)
			if err == nil && run.Result.ChangesMerged != 1 {
				err = fmt.Errorf("readers: the sync merged %d files, want 1: %w", run.Result.ChangesMerged, errMismatch)
			}
		} else {
			_, err = engineReload(ctx, b.em, p.url(db), b.id, b.version, 1, eo, nil)
		}
		s := rd.stop()
		if err != nil {
			return fmt.Errorf("readers, %s: %w", step.name, err)
		}
		all = append(all, s)
		p.r.logf("postgres reader during %s: %s", step.what, s)
		p.r.rep.add(Line{What: "9c. a reader on another session during " + step.what + ": " + q, Size: rows(b.n) + " rows",
			Engine: fmt.Sprintf("%s; %d errors", s, s.errors), Versus: "the same reader with no writer: " + quiet.String(), Ratio: math.NaN()})
	}
	worst, errs, locked := 0.0, 0, 0.0
	for _, s := range all {
		worst = math.Max(worst, ms(s.p99()))
		errs += s.errors
		locked = math.Max(locked, ms(s.locks.longest))
	}
	if errs > 0 {
		p.r.rep.note("postgres: the reader's first error: %v", firstErr(all))
	}
	p.r.rep.Summary["pg_reader_p99_ms"] = worst
	p.r.rep.Summary["pg_reader_errors"] = float64(errs)
	p.r.rep.Summary["pg_reader_lock_ms"] = locked
	return p.drop(ctx, db)
}

// readerQuiet is how long the reader runs alone, for its latency with no writer.
const readerQuiet = 2 * time.Second

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// withDatabase is the URL u with its database replaced by name.
func withDatabase(u, name string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("parse the PostgreSQL URL: %w", err)
	}
	p.Path = "/" + name
	return p.String(), nil
}

// redactURL is a URL without its password, for logs and errors.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the PostgreSQL URL"
	}
	if p.User != nil {
		p.User = url.User(p.User.Username())
	}
	return p.String()
}
