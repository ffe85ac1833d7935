package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
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
	BatchEvents  int
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
	// Limits are --api-idle-timeout, --api-total-timeout and
	// --retry-after-budget, for every command that calls the API.
	Limits apiLimits
	// syncFlags: the command takes the sync flags (their values are the
	// user's, not defaults to fill in).
	syncFlags bool
	// logFlags: the command takes --log-level and --log-format.
	logFlags bool
	// flags are the command's, to tell a flag given on the command line
	// from its environment variable (checkAPIServer).
	flags *pflag.FlagSet
}

// registerWatch adds --watches, for the commands that sync.
func (c *connFlags) registerWatch(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&c.Watch, "watches", true, "also keep the datasets you watch current (ploti-replica watch add watches one); without a subscription, they are all the file keeps")
}

// flagSet picks which of the shared flags a command takes, so that its
// help shows only flags it reads (`webhooks list` offered
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
	c.flags = f
	if sets&flagsFile != 0 {
		f.StringVar(&c.DB, "db", "", "DuckDB file (env PLOTI_DB; default ploti.duckdb)")
		f.DurationVar(&c.LockTimeout, "lock-timeout", replica.DefaultLockTimeout,
			"how long to wait while another process holds the file; 0: do not wait")
	}
	if sets&flagsLog != 0 {
		c.logFlags = true
		f.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
		f.StringVar(&c.LogFormat, "log-format", "auto", "log format: auto (human on a terminal, JSON otherwise), human, json")
	}
	if sets&flagsAPI != 0 {
		f.StringVar(&c.APIURL, "api-url", "", "Ploti API base URL (env PLOTI_API_URL; default: the URL the file's last successful sync used, else "+replica.DefaultAPIURL+")")
		f.StringVar(&c.APIKey, "api-key", "", "Ploti API key (env PLOTI_API_KEY; prefer the variable: flags show in ps)")
		f.StringVar(&c.Subscription, "subscription", "", "Data Feeds subscription id (env PLOTI_SUBSCRIPTION)")
		c.Limits.register(cmd)
	}
	if sets&flagsSync != 0 {
		c.syncFlags = true
		f.StringVar(&c.OnMajor, "on-major", "hold", "on a MAJOR schema change: hold (for review) or reload")
		f.StringVar(&c.MemoryLimit, "memory-limit", "", "DuckDB memory_limit, e.g. 1GB, 512MiB or 50%")
		f.StringArrayVar(&c.IDRefs, "id-ref", nil, "TABLE.COLUMN=DATASET: a column of yours holding the dataset's record ids, rewritten when Ploti replaces ids (repeatable)")
		f.IntVar(&c.PageSize, "page-size", replica.DefaultPageSize, "events read per page of the log (1 to 500)")
		f.IntVar(&c.BatchEvents, "batch-events", replica.DefaultBatchEvents, "events of the log one transaction holds at most, over the pages read ahead (1: a transaction a page); the cursor commits with them")
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

// fetchTweaks are the API limits and, for a command with the sync flags,
// --max-attempts and --plan-unavailable-wait for the API client.
func (c *connFlags) fetchTweaks() (func(*fetch.Options), error) {
	if err := c.Limits.check(); err != nil {
		return nil, err
	}
	limits := c.Limits
	if !c.syncFlags {
		return limits.apply, nil
	}
	if err := checkMaxAttempts(c.MaxAttempts); err != nil {
		return nil, err
	}
	if c.PlanWait <= 0 {
		return nil, &usageError{fmt.Errorf("--plan-unavailable-wait %s: want a duration above zero, e.g. 1m or 5s", c.PlanWait)}
	}
	attempts, wait := c.MaxAttempts, c.PlanWait
	return func(fo *fetch.Options) {
		fo.MaxAttempts, fo.PlanUnavailableWait = attempts, wait
		limits.apply(fo)
	}, nil
}

// apiLimits are the flags that bound the waits on the API: one answer's
// (idle, whole) and a command's on Retry-After. Zero values (a command
// that does not register them) leave the client's defaults.
type apiLimits struct {
	Idle, Total, RetryAfter time.Duration
}

func (l *apiLimits) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&l.Idle, "api-idle-timeout", fetch.DefaultAPIIdleTimeout,
		"give up a try of an API call when no byte of its answer came for this long (waiting for its headers included); the try is repeated within --max-attempts")
	f.DurationVar(&l.Total, "api-total-timeout", fetch.DefaultAPITotalTimeout,
		"give up a try of an API call whose whole answer takes longer than this")
	f.DurationVar(&l.RetryAfter, "retry-after-budget", fetch.DefaultRetryAfterBudget,
		"the longest a command waits, summed, when Ploti answers Retry-After; past it the command ends at once (exit 5), saying when Ploti asked to come back")
}

// check refuses a limit below zero (zero: the client's default).
func (l *apiLimits) check() error {
	for _, f := range []struct {
		name string
		v    *time.Duration
	}{{"api-idle-timeout", &l.Idle}, {"api-total-timeout", &l.Total}, {"retry-after-budget", &l.RetryAfter}} {
		if *f.v < 0 {
			return &usageError{fmt.Errorf("--%s %s: want a duration, e.g. 30s (0: the default)", f.name, *f.v)}
		}
	}
	return nil
}

// apply sets the limits given in fo (zero: the client's default).
func (l apiLimits) apply(fo *fetch.Options) {
	fo.APIIdleTimeout, fo.APITotalTimeout, fo.RetryAfterBudget = l.Idle, l.Total, l.RetryAfter
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

// storedSubscription reads the subscription a file replicates, if the file
// exists and can be read now; "" otherwise.
func storedSubscription(path string) (id, apiURL string) {
	if !replica.Exists(path) {
		return "", ""
	}
	if !replica.IsDatabase(path) {
		if st, ok := replica.StoredStatus(path); ok { // no DuckDB open (summary.go)
			return st.SubscriptionID, st.APIURL
		}
	}
	ctx := context.Background()
	rd, err := replica.OpenReader(ctx, path, replica.ReaderOptions{LockTimeout: -1})
	if err != nil {
		return "", ""
	}
	defer rd.Close()
	sub, err := rd.Subscription(ctx)
	if err != nil || sub == nil {
		return "", ""
	}
	return sub.ID, sub.APIURL
}
