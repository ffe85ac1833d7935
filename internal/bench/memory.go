package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// ChildCommand is the hidden ploti-replica command that runs one measured
// step in a process of its own, so its peak memory is that step's alone.
const ChildCommand = "bench-child"

// childEnv carries the child's job (JSON), so the API key stays off the
// command line.
const childEnv = "PLOTI_BENCH_CHILD"

// childJob is what a child process does.
type childJob struct {
	Mode        string // "sync" (the engine), "raw-load" or "raw-catchup" (DuckDB alone)
	APIURL      string
	APIKey      string
	Sub         string
	Path        string
	Table       string
	Files       []string
	Threads     int
	MemoryLimit string
	Stream      bool     // a "sync" that loads the snapshot as it downloads
	CPUProfile  string   // a Go CPU profile of the child's job, when set
	History     []string // a "sync" that keeps these datasets' history
	Pages       string   // a "raw-catchup"'s log: a JSON file of its pages' (table, changes file) pairs
}

// RunChild is the body of ChildCommand: it runs the job in the
// environment and prints how long it took and the process's peak RSS.
func RunChild(ctx context.Context, w io.Writer) error {
	var job childJob
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &job); err != nil {
		return fmt.Errorf("%s: read job from $%s: %w", ChildCommand, childEnv, err)
	}
	eo := engineOpts{Threads: job.Threads, MemoryLimit: job.MemoryLimit, Stream: job.Stream, History: job.History}
	if job.CPUProfile != "" {
		stop, err := StartCPUProfile(job.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	start := time.Now()
	var err error
	switch job.Mode {
	case "sync":
		var run syncRun
		run, err = syncWith(ctx, job.APIURL, job.APIKey, job.Sub, job.Path, eo)
		if err == nil {
			fmt.Fprintf(w, "%s%d %d %d\n", syncPrefix, run.Total.Wall, run.Total.CPU, run.Result.EventsSeen)
		}
	case "raw-load":
		_, err = rawLoad(ctx, job.Path, job.Table, job.Files, eo)
	case "raw-catchup":
		err = rawCatchUpChild(ctx, w, job, eo)
	default:
		err = fmt.Errorf("unknown mode %q", job.Mode)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", ChildCommand, job.Mode, err)
	}
	peak, ok := vmHWM()
	if !ok {
		return errNoRSS
	}
	fmt.Fprintf(w, "%s done in %s\n%s%d\n", job.Mode, time.Since(start).Round(time.Millisecond), peakPrefix, peak)
	return nil
}

// StartCPUProfile writes a Go CPU profile of the process to path until
// the returned stop is called.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// vmHWM is the process's peak resident set in bytes, as /proc/self/status
// tells it (the rusage of a child started by fork and exec may carry its
// parent's peak, so the child reads its own).
func vmHWM() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

const peakPrefix = "peak_rss_bytes="

// syncPrefix starts the line a "sync" child prints of its sync: the wall
// and CPU nanoseconds of the open, sync and close, and the events seen.
const syncPrefix = "sync_wall_cpu_events="

// runChild runs a job in a child process and returns the lines it printed
// and the child's kernel time and page faults.
func (r *run) runChild(ctx context.Context, job childJob) ([]string, kernel, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return nil, kernel{}, err
	}
	cmd := exec.CommandContext(ctx, r.cfg.Exe, ChildCommand)
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, kernel{}, fmt.Errorf("child %s: %w: %s", job.Mode, err, bytes.TrimSpace(out.Bytes()))
	}
	return strings.Split(out.String(), "\n"), childKernel(cmd.ProcessState), nil
}

// child runs a job in a child process and returns its peak RSS in bytes.
func (r *run) child(ctx context.Context, job childJob) (float64, error) {
	lines, _, err := r.runChild(ctx, job)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := scanChildLine(lines, peakPrefix, &n); err != nil {
		return 0, fmt.Errorf("child %s: %w", job.Mode, err)
	}
	r.logf("child %s (memory limit %q): peak RSS %s", job.Mode, job.MemoryLimit, mib(float64(n)))
	return float64(n), nil
}

// childSync runs a "sync" job in a child process and returns what the
// sync took there (wall and the child's CPU, its own process's alone), the
// child's kernel time and page faults, and the events it saw.
func (r *run) childSync(ctx context.Context, job childJob) (cost, kernel, int, error) {
	job.Mode = "sync"
	lines, k, err := r.runChild(ctx, job)
	if err != nil {
		return cost{}, k, 0, err
	}
	var wall, cpu int64
	var events int
	if err := scanChildLine(lines, syncPrefix, &wall, &cpu, &events); err != nil {
		return cost{}, k, 0, fmt.Errorf("child sync: %w", err)
	}
	return cost{time.Duration(wall), time.Duration(cpu)}, k, events, nil
}

// scanChildLine scans the values of the line of a child's output that
// starts with prefix into vs.
func scanChildLine(lines []string, prefix string, vs ...any) error {
	for _, line := range lines {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			if _, err := fmt.Sscan(v, vs...); err != nil {
				return fmt.Errorf("%q: %w", line, err)
			}
			return nil
		}
	}
	return fmt.Errorf("no %s line: %s", prefix, strings.TrimSpace(strings.Join(lines, "\n")))
}

var errNoRSS = errors.New("peak RSS of a child process is not available on this system")

// memory measures the peak RSS of a process that bootstraps the dataset
// (the engine), default and with MemoryLimit, against a process that
// loads the same files with DuckDB alone under the same settings: the
// engine twice, with the file downloaded whole first (rss_ratio) and
// loaded run by run as it downloads (stream_rss_ratio; the streamed
// load's set of record-id hashes is part of its peak).
func (r *run) memory(ctx context.Context, b *bigDataset) error {
	if r.cfg.Exe == "" {
		r.rep.note("memory: not measured (no binary to run child processes)")
		return nil
	}
	files, err := b.em.SnapshotFiles(ctx, b.id, b.version)
	if err != nil {
		return err
	}
	worst, worstStream := math.NaN(), math.NaN()
	for _, limit := range []string{"", MemoryLimit} {
		var eng, stream, raw Quantity
		for range r.cfg.Repeat {
			for _, side := range []struct {
				q      *Quantity
				stream bool
			}{{&eng, false}, {&stream, true}} {
				p := r.path("rss-engine")
				rss, err := r.child(ctx, childJob{Mode: "sync", APIURL: b.em.URL(), APIKey: b.em.APIKey(), Sub: b.sub, Path: p,
					Threads: r.cfg.Threads, MemoryLimit: limit, Stream: side.stream})
				removeDB(p)
				if err != nil {
					return err
				}
				side.q.Add(rss)
			}
			p := r.path("rss-raw")
			rss, err := r.child(ctx, childJob{Mode: "raw-load", Path: p, Table: b.table, Files: files, Threads: r.cfg.Threads, MemoryLimit: limit})
			removeDB(p)
			if err != nil {
				return err
			}
			raw.Add(rss)
		}
		setting := "memory_limit default"
		if limit != "" {
			setting = "Options.MemoryLimit " + limit
		}
		size := fmt.Sprintf("%s rows, %s", rows(b.n), setting)
		worst = worse(worst, eng.Median()/raw.Median())
		worstStream = worse(worstStream, stream.Median()/raw.Median())
		r.rep.target(Line{What: "4. peak RSS of a process loading the snapshot", Size: size,
			Engine: eng.Format(mib), Versus: "DuckDB alone: " + raw.Format(mib), Ratio: eng.Median() / raw.Median()}, 1.2, true)
		r.rep.target(Line{What: "4. peak RSS of a process loading the snapshot as it downloads (the record ids' set included)", Size: size,
			Engine: stream.Format(mib), Versus: "DuckDB alone, the whole file: " + raw.Format(mib), Ratio: stream.Median() / raw.Median()}, 1.2, true)
	}
	r.rep.Summary["rss_ratio"] = worst
	r.rep.Summary["stream_rss_ratio"] = worstStream
	return nil
}

// worse is the larger of two ratios, a NaN (none yet) giving way.
func worse(a, b float64) float64 {
	if math.IsNaN(a) || b > a {
		return b
	}
	return a
}
