package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
)

type watchCmd struct {
	apiCmd
}

func newWatchCmd(env *Env) *cobra.Command {
	w := &watchCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Watch datasets (any plan): sync and serve keep them as tables, like feed datasets",
		Long: `Watching is Ploti's general API, open on any plan: each new version of a
watched dataset sends dataset.changed to your webhooks, and sync (or serve)
reads only the rows it added, changed, removed or renamed into the dataset's
table. A member may watch 100 datasets. A dataset that is also in the
subscription is kept from the feed; the watch is then only a signal.`,
	}
	add := &cobra.Command{Use: "add DATASET...", Short: "Watch datasets (watching twice changes nothing)", Args: cobra.MinimumNArgs(1),
		Long: `Watch datasets (watching twice changes nothing).

--json prints a list of {"datasetId", "watchedAt", "version"}.`,
		RunE: func(c *cobra.Command, a []string) error { return w.add(c.Context(), a) }}
	remove := &cobra.Command{Use: "remove DATASET...", Short: "Stop watching datasets; their tables stay and stop updating", Args: cobra.MinimumNArgs(1),
		Long: `Stop watching datasets: their tables stay and stop updating, unless the
--db file's subscription delivers them too (it then keeps them current).

--json prints a list of {"datasetId", "keptByFeed"}.`,
		RunE: func(c *cobra.Command, a []string) error { return w.remove(c.Context(), a) }}
	list := &cobra.Command{Use: "list", Short: "List your watches beside what the --db file holds of each", Args: cobra.NoArgs,
		Long: `List every dataset you watch with its version now at Ploti, beside what the
--db file holds of it (when the file exists): the version held, its source
(watch, or feed when the subscription keeps it) and whether it is behind.

--json prints a list of {"datasetId", "title", "watchedAt", "version",
"promotedAt", "local": {"version", "source", "status", "reason", "rows"}, "behind"}.`,
		RunE: func(c *cobra.Command, _ []string) error { return w.list(c.Context()) }}
	for _, c := range []*cobra.Command{add, remove, list} {
		w.register(c)
		cmd.AddCommand(c)
	}
	list.Flags().StringVar(&w.conn.DB, "db", "", "the replica file to compare with (env PLOTI_DB; default ploti.duckdb)")
	remove.Flags().StringVar(&w.conn.DB, "db", "", "the replica file whose tables the output speaks of (env PLOTI_DB; default ploti.duckdb)")
	return cmd
}

func (w *watchCmd) add(ctx context.Context, ids []string) error {
	c, err := w.client()
	if err != nil {
		return err
	}
	out := []watchAdded{}
	for _, id := range ids {
		got, err := c.Watch(ctx, id)
		if err != nil {
			return explainWatch(err, "watch "+id)
		}
		out = append(out, watchAdded{DatasetID: got.DatasetID, WatchedAt: got.WatchedAt, Version: got.Version})
		if w.JSON {
			continue
		}
		v := "no version yet"
		if got.Version != nil {
			v = fmt.Sprintf("version %d", *got.Version)
		}
		fmt.Fprintf(w.env.Stdout, "watching %s (%s); `ploti-replica sync` reads it into its table\n", id, v)
	}
	if w.JSON {
		return w.printJSON(out)
	}
	return nil
}

// watchAdded is one dataset of watch add --json.
type watchAdded struct {
	DatasetID string     `json:"datasetId"`
	WatchedAt *time.Time `json:"watchedAt,omitempty"`
	Version   *int       `json:"version,omitempty"`
}

// watchRemoved is one dataset of watch remove --json: a dataset no longer
// watched, and whether the file's subscription keeps its table current.
type watchRemoved struct {
	DatasetID string `json:"datasetId"`
	// KeptByFeed: the --db file's subscription delivers the dataset.
	KeptByFeed bool `json:"keptByFeed"`
}

func (w *watchCmd) remove(ctx context.Context, ids []string) error {
	c, err := w.client()
	if err != nil {
		return err
	}
	local := w.localState(ctx)
	out := []watchRemoved{}
	for _, id := range ids {
		if err := c.Unwatch(ctx, id); err != nil {
			return explainWatch(err, "unwatch "+id)
		}
		d, held := local[id]
		out = append(out, watchRemoved{DatasetID: id, KeptByFeed: held && d.Source == replica.SourceFeed})
		switch {
		case w.JSON:
		case held && d.Source == replica.SourceFeed:
			fmt.Fprintf(w.env.Stdout, "no longer watching %s; the subscription delivers it, and keeps its table current\n", id)
		case held:
			fmt.Fprintf(w.env.Stdout, "no longer watching %s; its table stays and stops updating after the next sync\n", id)
		default:
			fmt.Fprintf(w.env.Stdout, "no longer watching %s\n", id)
		}
	}
	if w.JSON {
		return w.printJSON(out)
	}
	return nil
}

// explainWatch puts a watch call's error in words: the 101st watch says so
// with Ploti's own message.
func explainWatch(err error, what string) error {
	if errors.Is(err, fetch.ErrWatchLimit) {
		var ae *fetch.APIError
		msg := fmt.Sprintf("%s: you watch the 100 datasets a member may watch (409 watch_limit): unwatch one first (`ploti-replica watch list`, `ploti-replica watch remove DATASET`)", what)
		if errors.As(err, &ae) && ae.Message != "" {
			msg += " (Ploti said: " + ae.Message + ")"
		}
		return &explained{msg: msg, err: err}
	}
	// Watching is open on any plan, for a dataset the workspace's coverage
	// and plan open (watch-and-webhooks.txt): not Data Feeds' words.
	var ae *fetch.APIError
	switch {
	case !errors.As(err, &ae):
	case errors.Is(err, fetch.ErrOutsideCoverage):
		return &explained{msg: fmt.Sprintf("%s: the dataset is outside your workspace's coverage (409 outside_coverage): a member may watch any dataset the coverage and plan open; `ploti-replica places` lists your places", what), err: err}
	case errors.Is(err, fetch.ErrNotDeliverable):
		return &explained{msg: fmt.Sprintf("%s: your workspace's plan does not open this dataset (409 not_deliverable): a member may watch any dataset the coverage and plan open", what), err: err}
	}
	return explain(err, what)
}

// watchOut is one line of watch list --json.
type watchOut struct {
	DatasetID  string     `json:"datasetId"`
	Title      string     `json:"title,omitempty"`
	WatchedAt  *time.Time `json:"watchedAt,omitempty"`
	Version    *int       `json:"version,omitempty"` // none before the first version
	PromotedAt *time.Time `json:"promotedAt,omitempty"`
	Local      *localOut  `json:"local,omitempty"`
	// Behind is true when the file does not hold the version Ploti has
	// (a sync catches it up); absent when the file was not read.
	Behind *bool `json:"behind,omitempty"`
}

type localOut struct {
	Version int    `json:"version,omitempty"`
	Source  string `json:"source"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"` // why removed: unwatched, left_coverage, plan_changed, …
	Rows    int64  `json:"rows"`
}

func (w *watchCmd) list(ctx context.Context) error {
	c, err := w.client()
	if err != nil {
		return err
	}
	ws, err := c.Watches(ctx)
	if err != nil {
		return explainWatch(err, "list watches")
	}
	local := w.localState(ctx)
	out := make([]watchOut, 0, len(ws))
	for _, x := range ws {
		o := watchOut{DatasetID: x.DatasetID, Title: x.Title, WatchedAt: x.WatchedAt, Version: x.Version, PromotedAt: x.PromotedAt}
		if local != nil {
			behind := x.Version != nil
			if d, ok := local[x.DatasetID]; ok {
				o.Local = &localOut{Version: d.Version, Source: d.Source, Status: d.Status, Rows: d.Rows}
				if d.Status == replica.StatusRemoved {
					o.Local.Reason = d.Reason
				}
				// A feed dataset's version is a Data Feeds number: the
				// feed's log says whether it is behind, not the watch.
				behind = d.Source == replica.SourceWatch && x.Version != nil && (d.Version != *x.Version || d.Status != replica.StatusCurrent)
			}
			o.Behind = &behind
		}
		out = append(out, o)
	}
	if w.JSON {
		return w.printJSON(out)
	}
	if len(out) == 0 {
		fmt.Fprintln(w.env.Stdout, "no watches (`ploti-replica watch add DATASET`)")
		return nil
	}
	tw := table(w.env.Stdout)
	fmt.Fprintln(tw, "DATASET\tTITLE\tPLOTI VERSION\tHELD\tSOURCE\tSTATUS\tBEHIND")
	for _, o := range out {
		held, source, status, behind := "-", "-", "-", "-"
		if o.Local != nil {
			source, status = o.Local.Source, o.Local.Status
			if o.Local.Reason != "" {
				status += " (" + o.Local.Reason + ")"
			}
			if o.Local.Version > 0 {
				held = fmt.Sprint(o.Local.Version)
			}
		}
		if o.Behind != nil {
			behind = map[bool]string{true: "yes", false: "no"}[*o.Behind]
			if o.Local != nil && o.Local.Source == replica.SourceFeed {
				behind = "(feed)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.DatasetID, orDash(o.Title), versionOrDash(o.Version), held, source, status, behind)
	}
	return tw.Flush()
}

func versionOrDash(v *int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

// localState reads what the --db file holds, by dataset id; nil when the
// file does not exist or cannot be read now (a note says why).
func (w *watchCmd) localState(ctx context.Context) map[string]replica.DatasetStatus {
	if !replica.Exists(w.conn.DB) {
		return nil
	}
	rd, err := replica.OpenReader(ctx, w.conn.DB, replica.ReaderOptions{LockTimeout: -1})
	if err != nil {
		fmt.Fprintf(w.env.Stderr, "note: %s not read: %s\n", replica.Name(w.conn.DB), oneLine(err))
		return nil
	}
	defer rd.Close()
	st, err := rd.Status(ctx)
	if err != nil {
		fmt.Fprintf(w.env.Stderr, "note: %s not read: %s\n", replica.Name(w.conn.DB), oneLine(err))
		return nil
	}
	out := map[string]replica.DatasetStatus{}
	for _, d := range st.Datasets {
		out[d.DatasetID] = d
	}
	return out
}
