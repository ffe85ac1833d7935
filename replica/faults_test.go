package replica

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
)

// secretKey is the API key of the fault tests' emulator: distinctive, so
// that finding it anywhere means it leaked.
const secretKey = "ploti_sk_live_7Qx9ZfaultTestSecret"

// wireTap is the replica's HTTP transport in the fault tests: it remembers
// the signature of every signed link the client used and counts answers;
// with expireLinks, every version or manifest answer moves the emulator
// clock past the lifetime of the links it carries, so they expire before
// the client uses them.
type wireTap struct {
	base http.RoundTripper
	em   *emulator.Emulator

	mu          sync.Mutex
	sigs        map[string]bool
	statuses    map[int]int
	dropped     int // connection errors
	expireLinks bool
}

func (w *wireTap) RoundTrip(req *http.Request) (*http.Response, error) {
	if sig := req.URL.Query().Get("sig"); sig != "" {
		w.mu.Lock()
		w.sigs[sig] = true
		w.mu.Unlock()
	}
	resp, err := w.base.RoundTrip(req)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.dropped++
		return nil, err
	}
	w.statuses[resp.StatusCode]++
	p := req.URL.Path
	if w.expireLinks && resp.StatusCode == http.StatusOK && req.Method == http.MethodGet &&
		(strings.Contains(p, "/versions/") || strings.HasSuffix(p, "/manifest")) {
		w.em.Advance(2 * time.Minute) // links live a minute (SetLinkLifetime)
	}
	return resp, nil
}

// lockedLog is a log sink safe for the client's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logger writes every level, debug included, as slog's JSON lines to l.
func (l *lockedLog) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// faultRun is what faultySyncs saw.
type faultRun struct {
	em       *emulator.Emulator
	r        *Replica
	path     string
	tap      *wireTap
	logs     *lockedLog
	errs     []string // every error a sync returned
	injected int      // faulty answers injected
	permits  func(round int) []emulator.Row
}

func (f *faultRun) inject(fs ...emulator.Fault) {
	for _, x := range fs {
		f.em.Inject(x)
		f.injected += max(x.Count, 1)
	}
}

func (f *faultRun) failNext(pattern string, status, n int) {
	f.em.FailNext(pattern, status, n)
	f.injected += n
}

// faultySyncs runs four syncs, each under a different mix of injected
// faults, and checks after each that the file holds exactly the truth.
func faultySyncs(t *testing.T, mods ...func(*Options)) *faultRun {
	ctx := context.Background()
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2, APIKey: secretKey})
	must(t, err)
	must(t, em.Start())
	t.Cleanup(func() { em.Close() })
	sub, permits, parcels := seedTwo(t, em)
	f := &faultRun{em: em, logs: &lockedLog{}, path: freshReplica(t), permits: permits}
	f.tap = &wireTap{base: http.DefaultTransport.(*http.Transport).Clone(), em: em, sigs: map[string]bool{}, statuses: map[int]int{}}
	f.r = mustOpen(t, em, sub, f.path, fastRetries, func(o *Options) {
		o.Logger = f.logs.logger()
		o.HTTPClient = &http.Client{Transport: f.tap}
		o.PageSize = 2
		fast := o.FetchOptions
		o.FetchOptions = func(fo *fetch.Options) {
			fast(fo)
			fo.ReadIdleTimeout = 2 * time.Second
		}
	}, func(o *Options) {
		for _, m := range mods {
			m(o)
		}
	})
	sync := func(round, version int) {
		t.Helper()
		res, err := f.r.Sync(ctx)
		if err != nil {
			f.errs = append(f.errs, err.Error())
			t.Fatalf("round %d: sync under faults: %v", round, err)
		}
		assertMatchesTruth(t, f.r, em, "ds_permits", version)
		assertMatchesTruth(t, f.r, em, "ds_parcels", version)
		t.Logf("round %d: %+v", round, res)
	}
	files := "/files/**"

	// Round 0, the bootstrap: a manifest outage, a rate limit on the
	// dataset calls, dropped and short downloads, slow answers.
	f.failNext("GET /v1/feeds/subscriptions/*/manifest", http.StatusServiceUnavailable, 2)
	f.inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/manifest", Kind: emulator.FaultStatus, Status: 500})
	f.failNext("GET /v1/feeds/datasets/*", http.StatusTooManyRequests, 1)
	f.inject(emulator.Fault{Match: files, Kind: emulator.FaultReset, Count: 2},
		emulator.Fault{Match: files, Kind: emulator.FaultTruncate},
		emulator.Fault{Match: files, Kind: emulator.FaultSlow, Delay: 30 * time.Millisecond, Count: 2})
	sync(0, 1)

	// Round 1, merges: 429 bursts on the log, 500 and 503 on versions,
	// downloads cut off halfway (resumed) and corrupted.
	_, err = em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	f.failNext("GET /v1/feeds/subscriptions/*/events", http.StatusTooManyRequests, 3)
	f.inject(emulator.Fault{Match: "GET /v1/feeds/datasets/*/versions/*", Kind: emulator.FaultStatus, Status: 500, Count: 2})
	f.failNext("GET /v1/feeds/datasets/*/versions/*", http.StatusServiceUnavailable, 1)
	f.inject(emulator.Fault{Match: files, Kind: emulator.FaultCutOff, Count: 2},
		emulator.Fault{Match: files, Kind: emulator.FaultCorrupt})
	sync(1, 2)

	// Round 2, a snapshot swap: every link expires before it is used, the
	// links call fails once, the log's connection drops, files are slow.
	must(t, em.ReRelease("ds_permits", 2))
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(2))
	must(t, err)
	em.SetLinkLifetime(time.Minute)
	f.tap.mu.Lock()
	f.tap.expireLinks = true
	f.tap.mu.Unlock()
	f.inject(emulator.Fault{Match: "POST /v1/feeds/datasets/*/versions/*/links", Kind: emulator.FaultStatus, Status: 500},
		emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultReset, Count: 2},
		emulator.Fault{Match: files, Kind: emulator.FaultSlow, Delay: 20 * time.Millisecond, Count: 2},
		emulator.Fault{Match: files, Kind: emulator.FaultReset})
	sync(2, 3)

	// Round 3, a MINOR change: version answers cut off and reset, schema
	// files truncated and corrupt, a link refused as expired.
	cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
	_, err = em.Publish(ctx, "ds_permits", withUnits(permits(3), 3), emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(3))
	must(t, err)
	f.inject(emulator.Fault{Match: "GET /v1/feeds/datasets/*/versions/*", Kind: emulator.FaultCutOff},
		emulator.Fault{Match: "GET /v1/feeds/datasets/*/versions/*", Kind: emulator.FaultReset},
		emulator.Fault{Match: "/files/*/*/schema.json", Kind: emulator.FaultTruncate},
		emulator.Fault{Match: "/files/*/*/schema.json", Kind: emulator.FaultCorrupt},
		emulator.Fault{Match: files, Kind: emulator.FaultStatus, Status: http.StatusForbidden, Code: "link_expired"})
	sync(3, 4)
	return f
}

// "Emulator fault injection": bursts of 429, 500 and 503 on each
// endpoint, connection resets, truncated, cut-off and corrupt bodies, slow
// answers and links that expire early; every sync still ends with exactly
// the truth, without a failed dataset or a second sync.
func TestSync_FaultInjection(t *testing.T) {
	start := time.Now()
	f := faultySyncs(t)
	lines := strings.Split(strings.TrimSpace(f.logs.String()), "\n")
	retries := 0
	for _, l := range lines {
		if strings.Contains(l, `"retry after a transient failure"`) || strings.Contains(l, `"download again"`) ||
			strings.Contains(l, `"stream again"`) {
			retries++
		}
	}
	var codes []string
	f.tap.mu.Lock()
	for code, n := range f.tap.statuses {
		if code >= 300 {
			codes = append(codes, http.StatusText(code)+": "+itoa(n))
		}
	}
	dropped := f.tap.dropped
	f.tap.mu.Unlock()
	sort.Strings(codes)
	byKind := f.em.FaultHits()
	hits := 0
	for _, n := range byKind {
		hits += n
	}
	slow, resets := byKind[emulator.FaultSlow], byKind[emulator.FaultReset]
	t.Logf("fault injection: %d faults injected, %d reached the wire (%d slow answers, %d resets of which %d reached the client), %d retries logged (error answers %v), 4 syncs run, 0 content mismatches, in %s",
		f.injected, hits, slow, resets, dropped, retries, codes, time.Since(start).Round(time.Millisecond))
	// Each fault the client saw is a failed try it must retry. A slow
	// answer is no failure, and a reset on a reused idle connection of a
	// GET is retried by net/http's transport itself before the client sees
	// it (the tap counts the resets that reached it); a fault still waiting
	// for a matching request when the syncs end reached nobody.
	// dropped counts every error the tap saw; at most the resets are
	// the faults' (a timeout or a cancelled request is none of them).
	if seen := hits - slow - (resets - min(dropped, resets)); retries < seen {
		t.Fatalf("%d retries for %d faults the client saw (%d reached the wire, %d slow, %d resets absorbed by the transport): a fault was absorbed without a retry",
			retries, seen, hits, slow, resets-min(dropped, resets))
	}
	if f.em.KeyLeaks() != 0 {
		t.Fatalf("the API key went to the file host %d times", f.em.KeyLeaks())
	}
}

// The same faults with every snapshot loaded as it downloads
// (StreamMin 1): a fault on a footer's Range request downloads the file
// whole, one on its body resumes it or rolls the load back and downloads
// it whole; every sync still ends with exactly the truth, and the key
// never reaches the file host.
func TestSync_FaultInjectionStreamed(t *testing.T) {
	onlyInAFile(t, "a snapshot loaded as it downloads (storage.StreamLoader)")
	f := faultySyncs(t, func(o *Options) { o.StreamMin = 1 })
	if !strings.Contains(f.logs.String(), `"get file range"`) {
		t.Fatal("no snapshot was streamed")
	}
	if f.em.KeyLeaks() != 0 {
		t.Fatalf("the API key went to the file host %d times", f.em.KeyLeaks())
	}
}

// docs/design.md invariant 5, "Secrets": after faulty syncs, some
// failing, neither the API key nor the signature of any signed link the
// client used appears in a log line (at debug), an error, the status, the
// registry, or the replica (the DuckDB file, or the database's rows).
func TestSync_NoSecretsInLogsOrErrors(t *testing.T) {
	ctx := context.Background()
	f := faultySyncs(t)
	// Failures whose errors quote URLs: a file bad at its source, a log
	// that answers 500 until the client gives up.
	_, err := f.em.Publish(ctx, "ds_permits", withUnits(f.permits(4), 3))
	must(t, err)
	f.inject(emulator.Fault{Match: "/files/**", Kind: emulator.FaultCorrupt, Count: -1})
	if _, err := f.r.Sync(ctx); !errors.Is(err, ErrPartial) {
		t.Fatalf("sync with a file corrupt at its source: %v, want ErrPartial", err)
	} else {
		f.errs = append(f.errs, err.Error())
	}
	f.em.ClearFaults()
	f.inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultStatus, Status: 500, Code: "internal", Count: -1})
	if _, err := f.r.Sync(ctx); err == nil {
		t.Fatal("sync with the log down: no error")
	} else {
		f.errs = append(f.errs, err.Error())
	}
	f.em.ClearFaults()
	st := mustStatus(t, f.r)
	stJSON, err := json.Marshal(st)
	must(t, err)
	file := storedText(t, f.r, f.path)

	f.tap.mu.Lock()
	secrets := []string{secretKey}
	for sig := range f.tap.sigs {
		secrets = append(secrets, sig)
	}
	f.tap.mu.Unlock()
	if len(secrets) < 10 {
		t.Fatalf("only %d signatures seen: the test did not exercise signed links", len(secrets)-1)
	}
	places := map[string]string{
		"log lines":   f.logs.String(),
		"sync errors": strings.Join(f.errs, "\n"),
		"status":      string(stJSON),
		"the replica": string(file),
	}
	if !strings.Contains(places["log lines"], "sha256 mismatch") || !strings.Contains(places["sync errors"], "500") {
		t.Fatalf("the failures did not happen: errors %q", places["sync errors"])
	}
	for where, text := range places {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Fatalf("%s show a secret %q: …%s…", where, s[:6]+"…", text[max(0, i-120):min(len(text), i+len(s)+20)])
			}
		}
	}
	t.Logf("checked %d log lines, %d errors, the status and %d bytes of the replica for the key and %d link signatures",
		strings.Count(places["log lines"], "\n"), len(f.errs), len(file), len(secrets)-1)
}

// storedText is all a replica keeps, closed: a DuckDB file's bytes (and
// no spool folder left beside it), or the text of every row of a
// database's tables but PostGIS's own.
func storedText(t *testing.T, r *Replica, path string) []byte {
	t.Helper()
	var b []byte
	if !isFile(r.db) {
		rows, err := r.DB().Query(`SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables
			WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_name <> 'spatial_ref_sys'`)
		must(t, err)
		var tables []string
		for rows.Next() {
			var name string
			must(t, rows.Scan(&name))
			tables = append(tables, name)
		}
		must(t, rows.Err())
		for _, name := range tables {
			var text sql.NullString
			must(t, r.DB().QueryRow("SELECT string_agg(t::text, E'\\n') FROM "+name+" t").Scan(&text))
			b = append(b, text.String...)
		}
	}
	must(t, r.Close())
	if !isFile(r.db) {
		return b
	}
	b, err := os.ReadFile(path)
	must(t, err)
	if _, err := os.Stat(path + ".spool"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the spool folder is left after Close: %v", err)
	}
	return b
}
