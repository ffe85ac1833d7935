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

// readerStats are a reader's latencies and errors, and what a second
// session saw of its waits for a lock.
type readerStats struct {
	lat    []time.Duration
	errors int
	first  error
	locks  lockWaits
}

// lockWaits is what sampling pg_stat_activity about every millisecond saw
// of a session: how many samples, how many found it waiting for a lock,
// and the longest wait (first sample waiting to first sample not: within
// a sample's interval of the truth).
type lockWaits struct {
	samples, waiting int
	longest          time.Duration
	span             time.Duration // from the first sample to the last
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
	var pid int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("reader: %w", err)
	}
	mon, err := pgx.Connect(ctx, u)
	if err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("reader's monitor: %w", err)
	}
	r := &pgReader{quit: make(chan struct{}), done: make(chan readerStats, 1)}
	locks := make(chan lockWaits, 1)
	go func() {
		defer mon.Close(context.WithoutCancel(ctx))
		locks <- watchLocks(ctx, mon, pid, r.quit)
	}()
	go func() {
		defer c.Close(context.WithoutCancel(ctx))
		var s readerStats
		for {
			select {
			case <-r.quit:
				s.locks = <-locks
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

// watchLocks samples the session pid's wait in pg_stat_activity until
// quit is closed.
func watchLocks(ctx context.Context, mon *pgx.Conn, pid int, quit chan struct{}) lockWaits {
	var w lockWaits
	var since time.Time
	start := time.Now()
	for {
		select {
		case <-quit:
			w.span = time.Since(start)
			if !since.IsZero() {
				w.longest = max(w.longest, time.Since(since))
			}
			return w
		default:
		}
		t := time.Now()
		var wait *string
		if err := mon.QueryRow(ctx, "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", pid).Scan(&wait); err != nil {
			w.span = time.Since(start)
			return w
		}
		w.samples++
		switch {
		case wait != nil && *wait == "Lock":
			w.waiting++
			if since.IsZero() {
				since = t
			}
		case !since.IsZero():
			w.longest = max(w.longest, t.Sub(since))
			since = time.Time{}
		}
		time.Sleep(time.Millisecond)
	}
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
	every := time.Duration(0)
	if s.locks.samples > 0 {
		every = s.locks.span / time.Duration(s.locks.samples)
	}
	return fmt.Sprintf("p50 %s, p99 %s, max %s over %d queries; waiting for a lock in %d of %d samples of its session (one every %s), the longest wait about %s",
		msText(s.quantile(0.5)), msText(s.p99()), msText(s.quantile(1)), len(s.lat), s.locks.waiting, s.locks.samples, msText(every), msText(s.locks.longest))
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
	s.children(func(_ int, f []string) bool {
		if len(f) >= 13 {
			ticks += fieldSum(f, 11, 12)
		}
		return false
	})
	return time.Duration(ticks) * time.Second / userHZ
}

// after is the cluster's CPU time once the server processes of the
// database db have ended and been reaped (up to two seconds): a session's
// process ends a moment after its client hangs up, and while it exits
// (its command line gone, then a zombie) its CPU time shows neither in
// its /proc entry nor yet in the postmaster's count of reaped children.
func (s *serverCPU) after(db string) time.Duration {
	if s == nil {
		return 0
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && s.busy(db); {
		time.Sleep(5 * time.Millisecond)
	}
	return s.now()
}

// busy tells whether a child of the postmaster is a session of db (its
// command line, as PostgreSQL sets it, names the database) or a process
// that is exiting (no command line, or a zombie not yet reaped).
func (s *serverCPU) busy(db string) bool {
	return s.children(func(pid int, f []string) bool {
		if f[0] == "Z" || f[0] == "X" {
			return true
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && (len(cmd) == 0 || strings.Contains(string(cmd), " "+db+" "))
	})
}

// children calls fn with each child process of the postmaster and its
// /proc stat fields (procStat) until fn returns true, and says whether it
// did.
func (s *serverCPU) children(fn func(pid int, f []string) bool) bool {
	parent := strconv.Itoa(s.postmaster)
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err != nil || len(f) < 2 || f[1] != parent {
			continue
		}
		if fn(pid, f) {
			return true
		}
	}
	return false
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
