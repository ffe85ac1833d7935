package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
)

type changesCmd struct {
	env      *Env
	conn     connFlags
	Mark     string
	Datasets []string
	JSON     bool
	Advance  bool
	Forget   bool
}

func newChangesCmd(env *Env) *cobra.Command {
	c := &changesCmd{env: env}
	cmd := &cobra.Command{
		Use:   "changes --mark NAME",
		Short: "Print what was added, changed and removed since a named mark last moved (with the rows); --advance moves it",
		Long: `Print what was added, changed, renamed and removed in each dataset since the
mark NAME last moved, with each record's row now (and, for a dataset that
keeps history, its row before). The mark moves only with --advance, and only
after the output is written: a consumer that stops before that reads the
same changes again. A mark never moved starts before the oldest change kept.

--json prints {"mark", "datasets": [{"datasetId", "table", "source",
"fromVersion", "newMark", "toVersion", "fromHistory", "counts": {"added",
"changed", "removed", "renamed"}, "changes": [{"change", "recordId",
"previousRecordId", "row", "before", "columns": [{"name", "old", "new"}]}]}]};
rows are JSON objects, geometry as WKT text, every value typed as its
column (decimals with their scale, timestamps in RFC 3339 UTC, a NULL left
out); before and columns (each changed column's old and new value) come
from a dataset's history.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) },
	}
	c.conn.register(cmd, flagsRead)
	f := cmd.Flags()
	f.StringVar(&c.Mark, "mark", "", "the mark's name (required)")
	f.StringArrayVar(&c.Datasets, "dataset", nil, "only this dataset (repeatable)")
	f.BoolVar(&c.JSON, "json", false, "print JSON")
	f.BoolVar(&c.Advance, "advance", false, "move the mark to the versions printed, once they are written")
	f.BoolVar(&c.Forget, "forget", false, "delete the mark instead (on every dataset)")
	return cmd
}

func (c *changesCmd) run(ctx context.Context) error {
	if c.Mark == "" {
		return &usageError{errors.New("changes needs --mark NAME")}
	}
	if c.Forget && (c.Advance || len(c.Datasets) > 0) {
		return &usageError{errors.New("--forget takes no --advance or --dataset")}
	}
	c.conn.resolve(c.env)
	ro, err := c.conn.readerOptions(c.env)
	if err != nil {
		return err
	}
	// Reading and moving the mark happen under one open of the file, so
	// that no sync comes in between; without a move, the file is opened
	// read-only and readers may share it.
	write := c.Advance || c.Forget
	ro.Marks = write
	rd, err := replica.OpenReader(ctx, c.conn.DB, ro)
	if err != nil {
		return err
	}
	defer rd.Close()
	if c.Forget {
		return c.forget(ctx, rd)
	}
	cs, err := rd.Changes(ctx, c.Mark, replica.ChangesOptions{Datasets: c.Datasets})
	if err != nil {
		return err
	}
	if err := c.print(typedChanges(ctx, cs, newTableTyping(rd))); err != nil {
		return err
	}
	if !c.Advance {
		return nil
	}
	if err := rd.Advance(ctx, c.Mark, cs); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stderr, "mark %s moved to what was printed\n", c.Mark)
	return nil
}

// forget deletes the mark, and says whether there was one.
func (c *changesCmd) forget(ctx context.Context, rd *replica.Reader) error {
	had, err := rd.Forget(ctx, c.Mark)
	if err != nil {
		return err
	}
	if !had {
		fmt.Fprintf(c.env.Stdout, "no mark %s\n", c.Mark)
		return nil
	}
	fmt.Fprintf(c.env.Stdout, "forgot mark %s\n", c.Mark)
	return nil
}

// print writes the changes read, as JSON or for people; an error means
// the consumer did not get them all, and the mark must stay.
func (c *changesCmd) print(cs changeSetOut) error {
	w := bufio.NewWriter(c.env.Stdout)
	var err error
	if c.JSON {
		err = writeJSON(w, cs)
	} else {
		err = printChanges(w, cs, c.Advance)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		// The consumer did not get it all: the mark stays.
		return fmt.Errorf("write the changes of mark %s (the mark stays): %w", c.Mark, err)
	}
	return nil
}

// printChanges writes a change set for people: a line per dataset, then a
// line per record with its row.
func printChanges(w io.Writer, cs changeSetOut, advance bool) error {
	if len(cs.Datasets) == 0 {
		fmt.Fprintf(w, "mark %s: the file holds no dataset yet\n", cs.Mark)
	}
	for _, d := range cs.Datasets {
		from := fmt.Sprintf("v%d", d.FromVersion)
		if d.NewMark {
			from = "the oldest change kept"
		}
		if d.FromVersion >= d.ToVersion {
			fmt.Fprintf(w, "%s (table %s): nothing new since %s (holds v%d)\n", d.DatasetID, d.Table, from, d.ToVersion)
			continue
		}
		fmt.Fprintf(w, "%s (table %s): since %s, up to v%d: %d added, %d changed, %d renamed, %d removed\n",
			d.DatasetID, d.Table, from, d.ToVersion, d.Counts.Added, d.Counts.Changed, d.Counts.Renamed, d.Counts.Removed)
		for _, ch := range d.Changes {
			id := ch.RecordID
			if ch.PreviousRecordID != "" {
				id += " (was " + ch.PreviousRecordID + ")"
			}
			switch {
			case ch.Row != nil:
				fmt.Fprintf(w, "  %-8s %s %s\n", ch.Change, id, keyValues(ch.Row, replica.ColRecordID))
			case ch.Before != nil:
				fmt.Fprintf(w, "  %-8s %s, was %s\n", ch.Change, id, keyValues(ch.Before, replica.ColRecordID))
			default:
				fmt.Fprintf(w, "  %-8s %s\n", ch.Change, id)
			}
			if ch.Row != nil && ch.Before != nil {
				fmt.Fprintf(w, "  %-8s %s\n", "", "was "+keyValues(ch.Before, replica.ColRecordID))
			}
		}
	}
	if !advance {
		_, err := fmt.Fprintf(w, "(mark %s not moved: --advance moves it)\n", cs.Mark)
		return err
	}
	return nil
}
