package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
)

type verifyCmd struct {
	env      *Env
	conn     connFlags
	Datasets []string
	Repair   bool
	JSON     bool
}

func newVerifyCmd(env *Env) *cobra.Command {
	v := &verifyCmd{env: env}
	cmd := &cobra.Command{
		Use:   "verify [--dataset D] [--repair] [--json]",
		Short: "Check that each table still equals the version Ploti published",
		Long: `For each dataset the file holds a version of, download that version's snapshot
(verified like a sync's), load it into a scratch table that is never written,
and compare: row counts and an order-independent hash of every column, inside
DuckDB; when they differ, the rows are matched by record id to say which. The
registry is checked against the table too (row count, columns and types).

A version Ploti no longer serves (past retention) is unverifiable, not a
difference; so is a watched dataset. A column added by a MINOR change is NULL
in the rows that did not change since ("Records that did not change keep the
value your table gives a new column, usually null, until you reload"): that is
noted, not reported as a difference.

--repair reloads each dataset that differs at the version it holds, and
checks it again.

Exit codes: 0 every dataset verified (or repaired), 1 failure (no dataset
could be verified: Ploti did not answer, or a download failed, say for a full
disk), 2 usage, 3 something differs, 4 the file is locked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return v.run(cmd.Context()) },
	}
	v.conn.register(cmd, flagsAll)
	cmd.Flags().StringArrayVar(&v.Datasets, "dataset", nil, "check only this dataset (repeatable)")
	cmd.Flags().BoolVar(&v.Repair, "repair", false, "reload each dataset that differs, at the version it holds")
	cmd.Flags().BoolVar(&v.JSON, "json", false, "print the report as JSON")
	return cmd
}

func (v *verifyCmd) run(ctx context.Context) error {
	// The file's datasets, watched ones too: a file that keeps only
	// watches has no subscription to name.
	v.conn.Watch = true
	opts, err := v.conn.options(v.env)
	if err != nil {
		return err
	}
	opts.NoCreate = true
	r, err := replica.Open(ctx, v.conn.DB, opts)
	if err != nil {
		return err
	}
	rep, err := r.Verify(ctx, replica.VerifyOptions{Datasets: v.Datasets, Repair: v.Repair})
	if cerr := r.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if v.JSON {
		if err := writeJSON(v.env.Stdout, rep); err != nil {
			return err
		}
	} else {
		printVerify(v.env.Stdout, replica.Name(v.conn.DB), rep)
	}
	if !rep.OK() {
		return fmt.Errorf("verify %s: %d dataset(s) differ from the version they hold: %w", replica.Name(v.conn.DB), rep.Differ, replica.ErrDiffers)
	}
	if why := rep.NothingVerified(); why != "" {
		return fmt.Errorf("verify %s: no dataset could be verified (%d unverifiable); the first: %s", replica.Name(v.conn.DB), rep.Unverifiable, why)
	}
	return nil
}

func printVerify(w io.Writer, path string, rep replica.VerifyReport) {
	for _, c := range rep.Datasets {
		switch c.Verdict {
		case replica.VerdictUnverifiable:
			fmt.Fprintf(w, "%s v%d: unverifiable: %s\n", c.DatasetID, c.Version, c.Reason)
		case replica.VerdictVerified:
			fmt.Fprintf(w, "%s v%d: verified (%d rows)\n", c.DatasetID, c.Version, c.Rows)
		case replica.VerdictRepaired:
			fmt.Fprintf(w, "%s v%d: repaired (reloaded; %d rows now verified); it differed:\n", c.DatasetID, c.Version, c.Rows)
		case replica.VerdictDiffers:
			fmt.Fprintf(w, "%s v%d: DIFFERS from the version it holds (table %s, %d rows; version %d has %d):\n",
				c.DatasetID, c.Version, c.Table, c.Rows, c.Version, c.SnapshotRows)
		}
		for _, d := range c.Differences {
			fmt.Fprintf(w, "  - %s\n", d)
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
		if c.Verdict == replica.VerdictDiffers && c.Reason != "" {
			fmt.Fprintf(w, "  %s\n", c.Reason)
		}
	}
	switch {
	case rep.OK() && rep.Unverifiable == 0:
		fmt.Fprintf(w, "%s: all %d dataset(s) verified", path, rep.Verified+rep.Repaired)
	default:
		fmt.Fprintf(w, "%s: %d verified, %d differ, %d unverifiable", path, rep.Verified+rep.Repaired, rep.Differ, rep.Unverifiable)
	}
	if rep.Repaired > 0 {
		fmt.Fprintf(w, " (%d repaired)", rep.Repaired)
	}
	fmt.Fprintf(w, " in %s\n", rep.Duration.Round(1e6))
	if rep.Differ > 0 {
		fmt.Fprintln(w, "run `ploti-replica verify --repair` to reload what differs")
	}
}
