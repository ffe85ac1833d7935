package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
)

// apiCmd is what the commands that only call the API share (places,
// topics, datasets, subscriptions): the connection flags, --json, the
// client's tries, and the client. They open no DuckDB file (datasets show
// only reads one, when it exists).
type apiCmd struct {
	env         *Env
	conn        connFlags
	JSON        bool
	MaxAttempts int
}

// register adds the API flags, --json and --max-attempts to cmd (not the
// sync flags: a command shows its own flags only).
func (a *apiCmd) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&a.conn.APIURL, "api-url", "", "Ploti API base URL (env PLOTI_API_URL; default https://api.ploti.ai)")
	f.StringVar(&a.conn.APIKey, "api-key", "", "Ploti API key (env PLOTI_API_KEY; prefer the variable: flags show in ps)")
	f.StringVar(&a.conn.LogLevel, "log-level", "warn", "log level: debug, info, warn, error")
	f.StringVar(&a.conn.LogFormat, "log-format", "auto", "log format: auto (human on a terminal, JSON otherwise), human, json")
	maxAttemptsFlag(cmd, &a.MaxAttempts)
	a.conn.Limits.register(cmd)
	f.BoolVar(&a.JSON, "json", false, "print JSON (camelCase keys, [] for empty lists, absent fields left out)")
}

// client builds an API client from the flags and the environment.
func (a *apiCmd) client() (*fetch.Client, error) {
	a.conn.resolve(a.env)
	if a.conn.APIKey == "" {
		return nil, &usageError{fmt.Errorf("no API key: set PLOTI_API_KEY (or --api-key)")}
	}
	if err := checkMaxAttempts(a.MaxAttempts); err != nil {
		return nil, err
	}
	log, err := a.conn.logger(a.env.Stderr)
	if err != nil {
		return nil, err
	}
	if err := checkAPIURL(a.conn.APIURL); err != nil {
		return nil, err
	}
	if err := a.conn.Limits.check(); err != nil {
		return nil, err
	}
	fo := fetch.Options{BaseURL: a.conn.APIURL, APIKey: a.conn.APIKey, Logger: log, MaxAttempts: a.MaxAttempts}
	a.conn.Limits.apply(&fo)
	return fetch.New(fo)
}

// printJSON writes v as indented JSON to stdout.
func (a *apiCmd) printJSON(v any) error {
	return writeJSON(a.env.Stdout, v)
}

// nonNil makes a nil list an empty one, for JSON's [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
