package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
)

type holdsCmd struct {
	env  *Env
	conn connFlags
	JSON bool
}

func newHoldsCmd(env *Env) *cobra.Command {
	h := &holdsCmd{env: env}
	cmd := &cobra.Command{
		Use:   "holds",
		Short: "List held datasets, or release one held for review",
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List server delays and local review holds",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return h.list(cmd.Context()) },
	}
	list.Flags().BoolVar(&h.JSON, "json", false, "print JSON")
	release := &cobra.Command{
		Use:   "release DATASET",
		Short: "Release a dataset held for review: reload it from its current version",
		Long: `Release a dataset held for review after a MAJOR schema change: reload it from
its current version's snapshot, ending the hold. Ploti's own holds (a
delayed version) are not yours to release: the sync after Ploti releases
the version brings it.

--json prints the dataset as status --json does.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return h.release(cmd.Context(), args[0]) },
	}
	release.Flags().BoolVar(&h.JSON, "json", false, "print JSON")
	h.conn.register(list, flagsRead)
	h.conn.register(release, flagsAll)
	cmd.AddCommand(list, release)
	return cmd
}

func (h *holdsCmd) list(ctx context.Context) error {
	h.conn.resolve(h.env)
	ro, err := h.conn.readerOptions(h.env)
	if err != nil {
		return err
	}
	rd, err := replica.OpenReader(ctx, h.conn.DB, ro)
	if err != nil {
		return err
	}
	defer rd.Close()
	hs, err := rd.Holds(ctx)
	if err != nil {
		return err
	}
	if h.JSON {
		return writeJSON(h.env.Stdout, nonNil(hs))
	}
	if len(hs) == 0 {
		fmt.Fprintln(h.env.Stdout, "no holds")
		return nil
	}
	return printHolds(h.env.Stdout, hs)
}

func (h *holdsCmd) release(ctx context.Context, datasetID string) error {
	// The file's datasets, watched ones too: a file that keeps only
	// watches has no subscription to name.
	h.conn.Watch = true
	opts, err := h.conn.options(h.env)
	if err != nil {
		return err
	}
	opts.NoCreate = true
	r, err := replica.Open(ctx, h.conn.DB, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Release(ctx, datasetID); err != nil {
		if errors.Is(err, replica.ErrNoDataset) {
			return &explained{msg: fmt.Sprintf("release %s: %s holds no dataset %s (`ploti-replica holds list` shows the held ones, `ploti-replica status` every one)",
				datasetID, replica.Name(h.conn.DB), datasetID), err: err}
		}
		return err
	}
	st, err := r.Status(ctx)
	if err != nil {
		return err
	}
	for _, d := range st.Datasets {
		if d.DatasetID != datasetID {
			continue
		}
		if h.JSON {
			return writeJSON(h.env.Stdout, d)
		}
		fmt.Fprintf(h.env.Stdout, "released %s: table %s now at version %d (schema %s, %d rows)\n", d.DatasetID, d.Table, d.Version, d.SchemaVersion, d.Rows)
	}
	return nil
}
