package main

// diff: what changed in a dataset between two versions of its history.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
)

type diffCmd struct {
	env      *Env
	conn     connFlags
	From, To int
	JSON     bool
}

func newDiffCmd(env *Env) *cobra.Command {
	d := &diffCmd{env: env}
	cmd := &cobra.Command{
		Use:   "diff DATASET --from V --to W",
		Short: "List the records added, removed, renamed and changed between two versions of a dataset's history, with each changed column's old and new value",
		Long: `Compare a dataset's history (sync --history keeps one) as of two versions,
record by record: added, removed, renamed (a record that carries another id;
its old id is given) and changed, with each changed column's old and new
value.

In SQL, the dataset as of a version: SELECT * FROM history.<table>_as_of(V).

--json prints {"datasetId", "table", "from", "to", "counts": {"added",
"changed", "removed", "renamed"}, "changes": [{"change", "recordId",
"previousRecordId", "columns": [{"name", "old", "new"}], "before", "after"}]};
before and after are the rows as JSON objects; every value (old, new and
the rows') typed as its column, decimals with their scale, timestamps in
RFC 3339 UTC, a NULL left out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return d.run(cmd.Context(), args[0]) },
	}
	d.conn.register(cmd, flagsRead)
	f := cmd.Flags()
	f.IntVar(&d.From, "from", 0, "the older version (required)")
	f.IntVar(&d.To, "to", 0, "the newer version (required)")
	f.BoolVar(&d.JSON, "json", false, "print JSON")
	return cmd
}

func (d *diffCmd) run(ctx context.Context, datasetID string) error {
	if d.From <= 0 || d.To <= 0 {
		return &usageError{errors.New("diff needs --from V and --to W (version numbers)")}
	}
	rd, err := openRead(ctx, d.env, &d.conn)
	if err != nil {
		return err
	}
	defer rd.Close()
	df, err := rd.Diff(ctx, datasetID, d.From, d.To)
	if err != nil {
		return err
	}
	out := typedDiff(df, newTableTyping(rd).history(ctx, df.Table))
	if d.JSON {
		return writeJSON(d.env.Stdout, out)
	}
	w := bufio.NewWriter(d.env.Stdout)
	printDiff(w, out)
	return w.Flush()
}

// printDiff writes a diff for people, rows as key=value pairs.
func printDiff(w io.Writer, df diffOut) {
	fmt.Fprintf(w, "%s (table %s), v%d → v%d: %d added, %d changed, %d renamed, %d removed\n", df.DatasetID, df.Table, df.From, df.To,
		df.Counts.Added, df.Counts.Changed, df.Counts.Renamed, df.Counts.Removed)
	for _, c := range df.Changes {
		id := c.RecordID
		if c.PreviousRecordID != "" {
			id += " (was " + c.PreviousRecordID + ")"
		}
		switch c.Change {
		case replica.ChangeAdded:
			fmt.Fprintf(w, "  %-8s %s %s\n", c.Change, id, keyValues(c.After, replica.ColRecordID))
		case replica.ChangeRemoved:
			fmt.Fprintf(w, "  %-8s %s, was %s\n", c.Change, id, keyValues(c.Before, replica.ColRecordID))
		default:
			fmt.Fprintf(w, "  %-8s %s %s\n", c.Change, id, columnsText(c.Columns))
		}
	}
}

// columnsText is "name: old → new; …" for people.
func columnsText(cols []columnOut) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%s: %s → %s", c.Name, wordOf(c.Old), wordOf(c.New))
	}
	return strings.Join(parts, "; ")
}
