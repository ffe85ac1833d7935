package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// timedAPI is the real API client with a stopwatch on downloads and on
// the API's other calls, so the time spent on HTTP (and, for the calls, in
// the emulator's handlers, which run on the same cores) can be taken out of
// the engine's time and reported apart. That holds while the replica makes
// one call at a time: a bootstrap of several datasets downloads several at
// once, and its sync is timed whole.
type timedAPI struct {
	replica.API
	watch    replica.WatchAPI // the same client's watch calls
	mu       sync.Mutex
	download cost
	calls    cost
	bytes    int64
	files    int
	n        map[string]int // API calls by kind
}

func (t *timedAPI) Download(ctx context.Context, f ploti.File, name string, refresh func(context.Context) (ploti.File, error)) (string, error) {
	stop := startWatch()
	p, err := t.API.Download(ctx, f, name, refresh)
	t.countFile(stop(), f)
	return p, err
}

// countFile adds a file's download time and bytes.
func (t *timedAPI) countFile(took cost, f ploti.File) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.download = t.download.add(took)
	t.files++
	if f.Bytes != nil {
		t.bytes += *f.Bytes
	}
}

// Stream is the client's Stream, counted as a download; its time is the
// footer's alone (the body downloads while the load runs), so a sync that
// streams is timed whole.
func (t *timedAPI) Stream(ctx context.Context, f ploti.File, name string, refresh func(context.Context) (ploti.File, error)) (*fetch.Stream, error) {
	c, ok := t.API.(*fetch.Client)
	if !ok {
		return nil, fmt.Errorf("stream %s: %w", name, fetch.ErrNoRanges)
	}
	stop := startWatch()
	s, err := c.Stream(ctx, f, name, refresh)
	t.countFile(stop(), f)
	return s, err
}

// streamMin is Options.StreamMin: above a MiB, or never.
func streamMin(on bool) int64 {
	if on {
		return 1 << 20
	}
	return -1
}

// timed times one API call and counts it under kind.
func timed[T any](t *timedAPI, kind string, call func() (T, error)) (T, error) {
	stop := startWatch()
	v, err := call()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = t.calls.add(stop())
	if t.n == nil {
		t.n = map[string]int{}
	}
	t.n[kind]++
	return v, err
}

func (t *timedAPI) Manifest(ctx context.Context, sub, asOf string) (*ploti.Manifest, error) {
	return timed(t, "manifest", func() (*ploti.Manifest, error) { return t.API.Manifest(ctx, sub, asOf) })
}

func (t *timedAPI) Events(ctx context.Context, sub, cursor string, limit int, types []string) (*ploti.EventPage, error) {
	return timed(t, "events", func() (*ploti.EventPage, error) { return t.API.Events(ctx, sub, cursor, limit, types) })
}

func (t *timedAPI) Dataset(ctx context.Context, id string) (*ploti.Dataset, error) {
	return timed(t, "dataset", func() (*ploti.Dataset, error) { return t.API.Dataset(ctx, id) })
}

// CallsPerMinute passes the client's rate limit on to the replica.
func (t *timedAPI) CallsPerMinute() (rate, burst int) {
	if l, ok := t.API.(interface{ CallsPerMinute() (int, int) }); ok {
		return l.CallsPerMinute()
	}
	return 0, 0
}

func (t *timedAPI) DatasetsPage(ctx context.Context, q fetch.DatasetsQuery) (*ploti.DatasetPage, error) {
	return timed(t, "datasets", func() (*ploti.DatasetPage, error) { return t.API.DatasetsPage(ctx, q) })
}

func (t *timedAPI) Version(ctx context.Context, id string, version int) (*ploti.Version, error) {
	return timed(t, "version", func() (*ploti.Version, error) { return t.API.Version(ctx, id, version) })
}

func (t *timedAPI) VersionByLink(ctx context.Context, link string) (*ploti.Version, error) {
	return timed(t, "version", func() (*ploti.Version, error) { return t.API.VersionByLink(ctx, link) })
}

func (t *timedAPI) Links(ctx context.Context, id string, version int, files []string) (*ploti.Version, error) {
	return timed(t, "links", func() (*ploti.Version, error) { return t.API.Links(ctx, id, version, files) })
}

func (t *timedAPI) Schema(ctx context.Context, id string, version int) (*ploti.Schema, error) {
	return timed(t, "schema", func() (*ploti.Schema, error) { return t.API.Schema(ctx, id, version) })
}

// The watch API's calls, timed as the others: a spooled read's HTTP, its
// JSON decoding and its file writes are the API's side, not DuckDB's.

func (t *timedAPI) Watches(ctx context.Context) ([]ploti.Watch, error) {
	return timed(t, "watches", func() ([]ploti.Watch, error) { return t.watch.Watches(ctx) })
}

func (t *timedAPI) DatasetInfo(ctx context.Context, id string) (*ploti.DatasetInfo, error) {
	return timed(t, "dataset info", func() (*ploti.DatasetInfo, error) { return t.watch.DatasetInfo(ctx, id) })
}

func (t *timedAPI) SpoolChanges(ctx context.Context, id string, version int, name string) (*fetch.ChangesSpool, error) {
	return timed(t, "changes", func() (*fetch.ChangesSpool, error) { return t.watch.SpoolChanges(ctx, id, version, name) })
}

func (t *timedAPI) SpoolRows(ctx context.Context, id string, ids []string, name string) (*fetch.RowSet, error) {
	return timed(t, "rows", func() (*fetch.RowSet, error) { return t.watch.SpoolRows(ctx, id, ids, name) })
}

// cost is what a step took: wall time, and the process's CPU time (which
// the other users of a shared machine do not inflate).
type cost struct {
	Wall, CPU time.Duration
}

func (c cost) add(o cost) cost { return cost{c.Wall + o.Wall, c.CPU + o.CPU} }
func (c cost) sub(o cost) cost { return cost{c.Wall - o.Wall, c.CPU - o.CPU} }

// startWatch starts measuring; the function it returns reads the cost so far.
func startWatch() func() cost {
	start, cpu := time.Now(), cpuTime()
	return func() cost { return cost{time.Since(start), cpuTime() - cpu} }
}

// syncRun is one engine sync: what it took, the parts spent downloading
// and in the API's other calls, and what the sync did.
type syncRun struct {
	Total, Download, API cost
	// Open is what replica.Open took: mostly its whole read of an
	// existing file (docs/decisions.md 31), which grows with the file.
	Open   cost
	Bytes  int64
	Files  int            // files downloaded
	Calls  map[string]int // API calls by kind
	Result replica.SyncResult
}

// CallCount is every API call the sync made.
func (s syncRun) CallCount() int {
	n := 0
	for _, c := range s.Calls {
		n += c
	}
	return n
}

// Engine is the sync's cost minus the downloads' and the API calls'.
func (s syncRun) Engine() cost { return s.Total.sub(s.Download).sub(s.API) }

// Network is what the downloads and API calls took.
func (s syncRun) Network() cost { return s.Download.add(s.API) }

// engineOpts are the replica settings a run uses.
type engineOpts struct {
	Threads     int
	MemoryLimit string
	// RateLimit keeps the client's rate limiter on (Ploti's 120 calls a
	// minute, as users have it); the bench's other sections turn it off.
	RateLimit bool
	Geometry  string // Options.Geometry; empty: the file's
	// History is Options.History (the history section turns it on).
	History []string
	// Stream lets a snapshot of more than a MiB load while it downloads
	// (Options.StreamMin; the default is 64 MiB, lowered so that
	// --quick's 1M-row file takes the path too); off, every file is
	// downloaded whole first, so that the download's time can be taken out.
	Stream bool
	// Settled says the caller ran settle() before its own measurement
	// began (a PostgreSQL reader's latency, timed across the step): the
	// step does not run it again inside that window.
	Settled bool
}

// engineSync opens the replica at path, syncs it with the emulator and
// closes it (the close checkpoints the file, as the CLI's sync does).
func engineSync(ctx context.Context, em *emulator.Emulator, sub, path string, eo engineOpts) (syncRun, error) {
	return syncWith(ctx, em.URL(), em.APIKey(), sub, path, eo)
}

// watchSync is engineSync of a file that keeps the member's watches and no
// subscription.
func watchSync(ctx context.Context, em *emulator.Emulator, path string, eo engineOpts) (syncRun, error) {
	return syncWatching(ctx, em.URL(), em.APIKey(), "", path, eo, true)
}

func syncWith(ctx context.Context, apiURL, key, sub, path string, eo engineOpts) (syncRun, error) {
	return syncWatching(ctx, apiURL, key, sub, path, eo, false)
}

// syncWatching is syncWith, keeping the member's watches too when watch is set.
func syncWatching(ctx context.Context, apiURL, key, sub, path string, eo engineOpts, watch bool) (syncRun, error) {
	var run syncRun
	// The client-side rate limit (Ploti's 120 calls a minute) is off unless
	// asked for: the emulator has none, and the bench measures the engine,
	// not the wait.
	spool := path + ".spool"
	if backends.IsDatabase(path) {
		// A database has no folder beside it: a temporary one.
		d, err := os.MkdirTemp("", "ploti-bench-spool-")
		if err != nil {
			return run, err
		}
		defer os.RemoveAll(d)
		spool = d
	}
	client, err := fetch.New(fetch.Options{BaseURL: apiURL, APIKey: key, SpoolDir: spool, DisableRateLimit: !eo.RateLimit})
	if err != nil {
		return run, err
	}
	api := &timedAPI{API: client, watch: client}
	if !eo.Settled {
		settle()
	}
	stop := startWatch()
	r, err := replica.Open(ctx, path, replica.Options{APIURL: apiURL, SubscriptionID: sub, API: api, Watch: watch,
		Threads: eo.Threads, MemoryLimit: eo.MemoryLimit, Geometry: eo.Geometry, History: eo.History, StreamMin: streamMin(eo.Stream)})
	if err != nil {
		return run, err
	}
	run.Open = stop()
	run.Result, err = r.Sync(ctx)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	run.Total = stop()
	run.Download, run.API, run.Bytes, run.Files, run.Calls = api.download, api.calls, api.bytes, api.files, api.n
	if err != nil {
		return run, fmt.Errorf("sync %s: %w", path, err)
	}
	return run, nil
}

// localSource serves a version's files straight from the emulator's
// directory: the engine's load path with no HTTP at all.
type localSource struct {
	em     *emulator.Emulator
	schema *ploti.Schema
}

func (s *localSource) Version(ctx context.Context, datasetID string, version int, link string) (*ploti.Version, error) {
	return &ploti.Version{DatasetID: datasetID, Version: version, SchemaVersion: s.schema.SchemaVersion}, nil
}

func (s *localSource) Current(ctx context.Context, datasetID string) (int, error) {
	return 0, errors.New("local source: no current version")
}

func (s *localSource) Schema(ctx context.Context, v *ploti.Version) (*ploti.Schema, error) {
	return s.schema, nil
}

func (s *localSource) Download(ctx context.Context, v *ploti.Version, kind string) ([]string, error) {
	switch kind {
	case "snapshot":
		return s.em.SnapshotFiles(ctx, v.DatasetID, v.Version)
	case "changes":
		p, err := s.em.ChangesFile(ctx, v.DatasetID, v.Version)
		return []string{p}, err
	}
	return nil, fmt.Errorf("local source: no %s files", kind)
}

// Discard keeps the files: they are the emulator's.
func (s *localSource) Discard([]string) {}

// engineReload loads a version's snapshot over the dataset's table in the
// file (or database) at path, through the engine's own reload (apply.Executor.LoadVersion:
// snapshot swap, registry row, one transaction), from local files, then
// closes the file. reloads > 1 loads it that many times in one session,
// calling each (when not nil) after each.
func engineReload(ctx context.Context, em *emulator.Emulator, path, datasetID string, version, reloads int, eo engineOpts, each func(i int)) (cost, error) {
	if !eo.Settled {
		settle()
	}
	stop := startWatch()
	db, err := backends.Open(ctx, path, storage.Options{Threads: eo.Threads, MemoryLimit: eo.MemoryLimit})
	if err != nil {
		return cost{}, err
	}
	err = func() error {
		d, err := db.Dataset(ctx, datasetID)
		if err != nil {
			return err
		}
		src := &localSource{em: em, schema: &ploti.Schema{DatasetID: datasetID, SchemaVersion: d.SchemaVersion, Columns: d.Columns, KeyColumns: d.KeyColumns}}
		x := &apply.Executor{DB: db, Source: src}
		v, _ := src.Version(ctx, datasetID, version, "")
		for i := range reloads {
			if _, err := x.LoadVersion(ctx, d, v, false); err != nil {
				return fmt.Errorf("reload %s v%d: %w", datasetID, version, err)
			}
			if each != nil {
				each(i + 1)
			}
		}
		return nil
	}()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return stop(), err
}

// rawLoad is DuckDB alone: a fresh file, CREATE TABLE … AS SELECT * FROM
// read_parquet(…), close.
func rawLoad(ctx context.Context, path, table string, files []string, eo engineOpts) (cost, error) {
	settle()
	stop := startWatch()
	err := withPlain(ctx, path, eo, func(db *sql.DB) error {
		_, err := db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM read_parquet(%s)", storage.Ident(table), fileList(files)))
		return err
	})
	return stop(), err
}

// rawMergeSQL applies one changes file with the two statements a merge by
// record id needs, in one transaction: no checks, no bookkeeping.
func rawMergeSQL(table, file string) []string {
	t, f := storage.Ident(table), fileList([]string{file})
	return []string{
		"BEGIN",
		fmt.Sprintf("DELETE FROM %s WHERE _ploti_record_id IN (SELECT _ploti_record_id FROM read_parquet(%s) WHERE _ploti_change <> 'added')", t, f),
		fmt.Sprintf("INSERT INTO %s BY NAME SELECT * EXCLUDE (_ploti_change) FROM read_parquet(%s) WHERE _ploti_change <> 'removed'", t, f),
		"COMMIT",
	}
}

// rawMergesIn applies changes files (table → file) to the file at path,
// one transaction each, or one for all the files when oneTx is set, after
// the setup statements (settings), then closes it.
func rawMergesIn(ctx context.Context, path string, merges [][2]string, eo engineOpts, oneTx bool, setup ...string) (cost, error) {
	return timedPlain(ctx, path, eo, setup, func(exec func(string) error) error {
		if oneTx {
			if err := exec("BEGIN"); err != nil {
				return err
			}
		}
		for _, m := range merges {
			for _, q := range rawMergeSQL(m[0], m[1]) {
				if oneTx && (q == "BEGIN" || q == "COMMIT") {
					continue
				}
				if err := exec(q); err != nil {
					return fmt.Errorf("raw merge of %s: %w", m[1], err)
				}
			}
		}
		if oneTx {
			return exec("COMMIT")
		}
		return nil
	})
}

// timedPlain times DuckDB alone's work on the file at path: it opens the
// file, runs the setup statements (settings) and fn on one connection
// (exec runs a statement), and closes it.
func timedPlain(ctx context.Context, path string, eo engineOpts, setup []string, fn func(exec func(string) error) error) (cost, error) {
	settle()
	stop := startWatch()
	err := withPlain(ctx, path, eo, func(db *sql.DB) error {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		exec := func(q string) error {
			_, err := conn.ExecContext(ctx, q)
			return err
		}
		for _, q := range setup {
			if err := exec(q); err != nil {
				return err
			}
		}
		return fn(exec)
	})
	return stop(), err
}

func withPlain(ctx context.Context, path string, eo engineOpts, fn func(*sql.DB) error) error {
	db, err := duckread.OpenPlain(ctx, path, storage.Options{Threads: eo.Threads, MemoryLimit: eo.MemoryLimit})
	if err != nil {
		return err
	}
	err = fn(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

func fileList(files []string) string {
	s := "["
	for i, f := range files {
		if i > 0 {
			s += ", "
		}
		s += storage.Literal(f)
	}
	return s + "]"
}

// tableRows counts a table's rows in a closed file.
func tableRows(ctx context.Context, path, table string) (int64, error) {
	var n int64
	err := withPlain(ctx, path, engineOpts{}, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, "SELECT count(*) FROM "+storage.Ident(table)).Scan(&n)
	})
	return n, err
}

// copyDB copies a closed DuckDB file (flushed to disk, so that write-back
// does not run into the next measurement) and removes any stale WAL of dst.
func copyDB(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	os.Remove(dst + ".wal")
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyEngineDB copies a closed replica file as copyDB does, then reads the
// copy back whole once (readOnce; decision 31) so that its stamp is kept:
// the timed sync then meets the file as the engine's own last close left
// it, as a user's next sync does, instead of paying the whole read of a
// file the engine has not seen in this state (a copy is another inode).
// It returns that read's time, for the report.
func copyEngineDB(ctx context.Context, src, dst string) (time.Duration, error) {
	if err := copyDB(src, dst); err != nil {
		return 0, err
	}
	start := time.Now()
	err := readOnce(ctx, dst)
	return time.Since(start), err
}

// fileSize is a file's size in bytes, with its WAL.
func fileSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + ".wal"} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}

// removeDB removes a DuckDB file, its WAL and the replica's spool.
func removeDB(path string) {
	os.Remove(path)
	os.Remove(path + ".wal")
	os.RemoveAll(path + ".spool")
}
