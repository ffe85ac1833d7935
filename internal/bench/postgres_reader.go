package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// readerPause is the reader's pause between two queries: a busy reader,
// leaving the writer some of the machine's two cores.
const readerPause = 2 * time.Millisecond

// pgReader runs one query in a loop on its own session until stopped.
type pgReader struct {
	quit chan struct{}
	done chan readerStats
}

// readerStats are a reader's latencies and errors.
type readerStats struct {
	lat    []time.Duration
	errors int
	first  error
}

// startReader connects to the database at u, runs q once (the plan and
// the caches, untimed) and then in a loop until stop.
func startReader(ctx context.Context, u, q string) (*pgReader, error) {
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	var n int64
	if err := c.QueryRow(ctx, q).Scan(&n); err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("reader: %s: %w", q, err)
	}
	r := &pgReader{quit: make(chan struct{}), done: make(chan readerStats, 1)}
	go func() {
		defer c.Close(context.WithoutCancel(ctx))
		var s readerStats
		for {
			select {
			case <-r.quit:
				r.done <- s
				return
			default:
			}
			start := time.Now()
			err := c.QueryRow(ctx, q).Scan(&n)
			s.lat = append(s.lat, time.Since(start))
			if err != nil {
				s.errors++
				if s.first == nil {
					s.first = err
				}
			}
			time.Sleep(readerPause)
		}
	}()
	return r, nil
}

// stop ends the loop and returns what the reader saw.
func (r *pgReader) stop() readerStats {
	close(r.quit)
	return <-r.done
}

// quantile is the q-th quantile of the latencies (nearest rank).
func (s readerStats) quantile(q float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	v := slices.Clone(s.lat)
	slices.Sort(v)
	i := int(q*float64(len(v))+0.5) - 1
	return v[min(max(i, 0), len(v)-1)]
}

func (s readerStats) p99() time.Duration { return s.quantile(0.99) }

func (s readerStats) String() string {
	return fmt.Sprintf("p50 %s, p99 %s, max %s over %d queries", msText(s.quantile(0.5)), msText(s.p99()), msText(s.quantile(1)), len(s.lat))
}

func msText(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", ms(d))
	}
	return fmt.Sprintf("%.0f ms", ms(d))
}

func firstErr(all []readerStats) error {
	for _, s := range all {
		if s.first != nil {
			return s.first
		}
	}
	return nil
}

// serverCPU reads the CPU time of a PostgreSQL cluster on this machine:
// its postmaster's, the children it has reaped (backends that ended) and
// its live children's (backends, checkpointer, WAL writer, autovacuum),
// from /proc. The engine's work in PostgreSQL happens there, not in this
// process; a step's CPU time is this process's and the cluster's.
type serverCPU struct {
	postmaster int
}

// userHZ is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const userHZ = 100

// newServerCPU finds the cluster's postmaster as the parent of conn's
// server process; nil when that is not readable here (another machine,
// no /proc).
func newServerCPU(ctx context.Context, conn *pgx.Conn) *serverCPU {
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return nil
	}
	f, err := procStat(pid)
	if err != nil || len(f) < 15 {
		return nil
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return nil
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid)); err != nil || !strings.HasPrefix(string(comm), "postgres") {
		return nil
	}
	return &serverCPU{postmaster: ppid}
}

func (s *serverCPU) describe() string {
	if s == nil {
		return "not readable here (cpu ratios are this process's alone, so not shown)"
	}
	return fmt.Sprintf("read from /proc (postmaster pid %d and its children)", s.postmaster)
}

// now is the cluster's CPU time so far; 0 without a cluster to read.
func (s *serverCPU) now() time.Duration {
	if s == nil {
		return 0
	}
	f, err := procStat(s.postmaster)
	if err != nil {
		return 0
	}
	ticks := fieldSum(f, 11, 12, 13, 14) // utime, stime, cutime, cstime
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err != nil || len(f) < 13 || f[1] != strconv.Itoa(s.postmaster) {
			continue
		}
		ticks += fieldSum(f, 11, 12)
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// procStat is /proc/pid/stat's fields after the command's name: the
// process state is [0], the parent's pid [1], utime [11], stime [12].
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(s[i+1:]), nil
}

func fieldSum(f []string, idx ...int) int64 {
	var n int64
	for _, i := range idx {
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			n += v
		}
	}
	return n
}
