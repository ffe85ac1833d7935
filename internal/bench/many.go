package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
)

// Defaults of the many-datasets section (a statewide
// subscription).
const (
	// DefaultManyDatasets is how many datasets the subscription holds.
	DefaultManyDatasets = 2000
	// DefaultManyEvents is about how many events the catch-up's log holds.
	DefaultManyEvents = 20000
	// manyMinRows and manyMaxRows bound a dataset's rows.
	manyMinRows, manyMaxRows = 1000, 20000
	// manyCounties is how many counties the datasets are filed under.
	manyCounties = 67
	// manyUpdateEvery: each round of the log updates one dataset in this
	// many (the others get only a stale event).
	manyUpdateEvery = 10
)

// manyTopics are the topics the datasets are spread over.
var manyTopics = []string{"development-activity", "parcels-property", "zoning-land-use", "code-enforcement", "transportation",
	"utilities", "public-safety", "environment", "elections", "business-licenses"}

// manySize is the row count of dataset i: between manyMinRows and
// manyMaxRows, most of them small (1,000 × 20^(u²), u spread evenly), about
// 4,300 on average.
func manySize(i int) int64 {
	u := math.Mod(float64(i)*0.6180339887498949, 1)
	return int64(manyMinRows * math.Pow(manyMaxRows/manyMinRows, u*u))
}

// manyFixture is a statewide subscription on the emulator: its datasets,
// their first versions' files, and the files of both kinds of replica
// once bootstrapped.
type manyFixture struct {
	em       *emulator.Emulator
	sub      string
	ids      []string
	sizes    []int64
	rows     int64
	files    [][]string // each dataset's first snapshot parts
	parquetB int64
	engine   string // a closed replica file, bootstrapped
	raw      string // a closed DuckDB file of the same tables, by DuckDB alone
}

// many measures the many-datasets section: the bootstrap of a statewide
// subscription over an imitated office link, status on its file, and the
// catch-up of a log of small updates and state-only events.
func (r *run) many(ctx context.Context) error {
	if !r.want("many") {
		return nil
	}
	em, err := r.newEmulator("emulator-many", emulator.Options{CheckInterval: time.Minute})
	if err != nil {
		return err
	}
	defer closeEmulator(em)
	f, err := r.buildMany(ctx, em)
	if err != nil {
		return err
	}
	defer func() {
		removeDB(f.engine)
		removeDB(f.raw)
	}()
	err = r.withManyHistory(func() error {
		for _, step := range []func(context.Context, *manyFixture) error{r.manyBootstrap, r.manyAtScale, r.manyOpen, r.manyLog} {
			if err := step(ctx, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The catalog's measure builds tables of its own, history or not.
	return r.manyTables(ctx, f)
}

// buildMany adds the datasets, filed under counties of one state and
// spread over topics, a subscription to the state's counties, and their
// first versions.
func (r *run) buildMany(ctx context.Context, em *emulator.Emulator) (*manyFixture, error) {
	n := r.cfg.ManyDatasets
	f := &manyFixture{em: em}
	for c := 1; c <= manyCounties; c++ {
		em.AddPlace(emulator.Place{ID: fmt.Sprintf("fl-c%02d", c), Name: fmt.Sprintf("County %02d, FL", c), Kind: "county", State: "fl"})
	}
	for _, t := range manyTopics {
		em.AddTopic(t, t)
	}
	for i := range n {
		id := fmt.Sprintf("ds_fl_%04d", i)
		county, topic := i%manyCounties+1, manyTopics[i/manyCounties%len(manyTopics)]
		if err := em.AddDataset(emulator.DatasetSpec{ID: id, Title: fmt.Sprintf("County %02d %s %d", county, topic, i),
			PlaceID: fmt.Sprintf("fl-c%02d", county), Topic: topic, KeyColumns: permitKey, Columns: permitColumns}); err != nil {
			return nil, err
		}
		f.ids, f.sizes = append(f.ids, id), append(f.sizes, manySize(i))
		f.rows += f.sizes[i]
	}
	var err error
	if f.sub, err = em.CreateSubscription(emulator.SubscriptionSpec{Name: "statewide", Places: []string{"fl-counties"}}); err != nil {
		return nil, err
	}
	r.logf("emulator: building %d datasets of %d–%d rows, %s rows in all", n, slices.Min(f.sizes), slices.Max(f.sizes), rows(f.rows))
	start := time.Now()
	for i, id := range f.ids {
		if _, err := em.PublishQuery(ctx, id, permitsSQL(f.sizes[i], nil)); err != nil {
			return nil, err
		}
		files, err := em.SnapshotFiles(ctx, id, 1)
		if err != nil {
			return nil, err
		}
		f.files = append(f.files, files)
		for _, p := range files {
			if st, err := os.Stat(p); err == nil {
				f.parquetB += st.Size()
			}
		}
	}
	r.logf("emulator: built in %s, %s of Parquet", time.Since(start).Round(time.Second), mib(float64(f.parquetB)))
	return f, nil
}

// rawLoadMany is DuckDB alone: a fresh file, one CREATE TABLE … AS SELECT
// * FROM read_parquet(…) per dataset, close.
func (r *run) rawLoadMany(ctx context.Context, f *manyFixture, path string) (cost, error) {
	settle()
	stop := startWatch()
	err := withPlain(ctx, path, r.eo, func(db *sql.DB) error {
		for i, id := range f.ids {
			q := fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM read_parquet(%s)", storage.Ident(storage.TableName(id)), fileList(f.files[i]))
			if _, err := db.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	return stop(), err
}

// manyBootstrap measures the bootstrap of every dataset over the imitated
// office link with the client's rate limits on, as a user would run it,
// against the lower bound max(bytes / bandwidth, DuckDB alone's CTAS of
// the same files); then the engine's own cost, on loopback with the
// limits off, against DuckDB alone; and the file's bytes a table.
func (r *run) manyBootstrap(ctx context.Context, f *manyFixture) error {
	wire := r.cfg.Wire
	limited := r.eo
	limited.RateLimit = true
	c := &manyBootstrapCosts{}
	wired, local, raw, rate := &c.wired, &c.local, &c.raw, &c.rate
	for i := range r.cfg.Repeat {
		ep, lp, rp := r.path("many-engine"), r.path("many-engine-local"), r.path("many-raw")
		steps := []func() error{
			func() error {
				f.em.SetWire(wire)
				defer f.em.SetWire(emulator.Wire{})
				run, err := r.manySync(ctx, f, ep, limited, len(f.ids))
				wired.Add(run.Total)
				rate.Add(float64(len(f.ids)) / run.Total.Wall.Seconds())
				c.bytes, c.calls = run.Bytes, run.Calls
				return err
			},
			func() error {
				run, err := r.manySync(ctx, f, lp, r.eo, len(f.ids))
				local.Add(run.Total)
				return err
			},
			func() error {
				d, err := r.rawLoadMany(ctx, f, rp)
				raw.Add(d)
				return err
			},
		}
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		r.logf("many bootstrap, run %d: over the wire %s, on loopback %s, DuckDB alone %s", i+1,
			secs(wired.Wall.Runs[i]), secs(local.Wall.Runs[i]), secs(raw.Wall.Runs[i]))
		removeDB(lp)
		if i < r.cfg.Repeat-1 {
			removeDB(ep)
			removeDB(rp)
		} else {
			f.engine, f.raw = ep, rp
		}
	}
	r.reportManyBootstrap(f, c)
	return nil
}

// manyBootstrapCosts is what the statewide bootstrap's runs gather: over
// the link, on loopback, DuckDB alone, the datasets a second, and the
// link's bytes and calls of the last run over it.
type manyBootstrapCosts struct {
	wired, local, raw Costs
	rate              Quantity
	bytes             int64
	calls             map[string]int
}

// reportManyBootstrap adds the bootstrap's lines: the link's ratio against
// max(bytes / bandwidth, DuckDB alone), loopback's, and the file's bytes.
func (r *run) reportManyBootstrap(f *manyFixture, c *manyBootstrapCosts) {
	wire := r.cfg.Wire
	wireBound := time.Duration(float64(c.bytes) / float64(wire.Bandwidth) * float64(time.Second))
	bound := max(wireBound, c.raw.Wall.Median())
	ratio := c.wired.Wall.Seconds() / bound.Seconds()
	size := fmt.Sprintf("%d datasets, %s rows, %s", len(f.ids), rows(f.rows), mib(float64(c.bytes)))
	r.rep.target(Line{What: fmt.Sprintf("7a. bootstrap of a statewide subscription over a %s link (%s a request), rate limits on", mbps(wire.Bandwidth), wire.Latency),
		Size:   size,
		Engine: fmt.Sprintf("%s; %s datasets/s; %s", c.wired.String(), c.rate.Format(func(v float64) string { return fmt.Sprintf("%.0f", v) }), callText(c.calls)),
		Versus: fmt.Sprintf("max(bytes / bandwidth %s, DuckDB alone %s)", secs(wireBound), c.raw.Wall.String()),
		Ratio:  ratio, CPURatio: math.NaN()}, 1.3, true)
	r.rep.Summary["many_bootstrap_ratio"] = ratio
	lr, lcpu := ratios(c.local, c.raw)
	r.rep.add(Line{What: "7a. the same on loopback, rate limits off (the engine's own cost)", Size: size, Engine: c.local.String(),
		Versus: "DuckDB alone, a CREATE TABLE AS each: " + c.raw.String(), Ratio: lr, CPURatio: lcpu})
	eb, rb := fileSize(f.engine), fileSize(f.raw)
	r.rep.target(Line{What: "7a. file bytes a small table after the bootstrap", Size: fmt.Sprintf("%d tables", len(f.ids)),
		Engine: fmt.Sprintf("%s (%s a table)", mib(float64(eb)), kib(float64(eb)/float64(len(f.ids)))),
		Versus: fmt.Sprintf("DuckDB alone: %s (%s a table)", mib(float64(rb)), kib(float64(rb)/float64(len(f.ids)))),
		Ratio:  float64(eb) / float64(rb), CPURatio: math.NaN()}, 1.2, true)
}

// manySync bootstraps or catches up the file at path with the fixture's
// subscription and checks what it loaded or merged.
func (r *run) manySync(ctx context.Context, f *manyFixture, path string, eo engineOpts, wantLoads int) (syncRun, error) {
	run, err := syncWith(ctx, f.em.URL(), f.em.APIKey(), f.sub, path, eo)
	if err == nil && (run.Result.SnapshotsLoaded != wantLoads || len(run.Result.Failed) > 0) {
		err = fmt.Errorf("sync of %d datasets loaded %d snapshots, %d failed: %w", len(f.ids), run.Result.SnapshotsLoaded, len(run.Result.Failed), errMismatch)
	}
	return run, err
}

// manyAtScale measures what DuckDB's number of tables drives: `status`
// on the bootstrapped file, as a user runs it (the binary's own status
// command in a fresh process, which reads the status the sync kept beside
// the file, docs/decisions.md 51; and again without it, as after another
// writer, opening the file read-only; in this process, once, when there
// is no binary), and a checkpoint after a small commit.
func (r *run) manyAtScale(ctx context.Context, f *manyFixture) error {
	var status, opened, ckpt Stat
	how := "the status command in a child process"
	for i := range max(r.cfg.Repeat, 3) {
		settle()
		if r.cfg.Exe != "" {
			d, err := r.statusChild(ctx, f, false)
			if err != nil {
				return err
			}
			status.Add(d)
			settle()
			if d, err = r.statusChild(ctx, f, true); err != nil {
				return err
			}
			opened.Add(d)
		} else if i == 0 {
			how = "replica.OpenReader and Reader.Status, in this process"
			d, err := statusInProcess(ctx, f, r.eo)
			if err != nil {
				return err
			}
			status.Add(d)
		}
		d, err := r.smallCommitCheckpoint(ctx, f.engine)
		if err != nil {
			return err
		}
		ckpt.Add(d)
	}
	ms := status.Median().Seconds() * 1000
	r.rep.target(Line{What: "7b. `status` on the statewide file (" + how + ")", Size: fmt.Sprintf("%d datasets, %s rows", len(f.ids), rows(f.rows)),
		Engine: status.String(), Versus: fmt.Sprintf("%.0f ms", ms), Ratio: ms, CPURatio: math.NaN()}, 500, true)
	r.rep.Summary["status_ms"] = ms
	if len(opened.Runs) > 0 {
		r.rep.add(Line{What: "7b. the same with no status kept beside the file (after another writer): the file opened read-only",
			Size: fmt.Sprintf("%d datasets, %s rows", len(f.ids), rows(f.rows)), Engine: opened.String(), Ratio: math.NaN(), CPURatio: math.NaN()})
	}
	r.rep.add(Line{What: "7b. a checkpoint after a small commit (DuckDB's cost grows with the tables)", Size: fmt.Sprintf("%d tables", len(f.ids)),
		Engine: ckpt.String(), Ratio: math.NaN()})
	return nil
}

// statusChild times the status command in a child process; aside, with
// the status its sync kept beside the file moved away for the run.
func (r *run) statusChild(ctx context.Context, f *manyFixture, aside bool) (time.Duration, error) {
	kept := duckdb.SummaryPath(f.engine)
	if _, ok := replica.StoredStatus(f.engine); !ok {
		return 0, fmt.Errorf("status: no status kept beside %s for its state: %w", f.engine, errMismatch)
	}
	if aside {
		if err := os.Rename(kept, kept+".aside"); err != nil {
			return 0, fmt.Errorf("status: move the kept status aside: %w", err)
		}
		defer os.Rename(kept+".aside", kept)
	}
	start := time.Now()
	out, err := exec.CommandContext(ctx, r.cfg.Exe, "status", "--db", f.engine, "--json").Output()
	if err != nil {
		return 0, fmt.Errorf("status: %w", err)
	}
	d := time.Since(start)
	if n := strings.Count(string(out), `"datasetId"`); n != len(f.ids) {
		return 0, fmt.Errorf("status lists %d datasets, want %d: %w", n, len(f.ids), errMismatch)
	}
	return d, nil
}

// statusInProcess opens the file read-only and reads its status.
func statusInProcess(ctx context.Context, f *manyFixture, eo engineOpts) (time.Duration, error) {
	start := time.Now()
	rd, err := replica.OpenReader(ctx, f.engine, replica.ReaderOptions{Threads: eo.Threads})
	if err != nil {
		return 0, err
	}
	st, err := rd.Status(ctx)
	if cerr := rd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if len(st.Datasets) != len(f.ids) {
		return 0, fmt.Errorf("status lists %d datasets, want %d: %w", len(st.Datasets), len(f.ids), errMismatch)
	}
	return time.Since(start), nil
}

// smallCommitCheckpoint commits one small change to a copy of the file and
// times the CHECKPOINT after it.
func (r *run) smallCommitCheckpoint(ctx context.Context, src string) (time.Duration, error) {
	p := r.path("many-ckpt")
	defer removeDB(p)
	if err := copyDB(src, p); err != nil {
		return 0, err
	}
	var d time.Duration
	err := withPlain(ctx, p, r.eo, func(db *sql.DB) error {
		if _, err := db.ExecContext(ctx, "UPDATE _ploti.subscription SET last_sync_at = now()"); err != nil {
			return err
		}
		start := time.Now()
		_, err := db.ExecContext(ctx, "CHECKPOINT")
		d = time.Since(start)
		return err
	})
	return d, err
}

func mbps(bw int64) string { return fmt.Sprintf("%.0f MB/s", float64(bw)/1e6) }

func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

// callText lists API calls by kind.
func callText(calls map[string]int) string {
	kinds := make([]string, 0, len(calls))
	total := 0
	for k, n := range calls {
		kinds = append(kinds, k)
		total += n
	}
	slices.Sort(kinds)
	s := fmt.Sprintf("%d API calls", total)
	for i, k := range kinds {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		s += fmt.Sprintf("%s%d %s", sep, calls[k], k)
	}
	return s
}
