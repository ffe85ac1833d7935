package replica

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// Defaults for Options.
const (
	DefaultAPIURL   = "https://api.ploti.ai"
	DefaultPageSize = 500
	// DefaultPrefetch is how many datasets' files a bootstrap downloads at
	// once, ahead of the loads: over a link with latency, small files are
	// fetched many at a time.
	DefaultPrefetch = 16
	// DefaultSpoolLimit bounds the bytes of snapshots downloaded ahead and
	// not yet loaded.
	DefaultSpoolLimit = 256 << 20
	// DefaultStreamMin is the least size of a snapshot loaded while it
	// downloads, when its link serves byte ranges.
	DefaultStreamMin = 64 << 20
)

// IDRef names a user table column that holds a dataset's record ids; when
// Ploti replaces the ids (resync_required record_ids_changed) the column is
// rewritten through the id map in the same transaction as the reload.
type IDRef = storage.IDRef

// Options configure a Replica.
type Options struct {
	// APIURL is the Ploti API base; default DefaultAPIURL.
	APIURL string
	// APIKey is the Ploti API key (a secret: never logged).
	APIKey string
	// SubscriptionID is the Data Feeds subscription to replicate. It may
	// be empty with Watch set: the file then keeps watched datasets only
	// (unless it already replicates a subscription, which it goes on with).
	SubscriptionID string
	// Watch makes Sync also keep every dataset the API key's member
	// watches current (Ploti's watch API; docs/wire.md section 9), after
	// the feed: one call lists the watches with each dataset's version, and
	// the ones that moved are merged or read again. A dataset that is both
	// in the subscription and watched is kept from the feed.
	Watch bool
	// HTTPClient is used for API calls and downloads; default fetch's.
	HTTPClient *http.Client
	// API replaces the HTTP client altogether (a custom transport, a
	// recording client); when set, APIURL/APIKey/HTTPClient are not used for calls.
	API API
	// Logger receives the replica's logs (and its API client's and
	// executor's); nil: no logs.
	Logger *slog.Logger
	// OnMajor is what a MAJOR schema change does: OnMajorHold (the
	// default) or OnMajorReload.
	OnMajor string
	// IDReferences are user columns holding record ids, rewritten when a
	// dataset's ids are replaced.
	IDReferences []IDRef
	// MemoryLimit is DuckDB's memory_limit (e.g. "1GB"); empty: DuckDB's default.
	MemoryLimit string
	// Threads is DuckDB's thread count; 0: DuckDB's default.
	Threads int
	// LockTimeout is how long Open waits while another process holds the
	// file; 0: DefaultLockTimeout.
	LockTimeout time.Duration
	// OnLocked is told once which process holds the file.
	OnLocked func(msg string)
	// NoCreate makes Open fail with ErrNoFile when there is no
	// file, rather than create one (for commands that only edit state).
	NoCreate bool
	// PageSize is the event page size; default DefaultPageSize (at most 500).
	PageSize int
	// BatchEvents is how many events of the log one transaction of the
	// walk holds at most, over the pages read ahead; default
	// DefaultBatchEvents. A transaction also ends after 3 s or 64 MiB of
	// changes files merged, and before any wait on the API; the cursor
	// commits with the rows it covers, so a crash replays at most one
	// transaction's events. 1: a transaction a page.
	BatchEvents int
	// Prefetch is how many datasets' files a bootstrap downloads at once,
	// ahead of the loads; default DefaultPrefetch, 1 downloads one at a time.
	Prefetch int
	// SpoolLimit bounds the bytes of snapshots downloaded ahead and waiting
	// for their load; default DefaultSpoolLimit. A dataset larger than it
	// is downloaded alone. The walk's changes files fetched ahead of their
	// merges stay within it too (apply.Executor.AheadBytes: files of at
	// most 16 MiB, one at least).
	SpoolLimit int64
	// StreamMin is the least size of a snapshot (one Parquet file) that
	// a DuckDB file loads while it downloads: its footer is asked for
	// first with a Range request and each run of row groups is inserted
	// as it arrives, in the load's one transaction (docs/decisions.md 50).
	// Only when the link's server answers ranges; any other snapshot, or
	// a failure on the way, is downloaded whole. 0: DefaultStreamMin;
	// negative: never.
	StreamMin int64
	// SpoolDir is the folder under which a sync keeps the files it
	// downloads (its own folder <file name>.spool inside, removed when the
	// replica closes); default: beside the file. Put it on another disk
	// when the file's has no room for a dataset's snapshot twice over.
	SpoolDir string
	// KeepChanges is how many of each dataset's latest logged versions keep
	// their rows in _ploti.changes; 0 keeps them all. Each sync drops the
	// older ones after its own commits, best effort.
	KeepChanges int
	// History lists the datasets that keep history (HistoryAll: every
	// one): history.<table> then holds every version of every record
	// since, with time travel by version and time (docs/decisions.md 45).
	// Nil: none. A dataset already held starts its history at the version
	// held.
	History []string
	// HistoryKeep bounds each history after a sync; zero keeps it all.
	HistoryKeep HistoryKeep
	// Now is the clock for _ploti timestamps; default time.Now.
	Now func() time.Time
	// Progress, when set, is told what the sync is doing (for progress bars).
	Progress func(Progress)
	// FetchOptions tweak the API client (retries, waits, rate limits).
	FetchOptions func(*fetch.Options)
	// ReleaseWhileWaiting lets a sync give the DuckDB file up while it
	// waits on Ploti between tries (a Retry-After, a backoff of
	// fetch.Options.LongWait or more) with nothing of the file in use (the
	// walk's own events reads, the manifest's), so that other processes
	// open it meanwhile; the sync takes it back after (waiting LockTimeout
	// for it) and fails if another process wrote to it meanwhile. No
	// transaction is open across the gap. Handles from DB() and
	// ReadOnly() stay valid but their queries fail during the gap, which
	// is why it is off by default; the CLI's sync and serve set it.
	ReleaseWhileWaiting bool
	// AttachmentsInlineMax is the largest attachment kept in
	// _ploti.attachments itself (a BLOB); larger ones are kept in a folder
	// beside the file (<file>.attachments). 0: DefaultAttachmentsInlineMax;
	// negative: every attachment is kept as a file.
	AttachmentsInlineMax int64
	// Geometry is how the file's tables store geometry columns:
	// GeometryNative (DuckDB's GEOMETRY: DuckDB 1.5 reads it as
	// geometry, older clients without the spatial extension cannot) or
	// GeometryWKB (standard WKB in a BLOB, which every DuckDB
	// client reads). The file remembers it, a new file starts with
	// GeometryNative, and Open with the other converts the tables. Empty:
	// the file's.
	Geometry string
	// Publish, when set, is a path to which each Sync that committed (all
	// applied, or ErrPartial) writes a checkpointed, read-only copy of the
	// file, renamed over it atomically (see Replica.Publish): readers of
	// that path never meet the writer's lock and see whole syncs only.
	Publish string
}

// Progress is one step of a sync: its Phase is one of the Phase
// constants.
// Phases of a sync (Progress.Phase).
const (
	// PhaseBootstrap: Done of Total manifest datasets loaded.
	PhaseBootstrap = "bootstrap"
	// PhaseLoad: a snapshot of DatasetID at Version being loaded (the
	// manifest's, or a rebuilt dataset's).
	PhaseLoad = "load"
	// PhaseEvents: event Done of Total on the log's page being applied,
	// for DatasetID; its merges and reloads are part of it.
	PhaseEvents = "events"
	// PhaseWatch: watched dataset Done of Total being brought current.
	PhaseWatch = "watch"
)

type Progress struct {
	Phase     string
	DatasetID string
	Version   int
	Done      int
	Total     int
}

// Replica keeps one DuckDB file current with one subscription.
type Replica struct {
	opts     Options
	db       *storage.DB
	api      API
	watchAPI WatchAPI // nil when the API client has no watch calls
	exec     *apply.Executor
	spool    string
	log      *slog.Logger
	// kept are events pages read ahead of the walk, by the cursor they
	// follow (catchUpFromManifest); a sync takes them instead of reading.
	kept map[string]keptPage
	// ahead reads the pages after those in the background while the
	// catch-up loads from the manifest (logahead.go); nil when not.
	ahead *logAhead
	// rebootstrap is set while Rebootstrap runs: the bootstrap reloads
	// datasets at the version they hold too.
	rebootstrap bool
	memo        *linkMemo // r.api, remembering attachment links (attachments.go)
	// rate and burst are the client's rate limit (rateLimited), read at
	// Open; zero when it has none.
	rate, burst int
	// busy lets one Sync, Rebootstrap, Release or Verify run at a time:
	// they share the spool folder, the read-ahead pages and the walk's
	// state, and two walks at once would fail datasets that nothing is
	// wrong with.
	busy chan struct{}
	// stop is the stop signal of the walk under way; nil between walks
	// (stop.go).
	stop atomic.Pointer[stopSignal]
	// closed is set when Close begins: every later call gets ErrClosed.
	closed atomic.Bool
}

// Open opens (or creates) the DuckDB file at path for the subscription, or,
// when path is a postgres:// URL, the PostgreSQL database it names (which
// must exist; PostGIS and _ploti are made in it). A file has one Replica
// at a time, in this process as across processes: a second Open waits for
// the first's Close (Options.LockTimeout), then fails with
// ErrLocked.
func Open(ctx context.Context, path string, opts Options) (*Replica, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Replica{opts: opts, spool: SpoolDir(path, opts.SpoolDir), log: logs.OrDiscard(opts.Logger), kept: map[string]keptPage{},
		busy: make(chan struct{}, 1)}
	api, err := opts.client(r.spool)
	if err != nil {
		return nil, err
	}
	if IsDatabase(path) && len(opts.History) > 0 {
		return nil, fmt.Errorf("open replica: Options.History: history is %w (docs/decisions.md 48)", storage.ErrFileOnly)
	}
	db, err := backends.Open(ctx, path, storage.Options{MemoryLimit: opts.MemoryLimit, Threads: opts.Threads,
		LockTimeout: opts.LockTimeout, OnLocked: opts.OnLocked, Now: opts.Now, NoCreate: opts.NoCreate, Geometry: opts.Geometry,
		Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	if l, ok := api.(rateLimited); ok {
		r.rate, r.burst = l.CallsPerMinute()
	}
	r.memo = &linkMemo{API: api} // attachment links, from the answers a sync reads anyway
	r.db, r.api = db, r.memo
	r.exec = &apply.Executor{DB: db, Source: newSource(r.api, api, opts.StreamMin), OnMajor: opts.OnMajor, IDRefs: opts.IDReferences,
		Log: r.log, AheadBytes: opts.SpoolLimit, History: keepsHistory(opts.History)}
	if wa, ok := api.(WatchAPI); ok { // the client itself: the memo wraps only the feed's calls
		r.watchAPI = wa
		r.exec.Watch = &watchSource{api: wa, src: &source{api: r.api}}
	}
	return r, nil
}

// withDefaults fills in the options left unset, and refuses those out of
// range.
func (opts Options) withDefaults() (Options, error) {
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	if opts.PageSize <= 0 || opts.PageSize > 500 {
		opts.PageSize = DefaultPageSize
	}
	if opts.Prefetch <= 0 {
		opts.Prefetch = DefaultPrefetch
	}
	if opts.SpoolLimit <= 0 {
		opts.SpoolLimit = DefaultSpoolLimit
	}
	if opts.StreamMin == 0 {
		opts.StreamMin = DefaultStreamMin
	}
	if opts.OnMajor == "" {
		opts.OnMajor = apply.OnMajorHold
	}
	if opts.OnMajor != apply.OnMajorHold && opts.OnMajor != apply.OnMajorReload {
		return opts, fmt.Errorf("open replica: OnMajor %q is neither %q nor %q", opts.OnMajor, apply.OnMajorHold, apply.OnMajorReload)
	}
	if err := storage.CheckGeometry(opts.Geometry); err != nil {
		return opts, fmt.Errorf("open replica: %w", err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return opts, nil
}

// client is the API the replica calls: Options.API, else a fetch client
// that downloads into spool.
func (opts Options) client(spool string) (API, error) {
	if opts.API != nil {
		return opts.API, nil
	}
	if opts.SubscriptionID == "" && !opts.Watch {
		return nil, fmt.Errorf("open replica: %w", ErrNothingToKeep)
	}
	fo := fetch.Options{BaseURL: opts.APIURL, APIKey: opts.APIKey, HTTPClient: opts.HTTPClient, SpoolDir: spool, Logger: opts.Logger}
	if opts.FetchOptions != nil {
		opts.FetchOptions(&fo)
	}
	c, err := fetch.New(fo)
	if err != nil {
		return nil, fmt.Errorf("open replica: %w", err)
	}
	return c, nil
}

// DB is the database for queries; in-process readers see the last committed
// state, whole versions only, while a sync runs.
func (r *Replica) DB() *sql.DB { return r.db.SQL() }

// Path is the DuckDB file's path.
func (r *Replica) Path() string { return r.db.Path() }

// Close stops the walk under way, if any, at its next commit point (as
// StopSync does) and waits for it, then closes the file, keeping its
// status beside it for `status` (summary.go), and removes the spool
// folder. Every call after Close returns ErrClosed; a second Close does
// nothing.
func (r *Replica) Close() error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	r.StopSync()
	r.busy <- struct{}{} // the walk under way has returned
	defer func() { <-r.busy }()
	var err error
	if sc, ok := r.db.Engine().(storage.SummaryCloser); ok {
		err = sc.CloseWithSummary(context.Background(), func(ctx context.Context) ([]byte, error) { return summarize(ctx, r.db) })
	} else {
		err = r.db.Close()
	}
	if rerr := os.RemoveAll(r.spool); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}
