package emulator

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB driver, for staging and Parquet files
)

// DefaultAPIKey is the bearer key /v1 requires when Options.APIKey is empty.
const DefaultAPIKey = "ploti_test_key"

// DefaultStart is where the default manual clock starts.
var DefaultStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// DefaultDuckDBMemoryLimit is the emulator DuckDB's memory limit when
// Options.DuckDBMemoryLimit is empty.
const DefaultDuckDBMemoryLimit = "4GB"

// LinkLifetime is how long a signed file link stays valid (docs: "Links last
// one hour").
const LinkLifetime = time.Hour

// Retention is how long events and files are kept (docs: "Events are kept for
// 90 days", "Snapshots and changes files are kept 90 days").
const Retention = 90 * 24 * time.Hour

// Options configure an Emulator. The zero value is ready to use.
type Options struct {
	// APIKey is the bearer key every /v1 call needs. Empty means DefaultAPIKey.
	APIKey string
	// Dir is where the emulator keeps the Parquet and JSON files it serves
	// and DuckDB's spill files. Empty means a temporary directory that Close
	// removes; a given Dir is left in place (only the emulator's own files/,
	// truth/, watch/ and duckdb-tmp/ under it are replaced).
	Dir string
	// Now is the emulator's base clock. Nil means a manual clock that starts at
	// DefaultStart and only moves with Advance. Advance adds to whatever Now
	// returns in either case.
	//
	// A webhook's webhook-timestamp header (and the signature over it) is
	// the one value a receiver checks against its own wall clock, so it is
	// signed with WebhookNow: Now()+Advance's offset when Now is set, as
	// everything else, but under the manual clock the real time plus
	// Advance's offset, so that a real receiver accepts the deliveries of
	// an emulator built with the zero Options. Delivery.At, retries and the
	// events' own timestamps stay on the emulator clock.
	Now func() time.Time
	// NoRateLimit turns the per-key rate limits off (see SetRateLimit).
	NoRateLimit bool
	// CheckInterval is the time between source checks of a dataset, which sets
	// refresh.nextCheckBy after each publish. Zero means 24 hours.
	CheckInterval time.Duration
	// DuckDBThreads caps DuckDB's threads; zero leaves DuckDB's default.
	DuckDBThreads int
	// DuckDBMemoryLimit caps the memory of the emulator's DuckDB (which
	// spills to Dir beyond it), such as "2GB"; empty means
	// DefaultDuckDBMemoryLimit.
	DuckDBMemoryLimit string
	// CompressTables keeps a build's tables compressed in memory: the
	// emulator's database is an in-memory one attached with COMPRESS, and
	// a build checkpoints it after each whole-version table it makes.
	// DuckDB keeps an in-memory table uncompressed otherwise, and spills
	// it so to Dir: the next version of a 100M-row table spilled more than
	// 45 GB. Compressed, a table of 10M permits-like rows held 134 MB
	// instead of 1.28 GB, for about 3 s of CPU a checkpoint. The bench's
	// scale section sets it; builds of test size do not need it.
	CompressTables bool
	// RowGroupRows is the rows a row group of the Parquet files it writes
	// holds; zero means DuckDB's default (122,880). Tests set it low to
	// have several row groups in a small file (a snapshot loaded as it
	// downloads reads them in turn).
	RowGroupRows int
	// Logger receives what an embedder wants to see of the emulator at
	// work: each webhook delivery attempt (debug when the receiver took it,
	// warn when not), each injected fault that hits (debug) and each
	// publish (info). No line carries the API key, a webhook's secret or
	// custom header, or a link's signature. Nil discards.
	Logger *slog.Logger
}

// Emulator is a Ploti Data Feeds server. Create one with New, seed it with
// AddPlace, AddTopic, AddDataset and CreateSubscription, publish versions with
// Publish or PublishQuery, and serve it with Start (or StartOn, or Handler).
type Emulator struct {
	opts    Options
	apiKey  string
	dir     string
	tempDir bool
	db      *sql.DB
	secret  []byte
	log     *slog.Logger // Options.Logger, or a discarding one

	// pubMu serializes the methods that write to DuckDB (publishing and staff
	// actions), so HTTP handlers never wait for a long build.
	pubMu sync.Mutex

	// mu guards the model below.
	mu        sync.Mutex
	offset    time.Duration
	places    []*Place
	topics    []Topic
	datasets  map[string]*dataset
	dsOrder   []string
	subs      map[string]*subscription
	subOrder  []string
	nextSub   int
	nextEvent int64
	idem      map[string]idemEntry
	planDown  bool
	rateOn    bool
	limiter   limiter
	faults    []*fault
	faultHits map[FaultKind]int // hits taken, by kind (FaultHits)
	lastSweep time.Time
	coverage  map[string]bool // covered county ids; nil: everything
	linkLife  time.Duration   // signed link lifetime; zero: LinkLifetime

	keyLeaks atomic.Int64
	noRanges atomic.Bool // file links ignore Range headers (SetRanges)
	created  time.Time   // real time of New, for the rate limit under the manual clock

	webhooks *webhookState // webhooks and their delivery queue (webhooks.go); nil until first used
	wire     wireState     // the imitated network (wire.go); off until SetWire

	watches      map[string]*watch                       // the members' watches by watchKey (watch.go)
	watchOrder   []string                                // their keys, oldest first
	memberEvents []*memberEvent                          // dataset.changed and request events, in order (member.go)
	rowsUse      atomic.Int64                            // counts rows cache uses, for eviction (watchrows.go)
	truthN       int                                     // numbers WatchTruth's work (watchtruth.go)
	watchSpoil   map[string]func(string, map[string]any) // SpoilWatch's, by dataset id

	demo *Demo // the demo world seeded into it, for PublishNext and the control endpoints (drive.go)

	keys        map[string]*apiKey // API keys by key (keys.go)
	membersGone map[string]bool    // members who left the workspace

	apiSrv, fileSrv *http.Server
	apiURL, fileURL string
	serveWG         sync.WaitGroup
	closed          bool
}

// New builds an Emulator from opts. It opens the DuckDB scratch file but does
// not listen yet: call Start, StartOn, or serve Handler yourself.
func New(opts Options) (*Emulator, error) {
	e := &Emulator{
		opts:     opts,
		apiKey:   opts.APIKey,
		dir:      opts.Dir,
		datasets: map[string]*dataset{},
		subs:     map[string]*subscription{},
		idem:     map[string]idemEntry{},
		watches:  map[string]*watch{},
		rateOn:   !opts.NoRateLimit,
		created:  time.Now(),
	}
	if e.apiKey == "" {
		e.apiKey = DefaultAPIKey
	}
	e.keys = map[string]*apiKey{e.apiKey: {member: DefaultMember, perms: AllPermissions()}}
	e.membersGone = map[string]bool{}
	if e.log = opts.Logger; e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.opts.CheckInterval <= 0 {
		e.opts.CheckInterval = 24 * time.Hour
	}
	e.secret = make([]byte, 32)
	if _, err := rand.Read(e.secret); err != nil {
		return nil, fmt.Errorf("make link secret: %w", err)
	}
	if e.dir == "" {
		d, err := os.MkdirTemp("", "ploti-emulator-")
		if err != nil {
			return nil, fmt.Errorf("make emulator dir: %w", err)
		}
		e.dir, e.tempDir = d, true
	} else {
		for _, name := range []string{"files", "truth", "watch", "duckdb-tmp"} {
			if err := os.RemoveAll(filepath.Join(e.dir, name)); err != nil {
				return nil, fmt.Errorf("clear emulator dir: %w", err)
			}
		}
		if err := os.MkdirAll(e.dir, 0o755); err != nil {
			return nil, fmt.Errorf("make emulator dir: %w", err)
		}
	}
	if err := e.openDB(); err != nil {
		e.removeDir()
		return nil, err
	}
	e.lastSweep = e.Now()
	return e, nil
}

func (e *Emulator) openDB() error {
	// An in-memory database that spills to Dir: builds write only Parquet
	// files, and a version's rows are read back from them (persistent DuckDB
	// tables cost more to write than the whole build otherwise takes).
	db, err := e.openSQL()
	if err != nil {
		return fmt.Errorf("open emulator database: %w", err)
	}
	limit := e.opts.DuckDBMemoryLimit
	if limit == "" {
		limit = DefaultDuckDBMemoryLimit
	}
	stmts := []string{"SET GLOBAL TimeZone = 'UTC'",
		// Never reach for the network for an extension.
		"SET GLOBAL autoinstall_known_extensions = false", "SET GLOBAL autoload_known_extensions = false",
		"SET GLOBAL temp_directory = " + lit(filepath.Join(e.dir, "duckdb-tmp")),
		"SET GLOBAL memory_limit = " + lit(limit)}
	if e.opts.DuckDBThreads > 0 {
		stmts = append(stmts, fmt.Sprintf("SET threads = %d", e.opts.DuckDBThreads))
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			db.Close()
			return fmt.Errorf("set up emulator database: %w", err)
		}
	}
	e.db = db
	return nil
}

func (e *Emulator) removeDir() {
	if e.tempDir {
		os.RemoveAll(e.dir)
	}
}

// Start listens on 127.0.0.1:0 for the API and on a second 127.0.0.1:0 for
// signed file links, and serves both until Close.
func (e *Emulator) Start() error {
	api, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for api: %w", err)
	}
	files, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		api.Close()
		return fmt.Errorf("listen for files: %w", err)
	}
	e.serve(api, files)
	return nil
}

// StartOn listens on apiAddr (such as "127.0.0.1:8080") for the API and on
// fileAddr for signed file links. An empty fileAddr serves files from the API
// listener too, which is what a standalone `ploti-replica emulator --listen`
// wants.
func (e *Emulator) StartOn(apiAddr, fileAddr string) error {
	api, err := net.Listen("tcp", apiAddr)
	if err != nil {
		return fmt.Errorf("listen for api on %s: %w", apiAddr, err)
	}
	var files net.Listener
	if fileAddr != "" {
		files, err = net.Listen("tcp", fileAddr)
		if err != nil {
			api.Close()
			return fmt.Errorf("listen for files on %s: %w", fileAddr, err)
		}
	}
	e.serve(api, files)
	return nil
}

func (e *Emulator) serve(api, files net.Listener) {
	e.mu.Lock()
	e.apiURL = "http://" + api.Addr().String()
	apiHandler := http.Handler(e.apiMux())
	if files != nil {
		e.fileURL = "http://" + files.Addr().String()
	} else {
		e.fileURL = e.apiURL
		apiHandler = e.Handler()
	}
	e.apiSrv = &http.Server{Handler: e.wired(apiHandler)}
	e.mu.Unlock()
	e.serveWG.Add(1)
	go func() { defer e.serveWG.Done(); e.apiSrv.Serve(api) }()
	if files != nil {
		e.fileSrv = &http.Server{Handler: e.wired(http.HandlerFunc(e.serveFile))}
		e.serveWG.Add(1)
		go func() { defer e.serveWG.Done(); e.fileSrv.Serve(files) }()
	}
}

// URL is the API base URL, such as http://127.0.0.1:41234; clients append
// /v1/.... It is empty until Start or StartOn.
func (e *Emulator) URL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.apiURL
}

// FileURL is the base URL of the file listener that signed links point to.
func (e *Emulator) FileURL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fileURL
}

// APIKey is the bearer key the API requires.
func (e *Emulator) APIKey() string { return e.apiKey }

// Dir is the directory holding the emulator's scratch database and files.
func (e *Emulator) Dir() string { return e.dir }

// Handler serves the API (/v1/...) and the signed files (/files/...) on one
// handler, for a caller that runs its own server. Links it hands out point to
// the host the request came to, unless Start or StartOn set the URLs.
func (e *Emulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/files/", http.HandlerFunc(e.serveFile))
	mux.Handle("/", e.apiMux())
	return mux
}

// KeyLeaks counts requests to the file server that carried an Authorization
// header: the client sent its API key to a host other than the API's.
func (e *Emulator) KeyLeaks() int64 { return e.keyLeaks.Load() }

// SetRateLimit turns the per-key rate limits (120 calls a minute, 20 a minute
// for manifests and subscription changes) on or off.
func (e *Emulator) SetRateLimit(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rateOn = on
}

// Now is the emulator clock.
func (e *Emulator) Now() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nowLocked()
}

func (e *Emulator) nowLocked() time.Time {
	base := DefaultStart
	if e.opts.Now != nil {
		base = e.opts.Now()
	}
	return base.Add(e.offset).UTC()
}

// WebhookNow is the clock webhook deliveries are signed with (their
// webhook-timestamp header): Now when Options.Now is set; under the manual
// clock, the real time plus what Advance has added, so a receiver that
// checks the timestamp against its wall clock accepts the deliveries, and
// Advance still moves them ahead of it. A test receiver that wants Advance
// to age a delivery it holds verifies against WebhookNow.
func (e *Emulator) WebhookNow() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opts.Now != nil {
		return e.nowLocked()
	}
	return time.Now().Add(e.offset).UTC()
}

// Advance moves the emulator clock forward by d and applies what time does:
// links expire, rate windows slide, events and files age out, missed source
// checks send feed.dataset.stale.
func (e *Emulator) Advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offset += d
	e.sweepLocked()
	e.kickDeliveriesLocked()
}

// Close stops the listeners, waits for requests in flight, closes the
// database and removes the temporary directory. It returns every error met.
func (e *Emulator) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	apiSrv, fileSrv := e.apiSrv, e.fileSrv
	e.mu.Unlock()
	e.stopDeliveries()
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range []*http.Server{apiSrv, fileSrv} {
		if s != nil {
			if err := s.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("shut down server: %w", err))
			}
		}
	}
	e.serveWG.Wait()
	e.pubMu.Lock()
	if err := e.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close emulator database: %w", err))
	}
	e.pubMu.Unlock()
	if e.tempDir {
		if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove emulator dir: %w", err))
		}
	}
	return errors.Join(errs...)
}
