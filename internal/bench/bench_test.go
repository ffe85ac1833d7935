package bench

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// The benchmarks measure the pieces one at a time, on fixtures built once
// per test binary (the emulator's builds are slow, and no measure). They
// run only under -bench:
//
//	go test -run '^$' -bench . -benchtime 3x ./internal/bench/
//	PLOTI_BENCH_ROWS=1000000 go test -run '^$' -bench 'Load|Merge' -benchtime 3x -cpuprofile cpu.out ./internal/bench/
//
// PLOTI_BENCH_ROWS sets the snapshot size (default 200k).

var fx struct {
	mu   sync.Mutex
	run  *run
	done func()
	ems  []*emulator.Emulator
	big  *bigDataset
	v2   *mergeStep
	log  *logFixture
	upd  *updatesFixture
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, em := range fx.ems {
		closeEmulator(em)
	}
	if fx.done != nil {
		fx.done()
	}
	os.Exit(code)
}

func benchRows() int64 {
	if n, err := strconv.ParseInt(os.Getenv("PLOTI_BENCH_ROWS"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 200000
}

// fixtureRun is the shared run, logging to the test output when -v.
func fixtureRun(b *testing.B) *run {
	if fx.run == nil {
		cfg := Config{Repeat: 1, CatchUpDatasets: 10, Events: 1000, UpdateRows: 20000, Updates: 20}
		if testing.Verbose() {
			cfg.Log = os.Stderr
		}
		r, done, err := newRun(cfg)
		if err != nil {
			b.Fatal(err)
		}
		fx.run, fx.done = r, done
	}
	return fx.run
}

func fixtureEmulator(b *testing.B, name string, opts emulator.Options) *emulator.Emulator {
	em, err := fixtureRun(b).newEmulator(name, opts)
	if err != nil {
		b.Fatal(err)
	}
	fx.ems = append(fx.ems, em)
	return em
}

// bigFixture is a permits dataset of benchRows rows at version 1, with an
// engine file and a DuckDB-alone file loaded from it.
func bigFixture(b *testing.B) *bigDataset {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if fx.big == nil {
		ctx := context.Background()
		r := fixtureRun(b)
		big, err := r.newBig(ctx, fixtureEmulator(b, "emulator-snapshots", emulator.Options{}), benchRows())
		if err != nil {
			b.Fatal(err)
		}
		big.engine, big.raw = r.path("engine"), r.path("raw")
		if _, err := r.loadEngineOnce(ctx, big, big.engine, false); err != nil {
			b.Fatal(err)
		}
		if _, err := r.loadRawOnce(ctx, big, big.raw); err != nil {
			b.Fatal(err)
		}
		fx.big = big
	}
	return fx.big
}

// mergeFixture is version 2 of bigFixture, with 1% of its rows changed.
func mergeFixture(b *testing.B) (*bigDataset, *mergeStep) {
	big := bigFixture(b)
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if fx.v2 == nil {
		st, err := fixtureRun(b).nextVersion(context.Background(), big, 0.01)
		if err != nil {
			b.Fatal(err)
		}
		fx.v2 = st
	}
	return big, fx.v2
}

func report(b *testing.B, d time.Duration) {
	b.ReportMetric(d.Seconds()*1e3, "ms/op-measured")
}

func BenchmarkSnapshotLoad(b *testing.B) {
	ctx := context.Background()
	big := bigFixture(b)
	r := fixtureRun(b)
	b.Run("engine", func(b *testing.B) {
		var total time.Duration
		for range b.N {
			p := r.path("bench-load")
			run, err := r.loadEngineOnce(ctx, big, p, false)
			removeDB(p)
			if err != nil {
				b.Fatal(err)
			}
			total += run.Engine().Wall
		}
		report(b, total/time.Duration(b.N))
	})
	b.Run("duckdb", func(b *testing.B) {
		var total time.Duration
		for range b.N {
			p := r.path("bench-raw")
			d, err := r.loadRawOnce(ctx, big, p)
			removeDB(p)
			if err != nil {
				b.Fatal(err)
			}
			total += d.Wall
		}
		report(b, total/time.Duration(b.N))
	})
}

func BenchmarkMerge1Percent(b *testing.B) {
	ctx := context.Background()
	big, st := mergeFixture(b)
	r := fixtureRun(b)
	for _, kind := range []string{"engine", "reload", "duckdb"} {
		b.Run(kind, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				p := r.path("bench-merge")
				from := big.engine
				if kind == "duckdb" {
					from = big.raw
				}
				if err := copyDB(from, p); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				d, _, err := r.mergeOnce(ctx, big, st, kind, p)
				b.StopTimer()
				removeDB(p)
				if err != nil {
					b.Fatal(err)
				}
				total += d.Wall
				b.StartTimer()
			}
			report(b, total/time.Duration(b.N))
		})
	}
}

func BenchmarkCatchUpStateOnly(b *testing.B) {
	ctx := context.Background()
	r := fixtureRun(b)
	fx.mu.Lock()
	if fx.log == nil {
		f, err := r.buildLog(ctx, fixtureEmulator(b, "emulator-log", emulator.Options{CheckInterval: time.Minute}), r.cfg.CatchUpDatasets, r.cfg.Events)
		if err != nil {
			fx.mu.Unlock()
			b.Fatal(err)
		}
		fx.log = f
	}
	fx.mu.Unlock()
	var total time.Duration
	var events int
	for range b.N {
		run, err := r.walk(ctx, fx.log)
		if err != nil {
			b.Fatal(err)
		}
		total += run.Engine().Wall
		events += run.Result.EventsSeen
	}
	b.ReportMetric(float64(events)/total.Seconds(), "events/s")
}

func BenchmarkSmallUpdates(b *testing.B) {
	ctx := context.Background()
	r := fixtureRun(b)
	fx.mu.Lock()
	if fx.upd == nil {
		f, err := r.buildUpdates(ctx, fixtureEmulator(b, "emulator-updates", emulator.Options{}), r.cfg.CatchUpDatasets, r.cfg.UpdateRows, r.cfg.Updates)
		if err != nil {
			fx.mu.Unlock()
			b.Fatal(err)
		}
		fx.upd = f
	}
	fx.mu.Unlock()
	for _, kind := range []string{"engine", "duckdb"} {
		b.Run(kind, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				d, _, err := r.updatesOnce(ctx, fx.upd, kind)
				if err != nil {
					b.Fatal(err)
				}
				total += d.Wall
			}
			b.ReportMetric(float64(b.N*fx.upd.updates)/total.Seconds(), "updates/s")
		})
	}
}
