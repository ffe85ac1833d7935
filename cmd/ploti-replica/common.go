package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// connFlags are the flags every command that talks to Ploti shares; each
// falls back to its environment variable.
type connFlags struct {
	DB           string
	APIURL       string
	APIKey       string
	Subscription string
	LogLevel     string
	LogFormat    string
	OnMajor      string
	MemoryLimit  string
	LockTimeout  time.Duration
	IDRefs       []string
	PageSize     int
	KeepChanges  int
	// History is --history (datasets, or all), HistoryKeep --history-keep.
	History     []string
	HistoryKeep string
	Spool       string
	// AttachmentsInline is --attachments-inline-max, a size.
	AttachmentsInline string
	Publish           string
	// Watch keeps watched datasets too (sync and serve register
	// --watches); without a subscription it is all a file keeps.
	Watch    bool
	Geometry string
	// MaxAttempts is --max-attempts; PlanWait --plan-unavailable-wait.
	MaxAttempts int
	PlanWait    time.Duration
	// syncFlags: the command takes the sync flags (their values are the
	// user's, not defaults to fill in).
	syncFlags bool
}

// registerWatch adds --watches, for the commands that sync.
func (c *connFlags) registerWatch(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.Watch, "watches", true, "also keep the datasets you watch current (`ploti-replica watch add`); without a subscription, they are all the file keeps")
}

// flagSet picks which of the shared flags a command takes, so that its
// help shows only flags it reads (issue 14: `webhooks list` offered
// --on-major).
type flagSet int

const (
	flagsLog  flagSet = 1 << iota // --log-level, --log-format
	flagsFile                     // --db, --lock-timeout
	flagsAPI                      // --api-url, --api-key, --subscription
	flagsSync                     // --on-major, --memory-limit, --id-ref, --page-size, --keep-changes, --history, --history-keep, --geometry, --publish, --max-attempts, --plan-unavailable-wait

	flagsRead = flagsLog | flagsFile                        // the file only
	flagsAll  = flagsLog | flagsFile | flagsAPI | flagsSync // sync, serve
)

func (c *connFlags) register(cmd *cobra.Command, sets flagSet) {
	f := cmd.Flags()
	if sets&flagsFile != 0 {
		f.StringVar(&c.DB, "db", "", "DuckDB file (env PLOTI_DB; default ploti.duckdb)")
		f.DurationVar(&c.LockTimeout, "lock-timeout", storage.DefaultLockTimeout,
			"how long to wait while another process holds the file; 0: do not wait")
	}
	if sets&flagsLog != 0 {
		f.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
		f.StringVar(&c.LogFormat, "log-format", "auto", "log format: auto (human on a terminal, JSON otherwise), human, json")
	}
	if sets&flagsAPI != 0 {
		f.StringVar(&c.APIURL, "api-url", "", "Ploti API base URL (env PLOTI_API_URL; default: the URL the file's last successful sync used, else "+replica.DefaultAPIURL+")")
		f.StringVar(&c.APIKey, "api-key", "", "Ploti API key (env PLOTI_API_KEY; prefer the variable: flags show in ps)")
		f.StringVar(&c.Subscription, "subscription", "", "Data Feeds subscription id (env PLOTI_SUBSCRIPTION)")
	}
	if sets&flagsSync != 0 {
		c.syncFlags = true
		f.StringVar(&c.OnMajor, "on-major", "hold", "on a MAJOR schema change: hold (for review) or reload")
		f.StringVar(&c.MemoryLimit, "memory-limit", "", "DuckDB memory_limit, e.g. 1GB, 512MiB or 50%")
		f.StringArrayVar(&c.IDRefs, "id-ref", nil, "TABLE.COLUMN=DATASET: a column of yours holding the dataset's record ids, rewritten when Ploti replaces ids (repeatable)")
		f.IntVar(&c.PageSize, "page-size", replica.DefaultPageSize, "events read per page of the log (1 to 500); the cursor is committed after each page")
		f.StringVar(&c.Spool, "spool", "", "folder for the files a sync downloads before it loads them (default: beside --db, as <db>.spool)")
		f.IntVar(&c.KeepChanges, "keep-changes", 0, "versions of each dataset whose rows _ploti.changes keeps (0: all)")
		f.StringArrayVar(&c.History, "history", nil, "keep every version of this dataset's records in history.<table> (repeatable; all: every dataset)")
		f.StringVar(&c.HistoryKeep, "history-keep", "", "prune each history to its N latest versions (10), or to those of the last N days (30d); default: keep all")
		f.StringVar(&c.AttachmentsInline, "attachments-inline-max", "1MiB", "attachments up to this size are kept in _ploti.attachments, larger ones in the folder <db>.attachments beside the file (0: every one in the folder)")
		f.StringVar(&c.Geometry, "geometry", "", "how tables store geometry: geometry (DuckDB's GEOMETRY, read as geometry by DuckDB 1.5) or wkb (standard WKB in a BLOB, which every DuckDB client, shapely and GeoPandas read); the file remembers it, a new one starts with geometry, and the other converts its tables")
		f.StringVar(&c.Publish, "publish", "", "after each sync, write a checkpointed read-only copy of the file to PATH, renamed over it atomically: readers of PATH never wait for the writer")
		maxAttemptsFlag(cmd, &c.MaxAttempts)
		f.DurationVar(&c.PlanWait, "plan-unavailable-wait", fetch.DefaultPlanUnavailableWait, "the wait before trying again when Ploti answers 503 plan_unavailable without Retry-After (\"try again in a minute\")")
	}
}

// maxAttemptsFlag adds --max-attempts, the API client's tries, to cmd.
func maxAttemptsFlag(cmd *cobra.Command, n *int) {
	cmd.Flags().IntVar(n, "max-attempts", fetch.DefaultMaxAttempts, "tries of each call and download after a connection error, a 5xx, a 429 or a 503 (waiting Retry-After between them)")
}

// checkMaxAttempts refuses --max-attempts below 1.
func checkMaxAttempts(n int) error {
	if n < 1 {
		return &usageError{fmt.Errorf("--max-attempts %d: want 1 or more", n)}
	}
	return nil
}

// fetchTweaks are --max-attempts and --plan-unavailable-wait for the API
// client; nil for a command without the sync flags (the client's defaults).
func (c *connFlags) fetchTweaks() (func(*fetch.Options), error) {
	if !c.syncFlags {
		return nil, nil
	}
	if err := checkMaxAttempts(c.MaxAttempts); err != nil {
		return nil, err
	}
	if c.PlanWait <= 0 {
		return nil, &usageError{fmt.Errorf("--plan-unavailable-wait %s: want a duration above zero, e.g. 1m or 5s", c.PlanWait)}
	}
	attempts, wait := c.MaxAttempts, c.PlanWait
	return func(fo *fetch.Options) { fo.MaxAttempts, fo.PlanUnavailableWait = attempts, wait }, nil
}

// resolve fills unset flags from the environment and defaults.
func (c *connFlags) resolve(env *Env) {
	pick := func(v *string, key, def string) {
		if *v == "" {
			*v = env.Getenv(key)
		}
		if *v == "" {
			*v = def
		}
	}
	c.resolveDB(env)
	pick(&c.APIURL, "PLOTI_API_URL", "")
	pick(&c.APIKey, "PLOTI_API_KEY", "")
	pick(&c.Subscription, "PLOTI_SUBSCRIPTION", "")
	if c.APIURL == "" || c.Subscription == "" {
		// A file remembers what it replicates: holds release, status
		// --behind and the next sync need not be told again.
		if id, api := storedSubscription(c.DB); id != "" && (c.Subscription == "" || c.Subscription == id) {
			pick(&c.Subscription, "", id)
			pick(&c.APIURL, "", api)
		}
	}
	pick(&c.APIURL, "", replica.DefaultAPIURL)
}

// resolveDB fills in --db alone, from PLOTI_DB or the default.
func (c *connFlags) resolveDB(env *Env) {
	if c.DB == "" {
		c.DB = env.Getenv("PLOTI_DB")
	}
	if c.DB == "" {
		c.DB = "ploti.duckdb"
	}
}

// haveDB tells whether --db names something to read: a database (its
// open says whether it is there), or a file that exists.
func haveDB(path string) bool {
	if backends.IsDatabase(path) {
		return true
	}
	_, err := os.Stat(path)
	return err == nil
}

// storedSubscription reads the subscription a file replicates, if the file
// exists and can be read now; "" otherwise.
func storedSubscription(path string) (id, apiURL string) {
	if _, err := os.Stat(path); err != nil && !backends.IsDatabase(path) {
		return "", ""
	}
	if !backends.IsDatabase(path) {
		if st, ok := replica.StoredStatus(path); ok { // no DuckDB open (summary.go)
			return st.SubscriptionID, st.APIURL
		}
	}
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return "", ""
	}
	defer db.Close()
	sub, err := db.Subscription(ctx)
	if err != nil || sub == nil {
		return "", ""
	}
	return sub.ID, sub.APIURL
}

// options builds the replica's options from the flags and the environment,
// with the CLI's logger (on env.Stderr) in Options.Logger.
func (c *connFlags) options(env *Env) (replica.Options, error) {
	log, err := c.logger(env.Stderr)
	if err != nil {
		return replica.Options{}, err
	}
	c.resolve(env)
	if c.APIKey == "" {
		return replica.Options{}, &usageError{fmt.Errorf("no API key: set PLOTI_API_KEY (or --api-key)")}
	}
	// A command without the sync flags (status --behind) takes their defaults.
	if c.OnMajor == "" {
		c.OnMajor = apply.OnMajorHold
	}
	if c.PageSize == 0 && !c.syncFlags {
		c.PageSize = replica.DefaultPageSize
	}
	if c.Subscription == "" && !c.Watch {
		return replica.Options{}, &usageError{fmt.Errorf("no subscription: set PLOTI_SUBSCRIPTION (or --subscription), or keep watched datasets (--watches)")}
	}
	refs, err := parseIDRefs(c.IDRefs)
	if err != nil {
		return replica.Options{}, &usageError{err}
	}
	if err := c.checkSyncFlags(); err != nil {
		return replica.Options{}, err
	}
	wait, err := c.lockWait()
	if err != nil {
		return replica.Options{}, err
	}
	inline, err := attachmentsInlineMax(c.AttachmentsInline)
	if err != nil {
		return replica.Options{}, err
	}
	keep, err := parseHistoryKeep(c.HistoryKeep)
	if err != nil {
		return replica.Options{}, &usageError{err}
	}
	tweaks, err := c.fetchTweaks()
	if err != nil {
		return replica.Options{}, err
	}
	told := false
	return replica.Options{
		APIURL: c.APIURL, APIKey: c.APIKey, SubscriptionID: c.Subscription, Watch: c.Watch, Logger: log, OnMajor: c.OnMajor,
		MemoryLimit: c.MemoryLimit, LockTimeout: wait, IDReferences: refs, PageSize: c.PageSize, KeepChanges: c.KeepChanges,
		AttachmentsInlineMax: inline, SpoolDir: c.Spool, History: c.History, HistoryKeep: keep,
		Publish:  c.Publish,
		Geometry: c.Geometry, FetchOptions: tweaks,
		OnLocked: func(msg string) {
			if !told {
				log.Warn().Str("db", backends.Name(c.DB)).Msg("waiting for the file: " + msg)
				told = true
			}
		},
	}, nil
}

// checkSyncFlags refuses sync flags out of range or that do not go with
// --db, as usage errors.
func (c *connFlags) checkSyncFlags() error {
	if c.OnMajor != apply.OnMajorHold && c.OnMajor != apply.OnMajorReload {
		return &usageError{fmt.Errorf("--on-major %q: want hold or reload", c.OnMajor)}
	}
	if c.PageSize < 1 || c.PageSize > 500 {
		return &usageError{fmt.Errorf("--page-size %d: want 1 to 500", c.PageSize)}
	}
	if c.KeepChanges < 0 {
		return &usageError{fmt.Errorf("--keep-changes %d: want 0 (keep all) or more", c.KeepChanges)}
	}
	if err := checkAPIURL(c.APIURL); err != nil {
		return err
	}
	if c.MemoryLimit != "" && !memoryLimitRE.MatchString(c.MemoryLimit) {
		return &usageError{fmt.Errorf("--memory-limit %q: want a size such as 1GB, 512MiB or 50%%", c.MemoryLimit)}
	}
	if backends.IsDatabase(c.DB) {
		// A file's settings: a database's readers never wait for the
		// writer (no copy to publish), and its geometry is PostGIS's.
		switch {
		case c.Publish != "":
			return &usageError{fmt.Errorf("--publish copies a DuckDB file for its readers; a database's readers need no copy")}
		case c.Geometry != "":
			return &usageError{fmt.Errorf("--geometry is how a DuckDB file stores geometry; a database stores PostGIS geometry")}
		}
	}
	if err := checkPublish(c.DB, c.Publish); err != nil {
		return err
	}
	if err := storage.CheckGeometry(c.Geometry); err != nil {
		return &usageError{fmt.Errorf("--%w", err)}
	}
	return nil
}

// lockWait is --lock-timeout as storage.Options takes it: 0 on the
// command line means do not wait, which storage spells negative.
func (c *connFlags) lockWait() (time.Duration, error) {
	switch {
	case c.LockTimeout < 0:
		return 0, &usageError{fmt.Errorf("--lock-timeout %s: want 0 (do not wait) or more", c.LockTimeout)}
	case c.LockTimeout == 0:
		return -1, nil
	}
	return c.LockTimeout, nil
}

// memoryLimitRE is what DuckDB's memory_limit takes: a number and a unit,
// or a percentage of the machine's memory.
var memoryLimitRE = regexp.MustCompile(`^\s*\d+(\.\d+)?\s*(%|[KMGT]i?B|B|bytes)?\s*$`)

// checkAPIURL refuses, as a usage error, an API base that is not an
// absolute http(s) URL.
func checkAPIURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &usageError{fmt.Errorf("--api-url %q: want an absolute http(s) URL such as %s", s, replica.DefaultAPIURL)}
	}
	return nil
}

// checkPublish refuses, as a usage error, a --publish path that is the
// file itself or whose folder is not there.
func checkPublish(db, publish string) error {
	if publish == "" {
		return nil
	}
	a, aerr := filepath.Abs(db)
	b, berr := filepath.Abs(publish)
	same := aerr == nil && berr == nil && a == b
	if si, err := os.Stat(db); err == nil {
		if pi, err := os.Stat(publish); err == nil && os.SameFile(si, pi) {
			same = true
		}
	}
	if same {
		return &usageError{fmt.Errorf("--publish %s: it is the --db file itself; give the path readers open", publish)}
	}
	if fi, err := os.Stat(filepath.Dir(publish)); err != nil || !fi.IsDir() {
		return &usageError{fmt.Errorf("--publish %s: no such folder %s", publish, filepath.Dir(publish))}
	}
	return nil
}

func parseIDRefs(specs []string) ([]replica.IDRef, error) {
	var out []replica.IDRef
	for _, s := range specs {
		var tc, ds string
		for i := len(s) - 1; i >= 0; i-- {
			if s[i] == '=' {
				tc, ds = s[:i], s[i+1:]
				break
			}
		}
		dot := -1
		for i := len(tc) - 1; i >= 0; i-- {
			if tc[i] == '.' {
				dot = i
				break
			}
		}
		if ds == "" || dot <= 0 || dot == len(tc)-1 {
			return nil, fmt.Errorf("--id-ref %q: want TABLE.COLUMN=DATASET", s)
		}
		out = append(out, replica.IDRef{Table: tc[:dot], Column: tc[dot+1:], DatasetID: ds})
	}
	return out, nil
}

// logger builds the CLI's logger: human on a terminal, JSON otherwise.
func (c *connFlags) logger(w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(c.LogLevel)
	if err != nil || c.LogLevel == "" {
		return zerolog.Nop(), &usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)}
	}
	format := c.LogFormat
	if format == "auto" {
		format = "json"
		if isTerminal(w) {
			format = "human"
		}
	}
	switch format {
	case "json":
		return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
	case "human":
		return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05", NoColor: !isTerminal(w)}).Level(level).With().Timestamp().Logger(), nil
	}
	return zerolog.Nop(), &usageError{fmt.Errorf("--log-format %q: want auto, human or json", c.LogFormat)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// sizeRE is a size: a whole number and an optional unit.
var sizeRE = regexp.MustCompile(`^(?i)\s*(\d+)\s*(b|kb|mb|gb|kib|mib|gib)?\s*$`)

// attachmentsInlineMax reads --attachments-inline-max as
// replica.Options.AttachmentsInlineMax takes it: 0 on the command line
// (every attachment a file) is negative there; empty is its default.
func attachmentsInlineMax(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, &usageError{fmt.Errorf("--attachments-inline-max %q: want a size such as 1MiB, 500KB or 0", s)}
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, &usageError{fmt.Errorf("--attachments-inline-max %q: %w", s, err)}
	}
	unit := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}[strings.ToLower(m[2])]
	if n == 0 {
		return -1, nil
	}
	return n * unit, nil
}
