package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/internal/bench"
)

type benchCmd struct {
	env     *Env
	Rows    string
	Quick   bool
	Repeat  int
	Threads int
	Dir     string
	Only    []string
	Many    int
	Events  int
	Tables  int
	// ManyHistory runs the many section with every dataset keeping history.
	ManyHistory bool
	// WatchRows is the watched dataset's size.
	WatchRows string
	// Postgres is the PostgreSQL section's admin URL; PostgresRows its size.
	Postgres     string
	PostgresRows string
	// CPUProfile is a file for a Go CPU profile of the whole run.
	CPUProfile string
	// MemoryLimit is the scale section's memory limit.
	MemoryLimit string
}

func newBenchCmd(env *Env) *cobra.Command {
	b := &benchCmd{env: env}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the engine against DuckDB's own load and merge speed, side by side",
		Long: `Build permits-like datasets on the bundled emulator and measure, each three
times (median and range): a snapshot load against DuckDB's CREATE TABLE AS
SELECT from read_parquet (the loopback download reported apart), a changes
merge of 1% (also 0.01% and 10%) against a full reload and against DuckDB's
bare DELETE and INSERT, a catch-up of the event log, a watched dataset read
whole through rows (rows a second) and a recorded watch version of about 100
rows merged into it against DuckDB alone applying the same rows, the peak
memory of a loading process, the file size after reloads, the demo's time to
its first answer, and a statewide subscription (--only many): 2,000 datasets
of 1k-20k rows bootstrapped over an imitated 50 MB/s, 40 ms link with the
rate limits on, status on its file, the catch-up of a 20,000-event log,
and DuckDB's catalog with 5,000 small tables (open time, a checkpoint
after a small commit, bytes a table), the engine's file against DuckDB
alone's. The largest snapshot is also bootstrapped over that link,
download included. With a PostgreSQL (--postgres, default
$PLOTI_TEST_POSTGRES; --only postgres): a 1M-row bootstrap into a fresh
database against PostgreSQL's own COPY of the same rows, a 1% merge against
its raw DELETE and INSERT, and a reader's latency during a merge and a
reload. The table goes to stdout, then one summary line.

--quick is the smoke test: 1M rows, a smaller catch-up, 60 datasets and
20k rows in PostgreSQL, about two minutes on two cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return b.run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&b.Rows, "rows", "1000000,10000000", "snapshot sizes to load, comma separated (the largest drives merges, memory and file size)")
	f.BoolVar(&b.Quick, "quick", false, "the smoke test: 1M rows, a smaller catch-up")
	f.IntVar(&b.Repeat, "repeat", bench.DefaultRepeat, "runs of each measurement")
	f.IntVar(&b.Threads, "threads", 0, "DuckDB threads for the engine and for DuckDB alone (0: all cores)")
	f.StringVar(&b.Dir, "dir", "", "scratch directory (default a temporary one, removed after)")
	f.IntVar(&b.Many, "datasets", 0, "datasets of the statewide subscription (default 2000; 60 with --quick)")
	f.IntVar(&b.Events, "many-events", 0, "about how many events its catch-up's log holds (default 20000; 600 with --quick)")
	f.IntVar(&b.Tables, "many-tables", 0, "small tables the catalog measure builds, in the engine's file and DuckDB alone's (default 5000; 120 with --quick)")
	f.BoolVar(&b.ManyHistory, "many-history", false, "run the many section with every dataset keeping history (--history all) on the engine's side; its lines carry no target, its summary keys are many_history_bootstrap_ratio and many_history_events_per_s")
	f.StringVar(&b.WatchRows, "watch-rows", "1000000", "the watched dataset's size (its whole read through rows, and a recorded version merged into it)")
	f.StringVar(&b.Postgres, "postgres", env.Getenv("PLOTI_TEST_POSTGRES"), "a PostgreSQL superuser's URL for the postgres section (it makes a database of its own and drops it; default $PLOTI_TEST_POSTGRES; none: skipped)")
	f.StringVar(&b.PostgresRows, "postgres-rows", "1000000", "the postgres section's snapshot size (20k with --quick)")
	f.StringVar(&b.CPUProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file (DuckDB's time shows under the Go calls that ran its statements; go tool pprof reads it), and the many section's catch-up run in a child process to FILE.catchup")
	f.StringSliceVar(&b.Only, "only", nil, "measure only these sections: "+strings.Join(bench.Sections, ", ")+" (merge, history and publish run load too; scale runs only when named)")
	f.StringVar(&b.MemoryLimit, "memory-limit", "", "the scale section's memory limit for the peak-RSS measure, e.g. 2GB (default "+bench.MemoryLimit+")")
	return cmd
}

// newBenchChildCmd is the hidden command bench runs in child processes to
// measure one step's peak memory on its own.
func newBenchChildCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:    bench.ChildCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return bench.RunChild(cmd.Context(), env.Stdout) },
	}
}

func (b *benchCmd) run(ctx context.Context) error {
	cfg := bench.Config{}
	if b.Quick {
		cfg = bench.Quick()
	} else {
		sizes, err := parseRows(b.Rows)
		if err != nil {
			return &usageError{err}
		}
		cfg.Rows = sizes
	}
	for _, o := range b.Only {
		if !slices.Contains(bench.Sections, o) {
			return &usageError{fmt.Errorf("--only %q: want some of %s", o, strings.Join(bench.Sections, ", "))}
		}
	}
	if b.WatchRows != "" {
		n, err := parseRows(b.WatchRows)
		if err != nil || len(n) != 1 {
			return &usageError{fmt.Errorf("--watch-rows %q: want one size, such as 1000000 or 1M", b.WatchRows)}
		}
		cfg.WatchRows = n[0]
	}
	if err := b.postgres(&cfg); err != nil {
		return err
	}
	cfg.Repeat, cfg.Threads, cfg.Dir, cfg.Only, cfg.Log, cfg.MemoryLimit = b.Repeat, b.Threads, b.Dir, b.Only, b.env.Stderr, b.MemoryLimit
	if b.Many > 0 {
		cfg.ManyDatasets = b.Many
	}
	if b.Events > 0 {
		cfg.ManyEvents = b.Events
	}
	if b.Tables > 0 {
		cfg.ManyTables = b.Tables
	}
	cfg.ManyHistory = b.ManyHistory
	if exe, err := os.Executable(); err == nil {
		cfg.Exe = exe
	}
	if b.CPUProfile != "" {
		cfg.CPUProfile = b.CPUProfile
		stop, err := bench.StartCPUProfile(b.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	rep.WriteTable(b.env.Stdout)
	fmt.Fprintln(b.env.Stdout)
	fmt.Fprintln(b.env.Stdout, rep.SummaryLine())
	return nil
}

// postgres sets the PostgreSQL section's URL and size: --only postgres
// without a URL is a usage error saying how to start a cluster.
func (b *benchCmd) postgres(cfg *bench.Config) error {
	cfg.Postgres = strings.TrimSpace(b.Postgres)
	if cfg.Postgres == "" && slices.Contains(b.Only, "postgres") {
		return &usageError{errors.New("--only postgres: " + bench.PostgresHint)}
	}
	if cfg.Postgres != "" && !strings.HasPrefix(cfg.Postgres, "postgres://") && !strings.HasPrefix(cfg.Postgres, "postgresql://") {
		return &usageError{errors.New("--postgres: want a postgres:// URL, such as postgres://user@/postgres?host=/run/postgresql")}
	}
	if !b.Quick || b.PostgresRows != "1000000" {
		n, err := parseRows(b.PostgresRows)
		if err != nil || len(n) != 1 {
			return &usageError{fmt.Errorf("--postgres-rows %q: want one size, such as 1000000 or 1M", b.PostgresRows)}
		}
		cfg.PostgresRows = n[0]
	}
	return nil
}

// parseRows reads "1000000,10000000" (also "1M,10M", "100k").
func parseRows(s string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(s, ",") {
		p := strings.ToLower(strings.TrimSpace(part))
		mult := int64(1)
		switch {
		case strings.HasSuffix(p, "m"):
			p, mult = strings.TrimSuffix(p, "m"), 1000000
		case strings.HasSuffix(p, "k"):
			p, mult = strings.TrimSuffix(p, "k"), 1000
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(p, "_", ""), 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--rows %q: want sizes such as 1000000,10000000", s)
		}
		out = append(out, n*mult)
	}
	return out, nil
}
