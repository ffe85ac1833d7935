package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/serve"
)

type syncCmd struct {
	env         *Env
	conn        connFlags
	JSON        bool
	Rebootstrap bool
}

func newSyncCmd(env *Env) *cobra.Command {
	s := &syncCmd{env: env}
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Bootstrap or catch up the DuckDB file, then exit",
		Long: `Bootstrap the file from the subscription's manifest (first run, or after the
cursor expired), then apply the event log a page at a time. Then (unless
--watches=false) bring each dataset you watch to its latest version: one call
lists your watches, and each one that moved is merged from its changes, or
read whole from its rows. Without a subscription, sync keeps only the
watches. The file is open only while sync runs; other processes can read it
before and after. With --publish PATH, a checkpointed read-only copy is
renamed over PATH after the sync: readers of PATH never wait for the writer
and see whole syncs only.

When the API refuses the stored cursor as one it never gave, --rebootstrap
reloads every dataset from a fresh manifest into the same file.

Exit codes: 0 ok, 1 failure, 2 usage, 3 some datasets failed (their last good
versions stay; the next sync retries them), 4 the file is locked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return s.run(cmd.Context()) },
	}
	s.conn.register(cmd, flagsAll)
	s.conn.registerWatch(cmd)
	cmd.Flags().BoolVar(&s.JSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVar(&s.Rebootstrap, "rebootstrap", false, "reload every dataset from a fresh manifest into the file, whatever its cursor (when the API refuses the stored cursor); your tables, --id-ref columns and holds stay")
	return cmd
}

func (s *syncCmd) run(ctx context.Context) error {
	opts, err := s.conn.options(s.env)
	if err != nil {
		return err
	}
	if err := preflight(ctx, s.conn.DB, opts); err != nil {
		return err
	}
	geometryNotice(ctx, s.env.Stderr, s.conn.DB, opts.Geometry)
	view := newProgress(s.env.Stderr)
	opts.Progress = view.update
	run := (*replica.Replica).Sync
	if s.Rebootstrap {
		run = (*replica.Replica).Rebootstrap
	}
	res, err := openAndRun(ctx, s.conn.DB, opts, run)
	view.wait()
	if err != nil && !errors.Is(err, replica.ErrPartial) {
		return explainUnreachable(err, "sync "+replica.Name(s.conn.DB))
	}
	if s.JSON {
		if jerr := writeJSON(s.env.Stdout, res); jerr != nil {
			return jerr
		}
	} else {
		printSync(s.env.Stdout, replica.Name(s.conn.DB), res)
	}
	return err
}

// syncOnce opens the file, syncs and closes it, so that other processes can
// open the file between syncs.
func syncOnce(ctx context.Context, path string, opts replica.Options) (replica.SyncResult, error) {
	return openAndRun(ctx, path, opts, (*replica.Replica).Sync)
}

// openAndRun opens the file, runs a sync (Sync or Rebootstrap) and closes
// the file.
func openAndRun(ctx context.Context, path string, opts replica.Options, run func(*replica.Replica, context.Context) (replica.SyncResult, error)) (replica.SyncResult, error) {
	r, err := replica.Open(ctx, path, opts)
	if err != nil {
		return replica.SyncResult{}, err
	}
	// Request events serve answered and kept beside the file, not yet
	// recorded (serve stopped first, or its syncs failed): "recorded by
	// the next sync in _ploti.inbox, once each", whichever sync it is.
	serve.NewInboxQueue(path, time.Now, opts.Logger).Record(ctx, r) // nothing queued: one rename that finds no file
	res, err := run(r, ctx)
	if cerr := r.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return res, err
}

func printSync(w io.Writer, path string, res replica.SyncResult) {
	how := "caught up"
	if res.Bootstrapped {
		how = "bootstrapped from the manifest"
	}
	failed := ""
	if res.EventsFailed > 0 {
		failed = fmt.Sprintf(", %d failed", res.EventsFailed)
	}
	fmt.Fprintf(w, "%s: %s in %s: %d snapshot(s) loaded, %d changes file(s) merged, %d event(s) read (%d applied, %d skipped%s)\n",
		path, how, res.Duration.Round(1e6), res.SnapshotsLoaded, res.ChangesMerged, res.EventsSeen, res.EventsApplied, res.EventsSkipped, failed)
	if res.WatchesSeen > 0 {
		fmt.Fprintf(w, "  watches: %d dataset(s) watched, %d merged, %d read whole\n", res.WatchesSeen, res.WatchMerges, res.WatchReloads)
	}
	for _, d := range res.Failed {
		fmt.Fprintf(w, "  failed: %s (its last good version stays; see `ploti-replica status`)\n", d)
	}
	for _, d := range res.HeldForReview {
		fmt.Fprintf(w, "  held for review: %s stays at its version after a MAJOR schema change (`ploti-replica status`); review it, then `ploti-replica holds release %s`\n", d, d)
	}
	for _, f := range res.AttachmentFailures {
		fmt.Fprintf(w, "  attachments not all kept: %s: %s (its table is not affected; the next sync tries again; `ploti-replica status` shows it)\n", f.DatasetID, f.Reason)
	}
	if p := res.Published; p != nil {
		how := "copied"
		if p.Reflink {
			how = "reflinked"
		}
		fmt.Fprintf(w, "  published %s (%.1f MiB, %s) in %s\n", p.Path, float64(p.Bytes)/(1<<20), how, p.Duration.Round(1e6))
	}
}
