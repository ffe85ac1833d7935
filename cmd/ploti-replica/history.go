package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// parseHistoryKeep reads --history-keep: a number of versions, a number of
// days (30d), or a Go duration (720h).
func parseHistoryKeep(s string) (replica.HistoryKeep, error) {
	var k replica.HistoryKeep
	switch {
	case s == "":
		return k, nil
	case strings.HasSuffix(s, "d"):
		n, err := strconv.Atoi(strings.TrimSuffix(s, "d"))
		if err != nil || n <= 0 {
			return k, fmt.Errorf("--history-keep %q: want versions (10), days (30d) or a duration (720h)", s)
		}
		k.Age = time.Duration(n) * 24 * time.Hour
	default:
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			k.Versions = n
			return k, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return k, fmt.Errorf("--history-keep %q: want versions (10), days (30d) or a duration (720h)", s)
		}
		k.Age = d
	}
	return k, nil
}

type historyCmd struct {
	env  *Env
	conn connFlags
	JSON bool
}

func newHistoryCmd(env *Env) *cobra.Command {
	h := &historyCmd{env: env}
	cmd := &cobra.Command{
		Use:   "history DATASET RECORD_ID",
		Short: "Print a record's whole story from its dataset's history: every version of it, across renames",
		Long: `Print every version of a record that the dataset's history holds (sync
--history keeps one), oldest first: the versions between which each row was
current, what opened it (first: the history began with it; added, changed,
renamed), and the columns that changed. A renamed record's story goes on
under its new id (either id finds it).

In SQL: SELECT * FROM history.<table>_story('RECORD_ID').

--json prints a list of {"recordId", "validFrom", "validTo", "validFromAt",
"validToAt", "change", "originId", "values": [{"name", "value"}], "ended"};
values are text, null for NULL.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return h.run(cmd.Context(), args[0], args[1]) },
	}
	h.conn.register(cmd, flagsRead)
	cmd.Flags().BoolVar(&h.JSON, "json", false, "print JSON")
	return cmd
}

// openRead opens the file read-only for a command that only reads it.
func openRead(ctx context.Context, env *Env, conn *connFlags) (*storage.DB, error) {
	conn.resolve(env)
	wait, err := conn.lockWait()
	if err != nil {
		return nil, err
	}
	return backends.Open(ctx, conn.DB, storage.Options{ReadOnly: true, LockTimeout: wait})
}

func (h *historyCmd) run(ctx context.Context, datasetID, recordID string) error {
	db, err := openRead(ctx, h.env, &h.conn)
	if err != nil {
		return err
	}
	defer db.Close()
	story, err := replica.ReadStory(ctx, db, datasetID, recordID)
	if err != nil {
		return err
	}
	if h.JSON {
		if story == nil {
			story = []storage.StoryRow{}
		}
		return writeJSON(h.env.Stdout, story)
	}
	if len(story) == 0 {
		return fmt.Errorf("%s: no record %s in its history", datasetID, recordID)
	}
	w := bufio.NewWriter(h.env.Stdout)
	printStory(w, datasetID, recordID, story)
	return w.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// span is "v3 → v5 (published … → …)", or "v3 → now (since …)" for the
// row a record holds today, the times when known.
func span(from int, to *int, fromAt, toAt *time.Time) string {
	if to == nil {
		s := fmt.Sprintf("v%d → now", from)
		if fromAt != nil {
			s += " (since " + fromAt.UTC().Format(time.RFC3339) + ")"
		}
		return s
	}
	s := fmt.Sprintf("v%d → v%d", from, *to)
	if fromAt != nil {
		s += " (" + fromAt.UTC().Format(time.RFC3339)
		if toAt != nil {
			s += " → " + toAt.UTC().Format(time.RFC3339)
		}
		s += ")"
	}
	return s
}

func valueText(v *string) string {
	if v == nil {
		return "NULL"
	}
	return *v
}

// printStory writes a record's story: its first row whole, then what each
// later row changed.
func printStory(w io.Writer, datasetID, recordID string, story []storage.StoryRow) {
	fmt.Fprintf(w, "%s, record %s: %d version(s) in the history\n", datasetID, recordID, len(story))
	var prev map[string]*string
	for i, s := range story {
		id := s.RecordID
		if i > 0 && story[i-1].RecordID != s.RecordID {
			id = story[i-1].RecordID + " → " + s.RecordID
		}
		fmt.Fprintf(w, "%-8s %s  %s\n", s.Change, span(s.ValidFrom, s.ValidTo, s.ValidFromAt, s.ValidToAt), id)
		cur := map[string]*string{}
		for _, c := range s.Values {
			cur[c.Name] = c.Value
			if c.Name == storage.ColRecordID {
				continue
			}
			switch {
			case prev == nil:
				if c.Value != nil {
					fmt.Fprintf(w, "    %s = %s\n", c.Name, *c.Value)
				}
			case valueText(prev[c.Name]) != valueText(c.Value):
				fmt.Fprintf(w, "    %s: %s → %s\n", c.Name, valueText(prev[c.Name]), valueText(c.Value))
			}
		}
		prev = cur
	}
	if last := story[len(story)-1]; last.Ended {
		fmt.Fprintf(w, "removed  at v%d\n", *last.ValidTo)
	}
}

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
value as text.

In SQL, the dataset as of a version: SELECT * FROM history.<table>_as_of(V).

--json prints {"datasetId", "table", "from", "to", "counts": {"added",
"changed", "removed", "renamed"}, "changes": [{"change", "recordId",
"previousRecordId", "columns": [{"name", "old", "new"}], "before", "after"}]};
before and after are the rows as JSON objects.`,
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
	db, err := openRead(ctx, d.env, &d.conn)
	if err != nil {
		return err
	}
	defer db.Close()
	df, err := replica.ReadDiff(ctx, db, datasetID, d.From, d.To)
	if err != nil {
		return err
	}
	if d.JSON {
		return writeJSON(d.env.Stdout, df)
	}
	w := bufio.NewWriter(d.env.Stdout)
	printDiff(w, df)
	return w.Flush()
}

// printDiff writes a diff for people.
func printDiff(w io.Writer, df *replica.Diff) {
	fmt.Fprintf(w, "%s (table %s), v%d → v%d: %d added, %d changed, %d renamed, %d removed\n", df.DatasetID, df.Table, df.From, df.To,
		df.Counts.Added, df.Counts.Changed, df.Counts.Renamed, df.Counts.Removed)
	for _, c := range df.Changes {
		id := c.RecordID
		if c.PreviousRecordID != "" {
			id += " (was " + c.PreviousRecordID + ")"
		}
		switch c.Change {
		case storage.ChangeAdded:
			fmt.Fprintf(w, "  %-8s %s %s\n", c.Change, id, c.After)
		case storage.ChangeRemoved:
			fmt.Fprintf(w, "  %-8s %s, was %s\n", c.Change, id, c.Before)
		default:
			var cols []string
			for _, cc := range c.Columns {
				cols = append(cols, fmt.Sprintf("%s: %s → %s", cc.Name, valueText(cc.Old), valueText(cc.New)))
			}
			fmt.Fprintf(w, "  %-8s %s %s\n", c.Change, id, strings.Join(cols, "; "))
		}
	}
}
