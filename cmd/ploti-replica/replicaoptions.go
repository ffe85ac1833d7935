package main

// replica.Options from the shared flags, and the checks of the sync flags.

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/ploti-replica/ploti-replica/replica"
)

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
		c.OnMajor = replica.OnMajorHold
	}
	if c.PageSize == 0 && !c.syncFlags {
		c.PageSize = replica.DefaultPageSize
	}
	if c.Subscription == "" && !c.Watch {
		return replica.Options{}, &usageError{fmt.Errorf("nothing to keep: no subscription (set --subscription or PLOTI_SUBSCRIPTION) and --watches=false; " +
			"keep the datasets you watch (`ploti-replica watch add DATASET` watches one) by leaving out --watches=false")}
	}
	if err := c.checkSyncFlags(); err != nil {
		return replica.Options{}, err
	}
	if err := c.checkAPIServer(env); err != nil {
		return replica.Options{}, err
	}
	opts, err := c.parsedOptions()
	if err != nil {
		return replica.Options{}, err
	}
	told := false
	opts.APIURL, opts.APIKey, opts.SubscriptionID, opts.Watch, opts.Logger, opts.OnMajor = c.APIURL, c.APIKey, c.Subscription, c.Watch, log, c.OnMajor
	opts.MemoryLimit, opts.PageSize, opts.KeepChanges, opts.SpoolDir, opts.History = c.MemoryLimit, c.PageSize, c.KeepChanges, c.Spool, c.History
	opts.Publish, opts.Geometry, opts.BatchEvents = c.Publish, c.Geometry, c.BatchEvents
	// The commands that sync hold no handle of the file across the sync:
	// it may be given up while a sync waits on Ploti.
	opts.ReleaseWhileWaiting = c.syncFlags
	opts.OnLocked = func(msg string) {
		if !told {
			log.Warn("waiting for the file: "+msg, slog.String("db", replica.Name(c.DB)))
			told = true
		}
	}
	return opts, nil
}

// parsedOptions are the options read from flags given as text: the id
// references, the lock wait, the inline size, the history's bound and the
// API client's tweaks.
func (c *connFlags) parsedOptions() (replica.Options, error) {
	var opts replica.Options
	var err error
	if opts.IDReferences, err = parseIDRefs(c.IDRefs); err != nil {
		return opts, &usageError{err}
	}
	if opts.LockTimeout, err = c.lockWait(); err != nil {
		return opts, err
	}
	if opts.AttachmentsInlineMax, err = attachmentsInlineMax(c.AttachmentsInline); err != nil {
		return opts, err
	}
	if opts.HistoryKeep, err = parseHistoryKeep(c.HistoryKeep); err != nil {
		return opts, &usageError{err}
	}
	opts.FetchOptions, err = c.fetchTweaks()
	return opts, err
}

// checkSyncFlags refuses sync flags out of range or that do not go with
// --db, as usage errors.
func (c *connFlags) checkSyncFlags() error {
	if c.OnMajor != replica.OnMajorHold && c.OnMajor != replica.OnMajorReload {
		return &usageError{fmt.Errorf("--on-major %q: want hold or reload", c.OnMajor)}
	}
	if c.PageSize < 1 || c.PageSize > 500 {
		return &usageError{fmt.Errorf("--page-size %d: want 1 to 500", c.PageSize)}
	}
	if c.BatchEvents < 0 {
		return &usageError{fmt.Errorf("--batch-events %d: want 1 or more", c.BatchEvents)}
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
	if replica.IsDatabase(c.DB) {
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
	if err := replica.CheckGeometry(c.Geometry); err != nil {
		return &usageError{fmt.Errorf("--%w", err)}
	}
	return nil
}

// lockWait is --lock-timeout as replica.Options and ReaderOptions take
// it: 0 on the command line means do not wait, which they spell negative.
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
	if fi, err := os.Stat(publish); err == nil && fi.IsDir() {
		return &usageError{fmt.Errorf("--publish %s: it is a folder; give the path of the copy readers open, a file in it say", publish)}
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
