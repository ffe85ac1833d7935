package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/replica"
)

type inboxCmd struct {
	env   *Env
	conn  connFlags
	JSON  bool
	Types []string
	Limit int
}

func newInboxCmd(env *Env) *cobra.Command {
	in := &inboxCmd{env: env}
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "List the request events your member webhooks received (what is ready, failed or waiting for an answer)",
		Long: `serve records the request events a member webhook receives
(data_request.*, research_request.*) in _ploti.inbox, once each; this lists
them, oldest first. --type keeps one type, or every type starting with a
prefix ending in a dot ("data_request."); repeat it for several.

--json prints a list of {"eventId", "type", "occurredAt", "receivedAt",
"requestId", "url", "data"}.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return in.run(c.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&in.conn.DB, "db", "", "DuckDB file (env PLOTI_DB; default ploti.duckdb)")
	f.DurationVar(&in.conn.LockTimeout, "lock-timeout", 30*time.Second, "how long to wait while another process holds the file; 0: do not wait")
	f.BoolVar(&in.JSON, "json", false, "print JSON")
	f.StringArrayVar(&in.Types, "type", nil, `event type, or a prefix ending in "." (repeatable)`)
	f.IntVar(&in.Limit, "limit", 0, "the newest N events only (0: all)")
	return cmd
}

// inboxOut is one event of inbox --json.
type inboxOut struct {
	EventID    string          `json:"eventId"`
	Type       string          `json:"type"`
	OccurredAt *time.Time      `json:"occurredAt,omitempty"`
	ReceivedAt time.Time       `json:"receivedAt"`
	RequestID  string          `json:"requestId,omitempty"`
	URL        string          `json:"url,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

func (in *inboxCmd) run(ctx context.Context) error {
	if in.conn.DB == "" {
		in.conn.DB = in.env.Getenv("PLOTI_DB")
	}
	if in.conn.DB == "" {
		in.conn.DB = "ploti.duckdb"
	}
	if in.Limit < 0 {
		return &usageError{fmt.Errorf("--limit %d: want 0 (all) or more", in.Limit)}
	}
	if _, err := os.Stat(in.conn.DB); err != nil && !replica.IsDatabase(in.conn.DB) {
		return fmt.Errorf("inbox: %s: %w (run `ploti-replica serve` with a member webhook first)", replica.Name(in.conn.DB), err)
	}
	ro, err := in.conn.readerOptions(in.env)
	if err != nil {
		return err
	}
	rd, err := replica.OpenReader(ctx, in.conn.DB, ro)
	if err != nil {
		return err
	}
	defer rd.Close()
	items, err := rd.Inbox(ctx, replica.InboxFilter{Types: in.Types, Limit: in.Limit})
	if err != nil {
		return err
	}
	out := make([]inboxOut, len(items))
	for i, it := range items {
		out[i] = inboxOut{EventID: it.EventID, Type: it.Type, OccurredAt: it.OccurredAt, ReceivedAt: it.ReceivedAt.UTC(),
			RequestID: it.RequestID, URL: it.URL, Data: it.Data}
	}
	if in.JSON {
		return writeJSON(in.env.Stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintln(in.env.Stdout, "no request events")
		return nil
	}
	tw := table(in.env.Stdout)
	fmt.Fprintln(tw, "RECEIVED\tTYPE\tREQUEST\tURL\tNOTE")
	for _, o := range out {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", textTime(o.ReceivedAt), o.Type, orDash(o.RequestID), orDash(o.URL), orDash(inboxNote(o.Data)))
	}
	return tw.Flush()
}

// inboxNote is what a request event asks or answers, in a line: the
// questions of research_request.question, the answer of .answered.
func inboxNote(data json.RawMessage) string {
	var d ploti.RequestData
	if len(data) == 0 || json.Unmarshal(data, &d) != nil {
		return ""
	}
	var qs []string
	for _, q := range d.Questions {
		qs = append(qs, q.Text)
	}
	if len(qs) > 0 {
		return "asks: " + strings.Join(qs, " / ")
	}
	if len(d.Answer) > 0 && string(d.Answer) != "null" {
		var s string
		if json.Unmarshal(d.Answer, &s) != nil {
			s = string(d.Answer)
		}
		if r := []rune(s); len(r) > 80 {
			s = string(r[:80]) + "…"
		}
		return "answer: " + s
	}
	return ""
}
