package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// Defaults for Config.
const (
	DefaultRepeat = 3
	// DefaultEvents is the catch-up's event count (over CatchUpDatasets).
	DefaultEvents = 10000
	// DefaultCatchUpDatasets is how many datasets the catch-up spreads over.
	DefaultCatchUpDatasets = 50
	// DefaultUpdateRows is the size of each table the small updates land on.
	DefaultUpdateRows = 100000
	// DefaultReloads is how many reloads the file-size measure makes.
	DefaultReloads = 10
	// MemoryLimit is the Options.MemoryLimit the memory measure also tries.
	MemoryLimit = "1GB"
)

// Config is what to measure.
type Config struct {
	// Rows are the snapshot sizes to load; the largest also drives the
	// merges, the memory and the file-size measures.
	Rows []int64
	// Repeat is how often each measurement runs; DefaultRepeat when zero.
	Repeat int
	// Events is the catch-up's event count; DefaultEvents when zero.
	Events int
	// CatchUpDatasets spreads the catch-up; DefaultCatchUpDatasets when zero.
	CatchUpDatasets int
	// UpdateRows is the table size of the small updates; DefaultUpdateRows when zero.
	UpdateRows int64
	// Updates is how many small updates the catch-up merges; CatchUpDatasets when zero.
	Updates int
	// Reloads is the file-size measure's reload count; DefaultReloads when zero.
	Reloads int
	// WatchRows is the watched dataset's size; DefaultWatchRows when zero.
	WatchRows int64
	// GeometryRows is the table size of the geometry section;
	// DefaultGeometryRows when zero.
	GeometryRows int64
	// Merges are the merge sizes, as fractions of the rows; the issue's
	// 1%, 0.01% and 10% when nil.
	Merges []float64
	// ManyDatasets is the many-datasets section's subscription size;
	// DefaultManyDatasets when zero.
	ManyDatasets int
	// ManyEvents is about how many events its catch-up's log holds;
	// DefaultManyEvents when zero.
	ManyEvents int
	// ManyTables is how many small tables the catalog measure builds;
	// DefaultManyTables when zero.
	ManyTables int
	// ManyHistory runs the many-datasets section with every dataset
	// keeping history (Options.History "all") on the engine's side; DuckDB
	// alone keeps none, so its lines carry no target and its summary keys
	// are its own (many_history.go).
	ManyHistory bool
	// MemoryLimit is the memory limit of the scale section's peak-RSS
	// measure (the engine's Options.MemoryLimit and DuckDB alone's
	// memory_limit); MemoryLimit (the package's) when empty.
	MemoryLimit string
	// CPUProfile, when set, is the run's own Go CPU profile (the caller's
	// to start); the catch-up run in a child process (7c) writes its
	// own beside it, with ".catchup" appended.
	CPUProfile string
	// Postgres is a PostgreSQL superuser's URL for the postgres section,
	// which makes databases of its own there and drops them; the section
	// is skipped, saying so, when it is empty.
	Postgres string
	// PostgresRows is the postgres section's snapshot size;
	// DefaultPostgresRows when zero.
	PostgresRows int64
	// Wire is the imitated link the many-datasets section bootstraps over;
	// emulator.OfficeWire when zero.
	Wire emulator.Wire
	// Only limits the run to these sections (nil: all): load, merge,
	// history and publish (which need load), memory, file, log, updates,
	// watch, geometry, demo, many, postgres.
	Only []string
	// Threads is DuckDB's thread count for the engine and for DuckDB alone
	// (0: DuckDB's default, the machine's cores).
	Threads int
	// Dir is the scratch directory; a temporary one (removed after) when empty.
	Dir string
	// Exe is the ploti-replica binary, run in child processes for peak
	// memory (its hidden ChildCommand) and the demo; empty skips those.
	Exe string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

func (c *Config) defaults() {
	if len(c.Rows) == 0 {
		c.Rows = []int64{1000000}
	}
	c.Rows = slices.Clone(c.Rows)
	slices.Sort(c.Rows)
	if c.Repeat <= 0 {
		c.Repeat = DefaultRepeat
	}
	if c.Events <= 0 {
		c.Events = DefaultEvents
	}
	if c.CatchUpDatasets <= 0 {
		c.CatchUpDatasets = DefaultCatchUpDatasets
	}
	if c.UpdateRows <= 0 {
		c.UpdateRows = DefaultUpdateRows
	}
	if c.Updates <= 0 {
		c.Updates = c.CatchUpDatasets
	}
	if c.Reloads <= 0 {
		c.Reloads = DefaultReloads
	}
	if c.ManyDatasets <= 0 {
		c.ManyDatasets = DefaultManyDatasets
	}
	if c.ManyEvents <= 0 {
		c.ManyEvents = DefaultManyEvents
	}
	if c.ManyTables <= 0 {
		c.ManyTables = DefaultManyTables
	}
	if c.PostgresRows <= 0 {
		c.PostgresRows = DefaultPostgresRows
	}
	if c.Wire == (emulator.Wire{}) {
		c.Wire = emulator.OfficeWire
	}
	if c.WatchRows <= 0 {
		c.WatchRows = DefaultWatchRows
	}
	if c.GeometryRows <= 0 {
		c.GeometryRows = DefaultGeometryRows
	}
	if c.Merges == nil {
		c.Merges = []float64{0.01, 0.0001, 0.1}
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Sections are the parts of a run, for Config.Only.
var Sections = []string{"load", "merge", "history", "publish", "memory", "file", "log", "updates", "watch", "geometry", "demo", "many", "postgres", "scale"}

// Quick is the CI smoke test's configuration: 1M rows, the 1% merge only,
// and a catch-up, a statewide subscription and the PostgreSQL section
// (when Config.Postgres is set) scaled down, so the whole run takes about
// two minutes on two cores.
func Quick() Config {
	return Config{Rows: []int64{1000000}, Merges: []float64{0.01}, Events: 1000, CatchUpDatasets: 20, UpdateRows: 20000, Updates: 20, Reloads: 3,
		ManyDatasets: 60, ManyEvents: 600, ManyTables: 120, GeometryRows: 100000, PostgresRows: 20000}
}

// want reports whether the run measures a section.
func (r *run) want(section string) bool {
	return len(r.cfg.Only) == 0 || slices.Contains(r.cfg.Only, section) ||
		section == "load" && (slices.Contains(r.cfg.Only, "merge") || slices.Contains(r.cfg.Only, "publish") || slices.Contains(r.cfg.Only, "history"))
}

// run is one bench run's shared state.
type run struct {
	cfg Config
	dir string
	rep *Report
	eo  engineOpts
	seq int
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// path is a fresh file name in the scratch directory.
func (r *run) path(name string) string {
	r.seq++
	return filepath.Join(r.dir, fmt.Sprintf("%03d-%s.duckdb", r.seq, name))
}

// Run measures everything Config asks for and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r, cleanup, err := newRun(cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	start := time.Now()
	r.rep.note("machine: %s", machine())
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"snapshots", r.snapshots},
		{"catch-up", r.catchUp},
		{"watch", r.watches},
		{"geometry", r.geometry},
		{"demo", r.demo},
		{"many", r.many},
		{"postgres", r.postgres},
		{"scale", r.scale},
	}
	for _, s := range steps {
		if err := s.fn(ctx); err != nil {
			return r.rep, fmt.Errorf("bench %s: %w", s.name, err)
		}
	}
	r.rep.note("whole run: %s; DuckDB threads: %s", time.Since(start).Round(time.Second), threadsText(cfg.Threads))
	return r.rep, nil
}

// newRun prepares a run in cfg.Dir or a temporary directory; cleanup
// removes the temporary one.
func newRun(cfg Config) (*run, func(), error) {
	cfg.defaults()
	r := &run{cfg: cfg, rep: newReport(), eo: engineOpts{Threads: cfg.Threads}, dir: cfg.Dir}
	if r.dir != "" {
		return r, func() {}, os.MkdirAll(r.dir, 0o755)
	}
	d, err := os.MkdirTemp("", "ploti-bench-")
	if err != nil {
		return nil, nil, err
	}
	r.dir = d
	return r, func() { os.RemoveAll(d) }, nil
}

func threadsText(n int) string {
	if n == 0 {
		return "DuckDB's default (all cores)"
	}
	return fmt.Sprint(n)
}

// newEmulator starts an emulator in the scratch directory.
func (r *run) newEmulator(name string, opts emulator.Options) (*emulator.Emulator, error) {
	opts.NoRateLimit = true
	opts.Dir = filepath.Join(r.dir, name)
	opts.DuckDBThreads = r.cfg.Threads
	em, err := emulator.New(opts)
	if err != nil {
		return nil, err
	}
	if err := em.Start(); err != nil {
		em.Close()
		return nil, err
	}
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	return em, nil
}

// closeEmulator closes an emulator and removes its directory.
func closeEmulator(em *emulator.Emulator) {
	dir := em.Dir()
	em.Close()
	os.RemoveAll(dir)
}

// addPermits adds a permits dataset and a subscription to it alone.
func addPermits(em *emulator.Emulator, id string) (sub string, err error) {
	if err := em.AddDataset(emulator.DatasetSpec{ID: id, Title: "Permits " + id, PlaceID: "fl-orange",
		Topic: "development-activity", KeyColumns: permitKey, Columns: permitColumns}); err != nil {
		return "", err
	}
	return em.CreateSubscription(emulator.SubscriptionSpec{Name: id, DatasetIDs: []string{id}})
}

var errMismatch = errors.New("result does not match the emulator")
