package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/internal/pgtest"
)

// pgWorld is the PostgreSQL section's fixture at a small size: a run, its
// cluster's template database, an emulator with a permits dataset.
func pgWorld(t *testing.T, n int64) (*pgBench, *bigDataset) {
	t.Helper()
	admin := pgtest.Require(t)
	ctx := context.Background()
	r, done, err := newRun(Config{Repeat: 1, Postgres: admin, PostgresRows: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	if testing.Verbose() {
		r.cfg.Log = os.Stderr
	}
	p, err := newPGBench(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	em, err := r.newEmulator("emulator-postgres", emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeEmulator(em) })
	b, err := r.newBig(ctx, em, n)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// PostgreSQL alone loads and merges the very rows the engine does, into
// a table of the same definition (columns, types, NOT NULL, primary key,
// GiST index, comments), so the ratios compare equal work: the section
// checks it after its runs (sameTables), and the check fails when the
// raw side lacks a row, differs in one value or lacks an index.
func TestPostgres_rawBaselineMatchesTheEngine(t *testing.T) {
	p, b := pgWorld(t, 3000)
	ctx := context.Background()
	fx, err := p.load(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if fx.engineDB == "" || fx.table == nil {
		t.Fatalf("load left no engine database or table: %+v", fx)
	}
	// The table PostgreSQL alone creates: the engine's, read back.
	var types []string
	for _, c := range fx.table.Columns {
		types = append(types, c.Name+" "+c.Type)
	}
	if !slices.Contains(types, "location geometry(Point,4326)") || !slices.Contains(types, "valuation numeric(14,2)") {
		t.Fatalf("the engine's table as read: %v", types)
	}
	after := strings.Join(fx.table.After, "; ")
	if !strings.Contains(after, "PRIMARY KEY (_ploti_record_id)") || !strings.Contains(after, "USING gist (location)") {
		t.Fatalf("the constraints and indexes PostgreSQL alone builds: %s", after)
	}

	// A raw load whose CSV lacks its last row, or differs in one value, or
	// a table without the GiST index, is caught.
	lines := readLines(t, fx.csv)
	for _, tc := range []struct {
		name  string
		csv   []string
		table func() *pgTable
		want  string
	}{
		{"a row missing", lines[:len(lines)-1], nil, "PostgreSQL alone's 2999"},
		{"a value changed", append([]string{strings.Replace(lines[0], "BP-", "BQ-", 1)}, lines[1:]...), nil, "PostgreSQL alone's 3000"},
		{"no GiST index", lines, func() *pgTable {
			c := *fx.table
			c.After = slices.DeleteFunc(slices.Clone(c.After), func(s string) bool { return strings.Contains(s, "gist") })
			return &c
		}, "indexes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csv := filepath.Join(t.TempDir(), "rows.csv")
			if err := os.WriteFile(csv, []byte(strings.Join(tc.csv, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tbl := fx.table
			if tc.table != nil {
				tbl = tc.table()
			}
			db, err := p.fresh(ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			if err := rawPGLoad(ctx, p.url(db), tbl, csv); err != nil {
				t.Fatal(err)
			}
			err = p.sameTables(ctx, fx.engineDB, db, fx.table, b.n)
			if !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("sameTables = %v, want a mismatch of %s", err, tc.want)
			}
		})
	}

	if err := p.merge(ctx, b, fx); err != nil {
		t.Fatal(err)
	}
	if err := p.readers(ctx, b, fx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pg_load_ratio", "pg_load_cpu_ratio", "pg_merge_ratio", "pg_reader_p99_ms"} {
		if v, ok := p.r.rep.Summary[k]; !ok || !(v > 0) {
			t.Errorf("summary %s = %v (set: %v), want a positive figure", k, v, ok)
		}
	}
	if n := p.r.rep.Summary["pg_reader_errors"]; n != 0 {
		t.Errorf("the reader had %v errors during the merge and the reload", n)
	}
	// No target below the section's full size (CI's --quick).
	for _, l := range p.r.rep.Lines {
		if l.Target != "" {
			t.Errorf("line %q has a target at 3,000 rows", l.What)
		}
	}
}

// The section drops every database it made, the template included.
func TestPostgres_dropsItsDatabases(t *testing.T) {
	p, _ := pgWorld(t, 10)
	ctx := context.Background()
	db, err := p.fresh(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	base := p.base
	p.close()
	c, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname IN ($1, $2)", base, db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d of the section's databases are left", n)
	}
}

// Without a PostgreSQL the section is skipped, saying how to start one.
func TestPostgres_skippedWithoutAURL(t *testing.T) {
	r, done, err := newRun(Config{Only: []string{"postgres"}})
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if err := r.postgres(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.rep.Notes) != 1 || !strings.Contains(r.rep.Notes[0], `eval "$(.ci/pg start)"`) {
		t.Fatalf("notes: %q", r.rep.Notes)
	}
	if _, ok := r.rep.Summary["pg_load_ratio"]; ok {
		t.Fatal("a skipped section set pg_load_ratio")
	}
}

func TestReaderStats_quantiles(t *testing.T) {
	var s readerStats
	for i := 100; i >= 1; i-- {
		s.lat = append(s.lat, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := s.quantile(tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %s, want %s", tc.q, got, tc.want)
		}
	}
	if (readerStats{}).quantile(0.99) != 0 {
		t.Error("no latencies: want 0")
	}
}

// The cluster's CPU time is read from /proc and grows with its work,
// including a session's that has just ended (after waits for its process
// to be reaped).
func TestServerCPU_countsASessionThatEnded(t *testing.T) {
	admin := pgtest.Require(t)
	u := pgtest.DB(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	s := newServerCPU(ctx, c)
	if s == nil {
		t.Skip("the cluster's processes are not readable here (another machine)")
	}
	w, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	db := w.Config().Database
	if !s.busy(db) {
		t.Fatalf("no server process of %s seen", db)
	}
	before := s.now()
	if _, err := w.Exec(ctx, "SELECT count(*) FROM generate_series(1, 5000000)"); err != nil {
		t.Fatal(err)
	}
	w.Close(ctx)
	if d := s.after(db) - before; d < 100*time.Millisecond {
		t.Fatalf("the cluster's CPU time grew by %s over a query of about a second", d)
	}
	// Not asserted: busy also counts any other session's exiting process,
	// and in CI other packages' tests share the cluster (this failed there).
	t.Logf("after the session ended, a server process still busy: %v", s.busy(db))
}

// The reader's monitor sees a wait for a lock, and about how long it was:
// a session holding the table's ACCESS EXCLUSIVE lock for 300 ms.
func TestReader_seesItsWaitForALock(t *testing.T) {
	u := pgtest.DB(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE t AS SELECT i FROM generate_series(1, 1000) i"); err != nil {
		t.Fatal(err)
	}
	rd, err := startReader(ctx, u, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := c.Exec(ctx, "BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(0.3); COMMIT"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	s := rd.stop()
	if s.errors != 0 || len(s.lat) < 3 {
		t.Fatalf("reader: %s, %d errors (%v)", s, s.errors, s.first)
	}
	if s.locks.waiting == 0 || s.locks.longest < 200*time.Millisecond || s.locks.longest > 2*time.Second {
		t.Fatalf("the monitor saw %+v, want a wait of about 300 ms", s.locks)
	}
	if s.quantile(1) < 250*time.Millisecond {
		t.Fatalf("the slowest query took %s, under the lock's 300 ms", s.quantile(1))
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}
