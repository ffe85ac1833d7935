package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
)

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
"validToAt", "change", "originId", "values": {COLUMN: VALUE}, "ended"};
each value typed as its column (numbers, decimals with their scale,
booleans, lists, timestamps in RFC 3339 UTC), a NULL left out.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return h.run(cmd.Context(), args[0], args[1]) },
	}
	h.conn.register(cmd, flagsRead)
	cmd.Flags().BoolVar(&h.JSON, "json", false, "print JSON")
	return cmd
}

// openRead opens the file read-only for a command that only reads it.
func openRead(ctx context.Context, env *Env, conn *connFlags) (*replica.Reader, error) {
	conn.resolve(env)
	ro, err := conn.readerOptions(env)
	if err != nil {
		return nil, err
	}
	return replica.OpenReader(ctx, conn.DB, ro)
}

func (h *historyCmd) run(ctx context.Context, datasetID, recordID string) error {
	rd, err := openRead(ctx, h.env, &h.conn)
	if err != nil {
		return err
	}
	defer rd.Close()
	story, err := rd.Story(ctx, datasetID, recordID)
	if err != nil {
		return err
	}
	types := newTableTyping(rd).history(ctx, storyTable(ctx, rd, datasetID))
	out := typedStory(story, types)
	if h.JSON {
		return writeJSON(h.env.Stdout, out)
	}
	if len(out) == 0 {
		return fmt.Errorf("%s: no record %s in its history", datasetID, recordID)
	}
	w := bufio.NewWriter(h.env.Stdout)
	printStory(w, datasetID, recordID, out)
	return w.Flush()
}

// storyTable is the table of a dataset the file holds; its id when the
// status cannot say (the types are then not found, and values stay text).
func storyTable(ctx context.Context, rd *replica.Reader, datasetID string) string {
	st, err := rd.Status(ctx)
	if err == nil {
		for _, d := range st.Datasets {
			if d.DatasetID == datasetID && d.Table != "" {
				return d.Table
			}
		}
	}
	return datasetID
}

// span is "v3 → v5 (published … → …)", or "v3 → now (since …)" for the
// row a record holds today, the times when known.
func span(from int, to *int, fromAt, toAt *time.Time) string {
	if to == nil {
		s := fmt.Sprintf("v%d → now", from)
		if fromAt != nil {
			s += " (since " + textTime(*fromAt) + ")"
		}
		return s
	}
	s := fmt.Sprintf("v%d → v%d", from, *to)
	if fromAt != nil {
		s += " (" + textTime(*fromAt)
		if toAt != nil {
			s += " → " + textTime(*toAt)
		}
		s += ")"
	}
	return s
}

// printStory writes a record's story: its first row whole, then what each
// later row changed.
func printStory(w io.Writer, datasetID, recordID string, story []storyOut) {
	fmt.Fprintf(w, "%s, record %s: %d version(s) in the history\n", datasetID, recordID, len(story))
	var prev map[string]any
	for i, s := range story {
		id := s.RecordID
		if i > 0 && story[i-1].RecordID != s.RecordID {
			id = story[i-1].RecordID + " → " + s.RecordID
		}
		fmt.Fprintf(w, "%-8s %s  %s\n", s.Change, span(s.ValidFrom, s.ValidTo, s.ValidFromAt, s.ValidToAt), id)
		for _, m := range s.Values {
			v := s.typed[m.Key]
			switch {
			case m.Key == replica.ColRecordID:
			case prev == nil:
				if v != nil {
					fmt.Fprintf(w, "    %s = %s\n", m.Key, wordOf(v))
				}
			case wordOf(prev[m.Key]) != wordOf(v):
				fmt.Fprintf(w, "    %s: %s → %s\n", m.Key, wordOf(prev[m.Key]), wordOf(v))
			}
		}
		prev = s.typed
	}
	if last := story[len(story)-1]; last.Ended {
		fmt.Fprintf(w, "removed  at v%d\n", *last.ValidTo)
	}
}
