package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// The crash harness ("Crash safety"; docs/design.md invariant 3): it
// runs the real binary's `sync` against an emulator through a proxy that
// sees every API call and file download, SIGKILLs the child at chosen
// moments (while it waits for an answer, halfway through a download, and
// a few milliseconds after an answer, when DuckDB is loading a snapshot,
// merging changes or committing the cursor), runs `sync` again to the end,
// and compares the file with the one a sync that never crashed wrote:
// every table's rows and columns, _ploti.datasets, _ploti.holds, the id
// map, the changes log, the applied events and the cursor, and each
// dataset's table with the emulator's truth.
//
//	go test ./cmd/ploti-replica/ -run 'TestCrash$' -v
//
// prints the figures: kills, faults injected, syncs run, content
// mismatches (must be 0), and where the kills landed.

// crashWorld is the emulator side: three datasets, a subscription and a
// proxy in front of both listeners.
type crashWorld struct {
	em    *emulator.Emulator
	sub   string
	proxy *crashProxy
	bin   string
	dir   string
}

// harnessBinary is ploti-replica built once for the package's tests
// (shellBinary).
func harnessBinary(t *testing.T) string {
	t.Helper()
	return shellBinary(t)
}

// Rows of the crash world's datasets at a round; each round removes and
// adds rows and changes some.
func permitsAt(round int) string {
	return fmt.Sprintf(`SELECT 'BP-' || lpad(i::VARCHAR, 6, '0') AS permit_number,
	CASE WHEN (i + %[1]d) %% 7 = 0 THEN 'issued' WHEN i %% 3 = 1 THEN 'applied' ELSE 'under_review' END AS status,
	(1000 * i + CASE WHEN i %% 11 = %[1]d %% 11 THEN %[1]d * 10 ELSE 0 END + 0.25)::DECIMAL(14,2) AS valuation,
	DATE '2026-01-01' + (i %% 300)::INTEGER AS issued, (i %% 4) + 1 AS units,
	'POINT (' || (-81.38 + i * 0.0001) || ' ' || (28.54 + i * 0.00005) || ')' AS geometry
	%[2]s
FROM range(%[1]d * 150, %[1]d * 150 + 4000) t(i)`, round, map[bool]string{true: ", 'inspector ' || (i % 13) AS inspector", false: ""}[round >= 2])
}

func parcelsAt(round int, withAttributes bool) string {
	attrs := ""
	if withAttributes {
		attrs = `, '{"zone": "R' || (i % 3) || '"}' AS attributes`
	}
	return fmt.Sprintf(`SELECT 'SEM-' || lpad(i::VARCHAR, 5, '0') AS parcel_id,
	'Owner ' || (i + CASE WHEN i %% 9 = %[1]d %% 9 THEN 100 ELSE 0 END) AS owner, 0.25 + i / 100.0 AS acres,
	['res', (i %% 4)::VARCHAR] AS uses %[2]s,
	'POLYGON ((' || (-81.30 + i * 0.001) || ' 28.70, ' || (-81.299 + i * 0.001) || ' 28.70, ' || (-81.299 + i * 0.001) || ' 28.701, ' ||
	(-81.30 + i * 0.001) || ' 28.701, ' || (-81.30 + i * 0.001) || ' 28.70))' AS geometry
FROM range(%[1]d * 80, %[1]d * 80 + 2000) t(i)`, round, attrs)
}

func inspectionsAt(round int) string {
	return fmt.Sprintf(`SELECT 'INS-' || i AS inspection_id, 'Restaurant ' || (i %% 500) AS establishment,
	TIMESTAMPTZ '2026-09-01 12:00:00+00' + to_minutes(i) AS recorded_at,
	(80 + (i %% 20) + CASE WHEN i %% 5 = %[1]d %% 5 THEN 0.5 ELSE 0 END)::DECIMAL(5,1) AS score, i %% 5 <> 0 AS passed
FROM range(%[1]d * 60, %[1]d * 60 + 3000) t(i)`, round)
}

var (
	crashPermitCols = []emulator.Column{{Name: "permit_number", Type: "string"}, {Name: "status", Type: "string"},
		{Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
		{Name: "issued", Type: "date"}, {Name: "units", Type: "integer"},
		{Name: "geometry", Type: "geometry", Geometry: &emulator.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}}}
	crashParcelCols = []emulator.Column{{Name: "parcel_id", Type: "string"}, {Name: "owner", Type: "string"},
		{Name: "acres", Type: "number"}, {Name: "uses", Type: "list", Items: &emulator.Column{Type: "string"}},
		{Name: "attributes", Type: "json"}, {Name: "geometry", Type: "geometry"}}
	crashInspectionCols = []emulator.Column{{Name: "inspection_id", Type: "string"}, {Name: "establishment", Type: "string"},
		{Name: "recorded_at", Type: "timestamp"}, {Name: "score", Type: "decimal", Precision: &emulator.Precision{Precision: 5, Scale: 1}},
		{Name: "passed", Type: "boolean"}}
)

// newCrashWorld seeds version 1 of each dataset.
func newCrashWorld(t *testing.T) *crashWorld {
	t.Helper()
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.StartOn("127.0.0.1:0", ""); err != nil { // files on the API listener: one proxy sees all
		t.Fatal(err)
	}
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(emulator.Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	for _, s := range []emulator.DatasetSpec{
		{ID: "ds_permits", Title: "Permits", PlaceID: "fl-orange", KeyColumns: []string{"permit_number"}, Columns: crashPermitCols},
		{ID: "ds_parcels", Title: "Parcels", PlaceID: "fl-seminole", KeyColumns: []string{"parcel_id"}, Columns: crashParcelCols},
		{ID: "ds_inspections", Title: "Inspections", PlaceID: "fl-orange", KeyColumns: []string{"inspection_id"}, Columns: crashInspectionCols},
	} {
		if err := em.AddDataset(s); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-counties"}})
	if err != nil {
		t.Fatal(err)
	}
	w := &crashWorld{em: em, sub: sub, dir: t.TempDir()}
	w.publish(t, "ds_permits", permitsAt(0))
	w.publish(t, "ds_parcels", parcelsAt(0, true))
	w.publish(t, "ds_inspections", inspectionsAt(0), emulator.Parts(2))
	w.proxy = newCrashProxy(t, em.URL())
	return w
}

func (w *crashWorld) publish(t *testing.T, ds, query string, opts ...emulator.PublishOption) emulator.Release {
	t.Helper()
	rel, err := w.em.PublishQuery(context.Background(), ds, query, opts...)
	if err != nil {
		t.Fatalf("publish %s: %v", ds, err)
	}
	return rel
}

// moreVersions publishes what the catch-up runs walk: merges, a MINOR
// change, ids replaced with an id map, a MAJOR change held for review, a
// resync after a re-release, multi-part snapshots and a server hold.
func (w *crashWorld) moreVersions(t *testing.T) {
	t.Helper()
	w.publish(t, "ds_permits", permitsAt(1))
	w.publish(t, "ds_parcels", parcelsAt(1, true))
	w.publish(t, "ds_inspections", inspectionsAt(1), emulator.Parts(2))
	permitCols2 := append(append([]emulator.Column{}, crashPermitCols...), emulator.Column{Name: "inspector", Type: "string"})
	if rel := w.publish(t, "ds_permits", permitsAt(2), emulator.WithSchema(permitCols2, []string{"permit_number"})); rel.SchemaBump != "minor" {
		t.Fatalf("permits v3: %+v, want a MINOR change", rel)
	}
	if err := w.em.ReRelease("ds_inspections", 2); err != nil {
		t.Fatal(err)
	}
	if rel := w.publish(t, "ds_inspections", inspectionsAt(2), emulator.Parts(3)); !rel.ResyncRequired {
		t.Fatalf("inspections v3: %+v, want a resync", rel)
	}
	w.publish(t, "ds_permits", permitsAt(3))
	if rel := w.publish(t, "ds_permits", permitsAt(3), emulator.WithReplacedIDs(0.3)); rel.ResyncReason != "record_ids_changed" {
		t.Fatalf("permits v5: %+v, want record_ids_changed", rel)
	}
	w.publish(t, "ds_inspections", inspectionsAt(3))
	w.publish(t, "ds_permits", permitsAt(4))
	w.publish(t, "ds_parcels", parcelsAt(2, true))
	parcelCols2 := []emulator.Column{crashParcelCols[0], crashParcelCols[1], crashParcelCols[2], crashParcelCols[3], crashParcelCols[5]}
	if rel := w.publish(t, "ds_parcels", parcelsAt(3, false), emulator.WithSchema(parcelCols2, []string{"parcel_id"}), emulator.SkipReview()); rel.SchemaBump != "major" {
		t.Fatalf("parcels v4: %+v, want a MAJOR change", rel)
	}
	w.publish(t, "ds_parcels", parcelsAt(4, false))
	if rel := w.publish(t, "ds_inspections", inspectionsAt(4), emulator.Hold("data_check")); !rel.Held {
		t.Fatalf("inspections v5: %+v, want held", rel)
	}
}

// crashProxy forwards every request to the emulator, rewriting the
// emulator's address in JSON answers to its own so that file links and
// links.version come back through it too, and kills the child at a plan's
// moment.
type crashProxy struct {
	upstream string
	srv      *httptest.Server
	client   *http.Client

	mu    sync.Mutex
	gen   int         // the run; a late kill of an earlier run is dropped
	n     int         // requests in this run
	seq   []string    // their kinds
	plan  *killPlan   // nil: pass everything
	kill  func()      // kills the running child
	hit   string      // where the plan fired: the request's kind
	path  string      // and its path
	took  []time.Time // when each request of this run was answered (soak.go)
	paths []string    // each request's path

	faults *proxyFaults // transport faults, in the soak's resumed runs (soak_test.go)
}

// killPlan is one moment: request at (1-based, in the run) and how.
type killPlan struct {
	at    int
	mode  string // "before": on arrival; "mid": halfway through the answer; "after": delay after the answer
	delay time.Duration
}

func (p killPlan) String() string {
	if p.mode == "after" {
		return fmt.Sprintf("%s %s #%d", p.mode, p.delay, p.at)
	}
	return fmt.Sprintf("%s #%d", p.mode, p.at)
}

func newCrashProxy(t *testing.T, upstream string) *crashProxy {
	p := &crashProxy{upstream: upstream, client: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *crashProxy) URL() string { return p.srv.URL }

// start resets the proxy for a child run.
func (p *crashProxy) start(plan *killPlan, kill func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.n, p.seq, p.plan, p.kill, p.hit, p.path = 0, nil, plan, kill, "", ""
	p.took, p.paths = nil, nil
}

func (p *crashProxy) fire(gen int, kind, path string) {
	p.mu.Lock()
	kill := p.kill
	if gen != p.gen {
		kill = nil
	}
	p.kill = nil
	if kill != nil {
		p.hit, p.path = kind, path
	}
	p.mu.Unlock()
	if kill != nil {
		kill()
	}
}

// requestKind names a request by what it asks for.
func requestKind(r *http.Request) string {
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/manifest"):
		return "manifest"
	case strings.HasSuffix(path, "/events"):
		return "events"
	case strings.HasSuffix(path, "/links"):
		return "links"
	case strings.Contains(path, "/versions/"):
		return "version"
	case strings.HasPrefix(path, "/v1/feeds/datasets/"):
		return "dataset"
	case path == "/v1/datasets/watches":
		return "watches"
	case strings.HasPrefix(path, "/v1/datasets/") && strings.HasSuffix(path, "/changes"):
		return "watch-changes"
	case strings.HasPrefix(path, "/v1/datasets/") && strings.HasSuffix(path, "/rows"):
		return "rows"
	case strings.HasPrefix(path, "/v1/datasets/"):
		return "info"
	case strings.Contains(path, "snapshot-part-"):
		return "snapshot"
	case strings.HasSuffix(path, "/changes.parquet"):
		return "changes"
	case strings.HasSuffix(path, "/id-map.parquet"):
		return "idmap"
	case strings.HasSuffix(path, "/schema.json"):
		return "schema"
	}
	return "other"
}

func (p *crashProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := requestKind(r)
	p.mu.Lock()
	p.n++
	k, gen := p.n, p.gen
	p.seq = append(p.seq, kind)
	p.took = append(p.took, time.Time{})
	p.paths = append(p.paths, r.URL.Path)
	var plan killPlan
	if p.plan != nil && p.plan.at == k {
		plan = *p.plan
	}
	fault := ""
	if plan.mode == "" && p.faults != nil {
		fault = p.faults.pick(kind)
	}
	p.mu.Unlock()
	defer p.answered(gen, k)
	if plan.mode == "before" {
		p.fire(gen, kind, r.URL.Path)
		return
	}
	if p.faults.before(w, fault) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for _, h := range []string{"Authorization", "Range", "Content-Type", "Accept", "User-Agent", "If-Match", "Idempotency-Key"} {
		if v := r.Header.Get(h); v != "" {
			out.Header.Set(h, v)
		}
	}
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		b = bytes.ReplaceAll(b, []byte(p.upstream), []byte(p.srv.URL))
	}
	for k, vs := range resp.Header {
		if k != "Content-Length" {
			w.Header()[k] = vs
		}
	}
	if p.faults.body(w, fault, resp.StatusCode, b) {
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(resp.StatusCode)
	if plan.mode == "mid" {
		w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		p.fire(gen, kind, r.URL.Path)
		return
	}
	w.Write(b)
	w.(http.Flusher).Flush()
	if plan.mode == "after" {
		go func() {
			time.Sleep(plan.delay)
			p.fire(gen, kind, r.URL.Path)
		}()
	}
}

// answered notes when request k of run gen was answered.
func (p *crashProxy) answered(gen, k int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen == p.gen && k <= len(p.took) {
		p.took[k-1] = time.Now()
	}
}

// childRun is what one `ploti-replica sync` did.
type childRun struct {
	killed bool
	hit    string // the request kind the kill fired at
	path   string // and its path
	code   int
	seq    []string
	stderr string
	took   []time.Time // when each request was answered
	paths  []string    // each request's path
	ended  time.Time   // when the child exited
}

// runChild runs `sync` on db; with a plan, the proxy kills it there.
func (w *crashWorld) runChild(t *testing.T, db string, plan *killPlan) childRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	// Pages of three events, two pages a transaction (--batch-events):
	// the walk commits often, and its transactions hold several pages.
	cmd := exec.CommandContext(ctx, w.bin, "sync", "--db", db, "--log-format", "json", "--log-level", "debug", "--page-size", "3",
		"--batch-events", strconv.Itoa(crashBatchEvents), "--lock-timeout", "20s")
	cmd.Env = append(os.Environ(), "PLOTI_API_URL="+w.proxy.URL(), "PLOTI_API_KEY="+w.em.APIKey(), "PLOTI_SUBSCRIPTION="+w.sub)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.proxy.start(plan, func() { cmd.Process.Signal(syscall.SIGKILL) })
	err := cmd.Wait()
	ended := time.Now()
	w.proxy.mu.Lock()
	run := childRun{hit: w.proxy.hit, path: w.proxy.path, seq: append([]string(nil), w.proxy.seq...), stderr: stderr.String(),
		took: append([]time.Time(nil), w.proxy.took...), paths: append([]string(nil), w.proxy.paths...), ended: ended}
	w.proxy.kill = nil
	w.proxy.mu.Unlock()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		run.killed = true
	} else {
		run.code = cmd.ProcessState.ExitCode()
	}
	if err != nil && !run.killed && run.code == 0 {
		t.Fatalf("sync: %v", err)
	}
	return run
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fingerprint is everything a crash must not change, as text per part.
func fingerprint(t *testing.T, path string) (map[string]string, error) {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	q := db.SQL()
	out := map[string]string{}
	one := func(key, query string) error {
		var s string
		if err := q.QueryRowContext(ctx, query).Scan(&s); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		out[key] = s
		return nil
	}
	rows, err := q.QueryContext(ctx, "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY 1")
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	out["tables"] = strings.Join(tables, ",")
	for _, tb := range tables {
		id := storage.Ident(tb)
		if err := one("rows of "+tb, `SELECT count(*)::VARCHAR || ' rows, hash ' || coalesce(sum(hash(t::VARCHAR))::VARCHAR, '-') FROM main.`+id+` AS t`); err != nil {
			return nil, err
		}
		if err := one("columns of "+tb, `SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY column_index) FROM duckdb_columns()
			WHERE schema_name = 'main' AND table_name = `+storage.Literal(tb)); err != nil {
			return nil, err
		}
	}
	parts := map[string]string{
		"_ploti.datasets": `SELECT coalesce(string_agg(concat_ws(' | ', dataset_id, table_name, coalesce(version, 0), status, coalesce(status_reason, ''),
			coalesce(row_count, 0), coalesce(schema_version, ''), key_columns::VARCHAR, columns::VARCHAR, skip_until_removed,
			coalesce(previous_version, 0), coalesce(last_error, ''), source), chr(10) ORDER BY dataset_id), '') FROM _ploti.datasets`,
		"_ploti.holds": `SELECT coalesce(string_agg(concat_ws(' | ', dataset_id, coalesce(version, 0), kind, reason, coalesce(detail::VARCHAR, '')),
			chr(10) ORDER BY dataset_id, kind), '') FROM _ploti.holds`,
		"_ploti.id_map":         `SELECT count(*) || ' ' || coalesce(sum(hash(concat_ws('|', dataset_id, version, from_id, to_id))), 0) FROM _ploti.id_map`,
		"_ploti.changes":        `SELECT count(*) || ' ' || coalesce(sum(hash(concat_ws('|', dataset_id, version, record_id, change))), 0) FROM _ploti.changes`,
		"_ploti.applied_events": `SELECT count(*) || ' ' || count(DISTINCT event_id) || ' ' || coalesce(sum(hash(event_id)), 0) FROM _ploti.applied_events`,
		"_ploti.subscription":   `SELECT coalesce(string_agg(concat_ws(' | ', subscription_id, coalesce(cursor, '')), chr(10)), '') FROM _ploti.subscription`,
	}
	for k, query := range parts {
		if err := one(k, query); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// diff lists the parts that differ.
func diff(got, want map[string]string) []string {
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			out = append(out, fmt.Sprintf("%s: got %q, want %q", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: got %q, want nothing", k, g))
		}
	}
	sort.Strings(out)
	return out
}

// truthMismatches compares every dataset table the registry says holds a
// version with the emulator's truth for that version, every column.
func truthMismatches(t *testing.T, path string, em *emulator.Emulator) []string {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return []string{"open: " + err.Error()}
	}
	defer db.Close()
	ds, err := db.Datasets(ctx)
	if err != nil {
		return []string{"registry: " + err.Error()}
	}
	var out []string
	for _, d := range ds {
		if d.Source == storage.SourceWatch {
			continue // a watched dataset's truth is WatchTruth's (watchTruthMismatches)
		}
		if d.Version == 0 {
			out = append(out, d.ID+": holds no version")
			continue
		}
		tbl := "main." + storage.Ident(d.Table)
		extra, missing, err := em.Diff(ctx, db.SQL(), storage.AsGeometry(db.Geometry(), d.Table, d.Columns), d.ID, d.Version)
		var have int64
		if err == nil {
			err = db.SQL().QueryRowContext(ctx, "SELECT count(*) FROM "+tbl).Scan(&have)
		}
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s v%d: compare: %v", d.ID, d.Version, err))
		case extra != 0 || missing != 0 || have != d.RowCount:
			out = append(out, fmt.Sprintf("%s v%d: %d rows not in the truth, %d truth rows missing, %d rows (registry %d)",
				d.ID, d.Version, extra, missing, have, d.RowCount))
		}
	}
	return out
}

// crashScenario is one file's story: killed at each plan in turn (each in
// a fresh run, counted from that run's first request), then run to the end.
type crashScenario struct {
	from  string // "bootstrap": an empty file; "catch-up": the file synced before moreVersions
	plans []killPlan
	fault *emulator.Fault // injected before the second run, when set
}

var apiKinds = map[string]bool{"manifest": true, "dataset": true, "version": true, "events": true, "links": true,
	"watches": true, "info": true, "watch-changes": true, "rows": true}

// firstKills are the moments of a clean run's requests worth a kill:
// waiting on each API answer, halfway through each download, and a few
// delays after each answer that DuckDB work follows (a snapshot or id map
// loaded, a changes file merged, a page applied and its cursor committed).
func firstKills(seq []string, delays []time.Duration) []killPlan {
	var out []killPlan
	d := 0
	for i, kind := range seq {
		k := i + 1
		if apiKinds[kind] {
			out = append(out, killPlan{at: k, mode: "before"})
		} else {
			out = append(out, killPlan{at: k, mode: "mid"})
		}
		switch kind {
		case "snapshot", "idmap", "changes", "events", "watch-changes", "rows":
			for range 3 {
				out = append(out, killPlan{at: k, mode: "after", delay: delays[d%len(delays)]})
				d++
			}
		}
	}
	return out
}

// spread picks n plans round-robin over their (mode, request kind)
// groups, so that every kind of moment is among them.
func spread(plans []killPlan, seq []string, n int) []killPlan {
	groups := map[string][]killPlan{}
	var keys []string
	for _, p := range plans {
		k := p.mode + " " + seq[p.at-1]
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	var out []killPlan
	for i := 0; len(out) < n; i++ {
		took := false
		for _, k := range keys {
			g := groups[k]
			if len(out) < n && len(g) > 0 {
				// from the middle outwards, so that a group's picks spread over the run
				j := len(g) / 2
				out = append(out, g[j])
				groups[k] = append(g[:j:j], g[j+1:]...)
				took = true
			}
		}
		if !took {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// crashFaults are the network faults some scenarios add to the kills.
func crashFaults() []emulator.Fault {
	return []emulator.Fault{
		{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultStatus, Status: 503, Code: "plan_unavailable", RetryAfter: 1},
		{Match: "/files/**", Kind: emulator.FaultReset},
		{Match: "GET /v1/feeds/datasets/*/versions/*", Kind: emulator.FaultStatus, Status: 500},
		{Match: "/files/**", Kind: emulator.FaultCutOff},
		{Match: "/files/**", Kind: emulator.FaultCorrupt},
		{Match: "GET /v1/**", Kind: emulator.FaultStatus, Status: 429, Code: "rate_limited", RetryAfter: 1},
	}
}

// crashKind says what a kill interrupted. A kill after a file's answer
// whose last log line is still that file's "get file" came before the
// load or merge that follows the download had committed (the replica logs
// each event once it is applied).
func crashKind(from string, p killPlan, run childRun) string {
	hit := run.hit
	lines := strings.Split(strings.TrimSpace(run.stderr), "\n")
	last := lines[len(lines)-1]
	inside := p.mode == "after" && strings.Contains(last, `"message":"get file"`) && strings.Contains(last, run.path+`"`)
	var what string
	switch {
	case hit == "events" && p.mode != "mid" && walkMoment(lines) != "":
		what = walkMoment(lines)
	case inside && (hit == "snapshot" || hit == "idmap"):
		what = "snapshot swap, in DuckDB before its commit"
	case inside && hit == "changes":
		what = "merge, in DuckDB before its commit"
	case p.mode == "before" && hit == "events":
		what = "cursor commit done, waiting for the next page"
	case p.mode == "before":
		what = "waiting for an API answer"
	case p.mode == "mid" && apiKinds[hit]:
		what = "reading an API answer"
	case p.mode == "mid":
		what = "download"
	case hit == "snapshot" || hit == "idmap":
		what = "snapshot swap, or the step after it"
	case hit == "changes":
		what = "merge, or the step after it"
	case hit == "events":
		what = "page apply and cursor commit"
	default:
		what = "after " + hit
	}
	return from + ": " + what
}

// crashBatchEvents is the harnesses' --batch-events: two pages of three
// events a transaction.
const crashBatchEvents = 6

// The moments of the batched walk a kill after reading a page of events
// can land in (walkMoment).
const (
	inBatch    = "inside a batch of pages, before its commit"
	afterBatch = "after a batch of pages committed, before the next commit"
)

// walkMoment says where in the batched walk a run stood when killed, from
// its last line about a transaction of pages: one that goes on with the
// next page read ahead (the batch holds it uncommitted), or one of two
// pages or more committed. "" when neither line came yet.
func walkMoment(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		switch l := lines[i]; {
		case strings.Contains(l, `"message":"page applied; its transaction goes on with the next page"`):
			return inBatch
		case strings.Contains(l, `"message":"pages committed"`) && !strings.Contains(l, `"pages":1,`):
			return afterBatch
		case strings.Contains(l, `"message":"pages committed"`):
			return ""
		}
	}
	return ""
}

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness builds the binary and runs it about 60 times (170 with -crash.full)")
	}
	if *soakScenarios > 0 {
		soak(t)
		return
	}
	w := newCrashWorld(t)
	w.bin = harnessBinary(t)
	h := newHarness(t, w, "crash harness", crashKind)
	clean := func(name, from string) (map[string]string, []string) {
		t.Helper()
		path := filepath.Join(w.dir, name)
		if from != "" {
			copyFile(t, from, path)
		}
		run := h.clean(path)
		if bad := truthMismatches(t, path, w.em); len(bad) > 0 {
			t.Fatalf("clean sync %s differs from the emulator's truth:\n%s", name, strings.Join(bad, "\n"))
		}
		fp, err := fingerprint(t, path)
		if err != nil {
			t.Fatal(err)
		}
		return fp, run.seq
	}
	base := filepath.Join(w.dir, "base.duckdb")
	clean("base.duckdb", "")
	w.moreVersions(t)
	want := map[string]map[string]string{}
	seqs := map[string][]string{}
	want["catch-up"], seqs["catch-up"] = clean("clean-catch-up.duckdb", base)
	want["bootstrap"], seqs["bootstrap"] = clean("clean-bootstrap.duckdb", "")
	if holds := want["catch-up"]["_ploti.holds"]; !strings.Contains(holds, "local") || !strings.Contains(holds, "server") {
		t.Fatalf("the catch-up should end with a local and a server hold: %q", holds)
	}
	if pages := countKinds(seqs["catch-up"], "events"); pages < 5 {
		t.Fatalf("the catch-up read %d pages of events; want several cursor commits (--page-size 3)", pages)
	}

	scenarios := scenarioPlan{seed: 4, counts: map[string]int{"bootstrap": crashShare(12), "catch-up": crashShare(30)},
		delays:  []time.Duration{0, time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 60 * time.Millisecond},
		resumes: func(i int) int { return 1 + i%3 }, maxAt: 10, faultEvery: 8, faultAt: 4, // more kills in the runs that resume
	}.scenarios(seqs)
	for i, sc := range scenarios {
		path := filepath.Join(w.dir, fmt.Sprintf("s%03d.duckdb", i))
		if sc.from == "catch-up" {
			copyFile(t, base, path)
		}
		h.play(i, path, sc, func() []string { return fileMismatches(t, path, want[sc.from], w) })
		os.Remove(path)
	}
	h.report(len(scenarios), crashKills(50, 42, len(scenarios))) // the issue asks for 50 kills or more (-crash.full)
}

// fileMismatches is what differs in a file after a scenario's last sync:
// from the clean run's fingerprint, from the emulator's truth, and what a
// finished sync must not leave beside it.
func fileMismatches(t *testing.T, path string, want map[string]string, w *crashWorld) []string {
	fp, err := fingerprint(t, path)
	if err != nil {
		return []string{"read the file: " + err.Error()}
	}
	bad := diff(fp, want)
	bad = append(bad, truthMismatches(t, path, w.em)...)
	return append(bad, leftBeside(path)...)
}

// leftBeside names what a finished sync left beside its file: the spool
// folder, a WAL check's links.
func leftBeside(path string) []string {
	var bad []string
	if _, err := os.Stat(path + ".spool"); err == nil {
		bad = append(bad, "the spool folder is left after a finished sync")
	}
	if left, _ := filepath.Glob(path + ".walcheck-*"); len(left) > 0 {
		bad = append(bad, fmt.Sprintf("a WAL check's links are left: %v", left))
	}
	return bad
}

// --page-size sets the events per page (the crash harness uses small pages
// to commit the cursor often); out of 1 to 500 it is a usage error.
func TestSync_pageSize(t *testing.T) {
	_, d, vars := demoWorld(t)
	for _, n := range []string{"501", "0", "-1"} {
		if code, _, errs := cli(t, vars, "sync", "--page-size", n); code != exitUsage || !strings.Contains(errs, "--page-size "+n+": want 1 to 500") {
			t.Fatalf("--page-size %s: exit %d, %q", n, code, errs)
		}
	}
	if code, out, errs := cli(t, vars, "sync", "--page-size", "1"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, vars, "sync", "--page-size", "1"); code != exitOK || !strings.Contains(out, "3 event(s) read") {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
}
