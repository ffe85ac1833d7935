package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
)

// hints are the command line's advice for errors the library returns.
// The library's words say what happened and what the Go API offers; the
// CLI adds which command or flag does it, after the error on its line (the
// cause ends stderr on one line, as every error of the CLI does). The
// first hint whose error matches (errors.Is) is printed; db is the file or
// database the command ran on.
var hints = []struct {
	err  error
	text func(db string) string
}{
	{replica.ErrSubscriptionGone, func(string) string {
		return "`ploti-replica subscriptions list` shows your subscriptions: replicate one into a new file with --subscription, " +
			"or keep datasets current with `ploti-replica watch add`"
	}},
	{replica.ErrForeignCursor, func(string) string {
		return "run `ploti-replica sync --rebootstrap`"
	}},
	{replica.ErrDamaged, func(db string) string {
		return fmt.Sprintf("`ploti-replica sync --db %s` makes the new file once the damaged one is moved aside", db)
	}},
	{replica.ErrStorageVersion, func(string) string {
		return "rebuild the replica into a new --db file: `ploti-replica sync --db NEW.duckdb`"
	}},
	{replica.ErrFileOnly, func(string) string {
		return "point --db at a .duckdb file for history, marks and --publish, or leave out --history"
	}},
	{replica.ErrNoHistory, func(string) string {
		return "`ploti-replica sync --history DATASET` starts one"
	}},
	{replica.ErrPermission, func(string) string {
		return "`ploti-replica sync` and `serve` write the file and its folder; `status`, `history` and `diff` only read the file"
	}},
	{replica.ErrNothingToKeep, func(string) string {
		return "set --subscription or PLOTI_SUBSCRIPTION, or watch a dataset with `ploti-replica watch add DATASET` and keep it with --watches"
	}},
	{fetch.ErrIdleTimeout, func(string) string {
		return "--api-idle-timeout sets how long an answer may send nothing"
	}},
	{fetch.ErrTotalTimeout, func(string) string {
		return "--api-total-timeout sets how long a whole answer may take"
	}},
	{fetch.ErrRetryBudget, func(string) string {
		return "--retry-after-budget sets that limit"
	}},
}

// hintFor is the CLI's advice for err, or "".
func hintFor(err error, db string) string {
	for _, h := range hints {
		if errors.Is(err, h.err) {
			return h.text(db)
		}
	}
	return ""
}

// hintOf is err's hint as the end of its line, " (hint: …)", or "".
func hintOf(err error, db string) string {
	if h := hintFor(err, db); h != "" {
		return " (hint: " + h + ")"
	}
	return ""
}

// dbOf is the --db the command ran with (resolved from PLOTI_DB or the
// default once the command read it), else what it would resolve to.
func dbOf(c *cobra.Command, env *Env) string {
	if c != nil {
		if f := c.Flags().Lookup("db"); f != nil && f.Value.String() != "" {
			return f.Value.String()
		}
	}
	c2 := connFlags{}
	c2.resolveDB(env)
	return c2.DB
}
