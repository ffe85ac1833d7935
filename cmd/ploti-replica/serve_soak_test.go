package main

import (
	"bufio"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// The serve soak, "a week in a day": outside CI, as long as one asks,
//
//	go test -count=1 -run TestServeSoak -timeout 0 ./cmd/ploti-replica \
//	    -args -serve.soak=40m -test.v
//
// runs the built binary as the user does: `ploti-replica emulator
// --publish-every 3s` (the demo's world, with its MINOR, MAJOR and
// replaced-ids rounds), and `ploti-replica serve --poll 5s` on a file that
// also watches a dataset and receives the subscription's and the member's
// webhooks. Now and then the emulator's next calls fail (503, 429 with
// Retry-After), a proxy in front of the API resets connections, a version
// is held and later released, a request event is sent, and every few
// minutes serve is SIGKILLed and started again. Every 30s it samples
// serve's memory, open files and goroutines and the file's size. At the
// end serve is stopped, a last sync runs and verify must find every table
// equal to the version it holds; the test fails too if memory, open files
// or goroutines grow after warm-up (the first quarter of the samples) by
// more than -serve.soak-margin. docs/reliability.md has the figures.
var (
	serveSoakFor    = flag.Duration("serve.soak", 0, "serve soak: run TestServeSoak this long (0: skip it)")
	serveSoakMargin = flag.Float64("serve.soak-margin", 0.5, "serve soak: the growth allowed from the warm-up's median to the last quarter's")
	serveSoakKill   = flag.Duration("serve.soak-kill-every", 4*time.Minute, "serve soak: SIGKILL serve this often")
	serveSoakSeed   = flag.Uint64("serve.soak-seed", 36, "serve soak: seed of the faults' plan")
)

const (
	soakSampleEvery = 30 * time.Second
	soakChaosEvery  = 20 * time.Second
	soakHoldFor     = 90 * time.Second
)

// soakSample is one reading of serve and its file; -1 is "not read".
type soakSample struct {
	at               time.Duration
	pid              int
	rssKB, fds, gor  int64
	dbBytes, walSize int64
	applied, changes int64
}

// resetProxy forwards to the emulator's API and resets the connections
// of the next requests it is armed for.
type resetProxy struct {
	mu    sync.Mutex
	left  int
	hits  int
	url   string
	srv   *http.Server
	proxy *httputil.ReverseProxy
}

func startResetProxy(t *testing.T, target string) *resetProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &resetProxy{url: "http://" + ln.Addr().String(), proxy: httputil.NewSingleHostReverseProxy(u)}
	p.proxy.ErrorLog = nil
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

func (p *resetProxy) arm(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.left = n
}

func (p *resetProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	reset := p.left > 0
	if reset {
		p.left--
		p.hits++
	}
	p.mu.Unlock()
	if !reset {
		p.proxy.ServeHTTP(w, r)
		return
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// soakChild is a child process and the end of its Wait.
type soakChild struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startChild(t *testing.T, cmd *exec.Cmd) *soakChild {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	c := &soakChild{cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c
}

func (c *soakChild) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits up to wait for the child to end, then kills it;
// it reports whether the child ended within wait.
func (c *soakChild) stop(sig os.Signal, wait time.Duration) bool {
	c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
		return true
	case <-time.After(wait):
		c.cmd.Process.Kill()
		<-c.done
		return false
	}
}

// serveSoak is the run: the emulator, the proxy, serve and the figures.
type serveSoak struct {
	t         *testing.T
	dir, db   string
	vars      map[string]string // the children's environment: the API through the proxy
	emURL     string            // the emulator's own URL, for its control commands
	emu       *soakChild
	emuOut    *lockedBuffer
	proxy     *resetProxy
	serve     *soakChild
	serveAddr string
	serveLog  *os.File
	began     time.Time
	rng       *rand.Rand
	held      map[string]time.Time // datasets held by us, since
	counts    map[string]int       // what was done: kills, faults, holds …
	samples   []soakSample
	unread    int // samples whose bookkeeping rows were not read
}

func TestServeSoak(t *testing.T) {
	if *serveSoakFor <= 0 {
		t.Skip("the serve soak runs only with -serve.soak=DURATION (outside CI)")
	}
	s := &serveSoak{t: t, dir: t.TempDir(), emuOut: &lockedBuffer{}, rng: rand.New(rand.NewPCG(*serveSoakSeed, 2026)),
		held: map[string]time.Time{}, counts: map[string]int{}}
	s.db = filepath.Join(s.dir, "feeds.duckdb")
	s.startEmulator()
	s.setUp()
	s.startServe()
	s.began = time.Now()
	s.loop(*serveSoakFor)
	s.finish()
}

// freePorts finds a loopback port p with p+1 free too (the emulator's
// file links listen on the API's port + 1).
func freePorts(t *testing.T) int {
	t.Helper()
	for range 50 {
		a, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := a.Addr().(*net.TCPAddr).Port
		b, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1))
		a.Close()
		if err == nil {
			b.Close()
			return p
		}
	}
	t.Fatal("no two free ports in a row on loopback")
	return 0
}

// startEmulator runs `emulator --publish-every 3s` and waits for its
// banner, which names the subscription.
func (s *serveSoak) startEmulator() {
	t := s.t
	port := freePorts(t)
	s.emURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(shellBinary(t), "emulator", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--publish-every", "3s", "--dir", filepath.Join(s.dir, "emulator"))
	cmd.Env = shellEnv(t, map[string]string{"HOME": s.dir})
	cmd.Stdout, cmd.Stderr = s.emuOut, s.emuOut
	s.emu = startChild(t, cmd)
	t.Cleanup(func() { s.emu.stop(syscall.SIGTERM, 30*time.Second) })
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(s.emuOut.String(), "PLOTI_SUBSCRIPTION=") {
		if s.emu.exited() || time.Now().After(deadline) {
			t.Fatalf("the emulator did not start:\n%s", s.emuOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, rest, _ := strings.Cut(s.emuOut.String(), "PLOTI_SUBSCRIPTION=")
	sub := strings.Fields(rest)[0]
	s.proxy = startResetProxy(t, s.emURL)
	s.vars = map[string]string{"HOME": s.dir, "PLOTI_API_URL": s.proxy.url, "PLOTI_API_KEY": emulator.DefaultAPIKey,
		"PLOTI_SUBSCRIPTION": sub, "PLOTI_DB": s.db}
}

// cli runs a command of the binary with the soak's environment.
func (s *serveSoak) cli(args ...string) shellRun {
	return sh(s.t, s.vars, args...)
}

// control runs an `emulator` control command against the emulator itself.
func (s *serveSoak) control(args ...string) shellRun {
	return s.cli(append(append([]string{"emulator"}, args...), "--api-url", s.emURL)...)
}

// setUp watches the statewide dataset and makes the subscription's and
// the member's webhooks, to serve's address.
func (s *serveSoak) setUp() {
	t := s.t
	if r := s.cli("watch", "add", emulator.DemoWatched); r.code != 0 {
		t.Fatalf("watch add: %s", r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.serveAddr = ln.Addr().String()
	ln.Close()
	for _, w := range []struct{ path, secret, member string }{{"/ploti", "sub-secret", ""}, {"/ploti/member", "member-secret", "--member"}} {
		args := []string{"webhooks", "create", "--url", "http://" + s.serveAddr + w.path,
			"--secret-file", filepath.Join(s.dir, w.secret), "--api-url", s.emURL}
		if w.member != "" {
			args = append(args, w.member)
		}
		if r := s.cli(args...); r.code != 0 {
			t.Fatalf("webhooks create %s: %s", w.path, r)
		}
	}
	if s.serveLog, err = os.Create(filepath.Join(s.dir, "serve.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.serveLog.Close() })
}

// startServe runs serve and waits until /healthz answers.
func (s *serveSoak) startServe() {
	t := s.t
	cmd := exec.Command(shellBinary(t), "serve", "--poll", "5s", "--listen", s.serveAddr, "--on-major", "reload",
		"--webhook-secret-file", filepath.Join(s.dir, "sub-secret"),
		"--member-webhook-secret-file", filepath.Join(s.dir, "member-secret"),
		"--log-format", "json", "--log-level", "info")
	cmd.Env = shellEnv(t, s.vars)
	cmd.Stdout, cmd.Stderr = s.serveLog, s.serveLog
	s.serve = startChild(t, cmd)
	t.Cleanup(func() { s.serve.stop(syscall.SIGKILL, 10*time.Second) })
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := http.Get("http://" + s.serveAddr + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		if s.serve.exited() || time.Now().After(deadline) {
			t.Fatalf("serve did not start (%v); its log:\n%s", s.serve.err, s.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// loop plays the faults, holds, request events and kills for d, sampling
// every soakSampleEvery.
func (s *serveSoak) loop(d time.Duration) {
	end := s.began.Add(d)
	nextSample, nextChaos, nextKill := s.began, s.began.Add(soakChaosEvery), s.began.Add(*serveSoakKill)
	for time.Now().Before(end) {
		now := time.Now()
		if s.serve.exited() {
			s.t.Errorf("%s: serve exited on its own (%v); its log's end:\n%s", s.since(), s.serve.err, s.logTail(20))
			s.counts["exited on its own"]++
			s.startServe()
		}
		if !now.Before(nextSample) {
			s.sample()
			nextSample = nextSample.Add(soakSampleEvery)
		}
		if !now.Before(nextChaos) {
			s.chaos()
			nextChaos = now.Add(soakChaosEvery/2 + time.Duration(s.rng.Int64N(int64(soakChaosEvery))))
		}
		if !now.Before(nextKill) {
			s.serve.stop(syscall.SIGKILL, 10*time.Second)
			s.counts["SIGKILL"]++
			s.t.Logf("%s: SIGKILLed serve (pid %d), starting it again", s.since(), s.serve.cmd.Process.Pid)
			s.startServe()
			nextKill = nextKill.Add(*serveSoakKill)
		}
		time.Sleep(time.Second)
	}
}

func (s *serveSoak) since() time.Duration { return time.Since(s.began).Round(time.Second) }

// chaos releases holds older than soakHoldFor, then does one thing at
// random: a fault, a hold, a request event, or nothing.
func (s *serveSoak) chaos() {
	for ds, since := range s.held {
		if time.Since(since) >= soakHoldFor {
			s.release(ds)
		}
	}
	what := []string{"503", "429", "reset", "hold", "request-event", "nothing"}[s.rng.IntN(6)]
	var r shellRun
	switch what {
	case "503", "429":
		r = s.control("fail-next", "--status", what, "--count", strconv.Itoa(1+s.rng.IntN(3)), "--path", "/v1/**")
	case "reset":
		s.proxy.arm(1 + s.rng.IntN(3))
	case "hold":
		held := []string{emulator.DemoPermits, emulator.DemoParcels, emulator.DemoInspections}
		ds := held[s.rng.IntN(len(held))]
		if _, ok := s.held[ds]; ok {
			what = "nothing"
			break
		}
		if r = s.control("hold", ds); r.code == 0 {
			s.held[ds] = time.Now()
		}
		what += " " + ds
	case "request-event":
		types := emulator.RequestEventTypes()
		r = s.control("request-event", types[s.rng.IntN(len(types))])
	}
	s.counts[strings.Fields(what)[0]]++
	if r.code != 0 {
		s.t.Logf("%s: %s: %s", s.since(), what, r)
		s.counts[strings.Fields(what)[0]+" refused"]++
	}
}

// release releases a version we held. With a round every 3s it is
// usually gone already: a later version replaces a held one (the
// emulator's HoldNext), and release answers 409 "no held version".
func (s *serveSoak) release(ds string) {
	delete(s.held, ds)
	r := s.control("release", ds)
	switch {
	case r.code == 0:
		s.counts["release"]++
	case strings.Contains(r.stderr, "no held version"):
		s.counts["hold replaced by a later round"]++
	default:
		s.t.Logf("%s: release %s: %s", s.since(), ds, r)
		s.counts["release refused"]++
	}
}

// sample reads serve's memory, open files and goroutines, and the file's
// size and bookkeeping rows, and logs them.
func (s *serveSoak) sample() {
	pid := s.serve.cmd.Process.Pid
	sm := soakSample{at: time.Since(s.began), pid: pid, rssKB: -1, fds: -1, gor: -1, applied: -1, changes: -1}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				sm.rssKB, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
	}
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		sm.fds = int64(len(fds))
	}
	sm.gor = s.goroutines()
	sm.dbBytes, sm.walSize = fileSize(s.db), fileSize(s.db+".wal")
	for try := 0; try < 5; try++ { // the file is free between syncs
		if sm.applied, sm.changes = s.bookkeeping(); sm.applied >= 0 {
			break
		}
		time.Sleep(time.Second)
	}
	s.samples = append(s.samples, sm)
	s.t.Logf("%s sample: pid %d, RSS %d KiB, %d fds, %d goroutines, file %d + wal %d bytes, applied_events %d, changes %d, rounds %d",
		s.since(), pid, sm.rssKB, sm.fds, sm.gor, sm.dbBytes, sm.walSize, sm.applied, sm.changes, s.rounds())
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// goroutines is serve's go_goroutines from /metrics, -1 when unread.
func (s *serveSoak) goroutines() int64 {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + s.serveAddr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int64(f)
		}
	}
	return -1
}

// bookkeeping counts _ploti.applied_events and _ploti.changes through a
// read-only open, which works only between syncs (serve holds the file
// while one runs): -1 when the file was busy.
func (s *serveSoak) bookkeeping() (applied, changes int64) {
	db, err := sql.Open("duckdb", s.db+"?access_mode=read_only")
	if err == nil {
		defer db.Close()
		err = db.QueryRow("SELECT (SELECT count(*) FROM _ploti.applied_events), (SELECT count(*) FROM _ploti.changes)").Scan(&applied, &changes)
	}
	if err != nil {
		if s.unread++; s.unread <= 3 {
			s.t.Logf("%s: the file's bookkeeping unread: %v", s.since(), err)
		}
		return -1, -1
	}
	return applied, changes
}

// rounds is how many rounds the emulator has published.
func (s *serveSoak) rounds() int {
	return strings.Count(s.emuOut.String(), " published ")
}

// logTail is the last n lines of serve's log.
func (s *serveSoak) logTail(n int) string {
	b, _ := os.ReadFile(s.serveLog.Name())
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(ls[max(0, len(ls)-n):], "\n")
}

// finish releases our holds, stops serve, runs a last sync and verify,
// and reports.
func (s *serveSoak) finish() {
	t := s.t
	for ds := range s.held {
		s.release(ds)
	}
	s.proxy.arm(0)
	s.sample()
	if !s.serve.stop(syscall.SIGTERM, time.Minute) {
		t.Errorf("serve did not stop within a minute of SIGTERM")
	}
	if s.serve.err != nil {
		t.Errorf("serve after SIGTERM: %v; its log's end:\n%s", s.serve.err, s.logTail(20))
	}
	took := s.since()
	rounds := s.rounds()
	sync := s.cli("sync", "--on-major", "reload", "--lock-timeout", "60s")
	if sync.code != 0 {
		t.Errorf("the last sync: %s", sync)
	}
	verify := s.cli("verify")
	if verify.code != 0 {
		t.Errorf("verify: %s", verify)
	}
	applied, changes := s.bookkeeping()
	t.Logf("the last sync: exit %d; verify: exit %d; then _ploti.applied_events %d rows, _ploti.changes %d, file %d + wal %d bytes\n%s%s",
		sync.code, verify.code, applied, changes, fileSize(s.db), fileSize(s.db+".wal"), verify.stdout, verify.stderr)
	t.Logf("%s", s.report(took, rounds))
	s.checkGrowth()
}

// report is the figures: what was done, serve's log levels, and the
// samples.
func (s *serveSoak) report(took time.Duration, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "serve soak: %s, %d rounds published (every 3s), serve polling every 5s\n", took, rounds)
	var done []string
	for k, n := range s.counts {
		done = append(done, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(done)
	s.proxy.mu.Lock()
	fmt.Fprintf(&b, "done: %s; connections reset %d\n", strings.Join(done, ", "), s.proxy.hits)
	s.proxy.mu.Unlock()
	fmt.Fprintf(&b, "serve's log: %s\n", s.logLevels())
	fmt.Fprintf(&b, "%8s %7s %9s %5s %5s %12s %10s %9s %9s\n", "at", "pid", "RSS KiB", "fds", "gor", "file B", "wal B", "applied", "changes")
	for _, sm := range s.samples {
		fmt.Fprintf(&b, "%8s %7d %9d %5d %5d %12d %10d %9d %9d\n", sm.at.Round(time.Second), sm.pid, sm.rssKB, sm.fds, sm.gor,
			sm.dbBytes, sm.walSize, sm.applied, sm.changes)
	}
	return b.String()
}

// logLevels counts serve's log lines by level, with the most frequent
// warnings and errors.
func (s *serveSoak) logLevels() string {
	f, err := os.Open(s.serveLog.Name())
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	levels, msgs := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		l := sc.Text()
		lvl := strings.ToUpper(jsonField(l, "level"))
		levels[lvl]++
		if lvl == "WARN" || lvl == "ERROR" {
			msgs[lvl+" "+jsonField(l, "message")]++
		}
	}
	var out []string
	for k, n := range levels {
		out = append(out, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(out)
	var top []string
	for k, n := range msgs {
		top = append(top, fmt.Sprintf("%5d %s", n, k))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(top)))
	return strings.Join(out, ", ") + "\n" + strings.Join(top[:min(len(top), 12)], "\n")
}

// jsonField is a string field of a JSON log line, cheaply.
func jsonField(line, key string) string {
	_, rest, ok := strings.Cut(line, `"`+key+`":"`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// checkGrowth fails the test when serve's memory, open files or
// goroutines grew by more than the margin from the warm-up's median (the
// first quarter of the samples) to the last quarter's.
func (s *serveSoak) checkGrowth() {
	q := len(s.samples) / 4
	if q < 2 {
		s.t.Logf("only %d samples: too few to judge growth", len(s.samples))
		return
	}
	for _, m := range []struct {
		name string
		of   func(soakSample) int64
	}{
		{"RSS (KiB)", func(x soakSample) int64 { return x.rssKB }},
		{"open files", func(x soakSample) int64 { return x.fds }},
		{"goroutines", func(x soakSample) int64 { return x.gor }},
	} {
		warm, last := median(s.samples[:q], m.of), median(s.samples[len(s.samples)-q:], m.of)
		s.t.Logf("%s: warm-up median %d, last quarter's median %d", m.name, warm, last)
		if warm > 0 && float64(last) > float64(warm)*(1+*serveSoakMargin) {
			s.t.Errorf("%s grew from %d (the warm-up's median) to %d (the last quarter's): more than %.0f%%",
				m.name, warm, last, *serveSoakMargin*100)
		}
	}
}

// median of the samples' readings, leaving out those not read.
func median(samples []soakSample, of func(soakSample) int64) int64 {
	var v []int64
	for _, sm := range samples {
		if x := of(sm); x >= 0 {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return -1
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}
