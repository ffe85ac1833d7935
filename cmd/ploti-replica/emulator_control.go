package main

// The emulator's control commands: each posts to a control endpoint of a
// running `ploti-replica emulator` (emulator.ControlPrefix), found as every
// command finds Ploti: --api-url or PLOTI_API_URL, --api-key or
// PLOTI_API_KEY.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// defaultEmulatorURL is where `ploti-replica emulator` listens by default.
const defaultEmulatorURL = "http://127.0.0.1:8080"

// emulatorCtl is what the control commands share: where the emulator is.
type emulatorCtl struct {
	env    *Env
	APIURL string
	APIKey string
}

func (c *emulatorCtl) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.APIURL, "api-url", "", "the emulator's URL (env PLOTI_API_URL; default "+defaultEmulatorURL+")")
	f.StringVar(&c.APIKey, "api-key", "", "the emulator's key (env PLOTI_API_KEY; default "+emulator.DefaultAPIKey+")")
}

// ctlRelease is a version as the control endpoints answer it.
type ctlRelease struct {
	DatasetID     string  `json:"datasetId"`
	Version       int     `json:"version"`
	SchemaVersion string  `json:"schemaVersion"`
	SchemaBump    *string `json:"schemaBump"`
	Held          bool    `json:"held"`
	HoldReason    *string `json:"holdReason"`
	ResyncReason  *string `json:"resyncReason"`
	RowCount      int64   `json:"rowCount"`
	Added         int64   `json:"added"`
	Changed       int64   `json:"changed"`
	Removed       int64   `json:"removed"`
}

func releaseOf(r emulator.Release) ctlRelease {
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return ctlRelease{DatasetID: r.DatasetID, Version: r.Version, SchemaVersion: r.SchemaVersion, SchemaBump: str(r.SchemaBump),
		Held: r.Held, HoldReason: str(r.HoldReason), ResyncReason: str(r.ResyncReason),
		RowCount: r.RowCount, Added: r.Added, Changed: r.Changed, Removed: r.Removed}
}

// describeRelease says in a few words what subscribers receive of a version.
func describeRelease(r ctlRelease) string {
	s := fmt.Sprintf("%s v%d", r.DatasetID, r.Version)
	if r.SchemaBump != nil {
		s += fmt.Sprintf(" (%s schema change to %s)", strings.ToUpper(*r.SchemaBump), r.SchemaVersion)
	}
	switch {
	case r.Held:
		reason := ""
		if r.HoldReason != nil {
			reason = *r.HoldReason
		}
		return s + fmt.Sprintf(" held for review (%s), %d rows", reason, r.RowCount)
	case r.ResyncReason != nil:
		return s + fmt.Sprintf(" resync_required (%s), %d rows", *r.ResyncReason, r.RowCount)
	}
	return s + fmt.Sprintf(" updated: %d added, %d changed, %d removed", r.Added, r.Changed, r.Removed)
}

// call posts to a control endpoint and decodes its answer into out.
func (c *emulatorCtl) call(ctx context.Context, endpoint string, q url.Values, body []byte, out any) error {
	base, key := c.APIURL, c.APIKey
	if base == "" {
		base = c.env.Getenv("PLOTI_API_URL")
	}
	if base == "" {
		base = defaultEmulatorURL
	}
	if key == "" {
		key = c.env.Getenv("PLOTI_API_KEY")
	}
	if key == "" {
		key = emulator.DefaultAPIKey
	}
	if err := checkAPIURL(base); err != nil {
		return err
	}
	u := strings.TrimRight(base, "/") + emulator.ControlPrefix + endpoint
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("no emulator answers at %s (start one with `ploti-replica emulator`, and export the variables it prints): %w", base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read the emulator's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return controlRefusal(base, resp.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}

// controlRefusal puts an error answer of a control endpoint in words.
func controlRefusal(base string, status int, body []byte) error {
	var env struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &env) == nil && env.Error.Code != "" {
		msg = env.Error.Code + ": " + env.Error.Message
	}
	switch status {
	case http.StatusUnauthorized:
		return fmt.Errorf("the emulator at %s refused the key (401): PLOTI_API_KEY must be the key it printed", base)
	case http.StatusNotFound:
		if !strings.Contains(msg, "control endpoint") && !strings.Contains(msg, "demo") {
			return fmt.Errorf("%s is not a ploti-replica emulator (404 on %s)", base, emulator.ControlPrefix)
		}
	}
	return fmt.Errorf("the emulator answered %d %s", status, msg)
}

// newEmulatorControlCmds are the emulator's subcommands.
func newEmulatorControlCmds(env *Env) []*cobra.Command {
	return []*cobra.Command{newEmulatorPublishCmd(env), newEmulatorHoldCmd(env), newEmulatorReleaseCmd(env),
		newEmulatorRenameCmd(env), newEmulatorRequestEventCmd(env), newEmulatorFailNextCmd(env)}
}

// releasesCmd is a control command that answers versions, each printed on
// a line.
func releasesCmd(env *Env, use, short string, args cobra.PositionalArgs, query func([]string) url.Values, endpoint string) *cobra.Command {
	c := &emulatorCtl{env: env}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct {
				Releases []ctlRelease `json:"releases"`
			}
			if err := c.call(cmd.Context(), endpoint, query(args), nil, &out); err != nil {
				return err
			}
			for _, r := range out.Releases {
				fmt.Fprintln(env.Stdout, describeRelease(r))
			}
			return nil
		},
	}
	c.register(cmd)
	return cmd
}

func datasetQuery(args []string) url.Values {
	q := url.Values{}
	if len(args) > 0 {
		q.Set("dataset", args[0])
	}
	return q
}

func newEmulatorPublishCmd(env *Env) *cobra.Command {
	cmd := releasesCmd(env, "publish [DATASET]",
		"Publish the next version of a demo dataset (of each, with none), of the kind its round decides",
		cobra.MaximumNArgs(1), datasetQuery, "publish")
	return cmd
}

func newEmulatorHoldCmd(env *Env) *cobra.Command {
	var reason string
	cmd := releasesCmd(env, "hold DATASET", "Publish a version of a demo dataset that Ploti holds for review",
		cobra.ExactArgs(1), func(args []string) url.Values {
			q := datasetQuery(args)
			if reason != "" {
				q.Set("reason", reason)
			}
			return q
		}, "hold")
	cmd.Flags().StringVar(&reason, "reason", "row_drop", "why Ploti holds it: row_drop (the version has half the rows), schema_change, identity_ambiguous, identity_unresolved or key_violation")
	return cmd
}

func newEmulatorReleaseCmd(env *Env) *cobra.Command {
	cmd := releasesCmd(env, "release DATASET", "Release a dataset's held version, as Ploti's staff does",
		cobra.ExactArgs(1), datasetQuery, "release")
	return cmd
}

func newEmulatorRenameCmd(env *Env) *cobra.Command {
	var fraction float64
	cmd := releasesCmd(env, "rename-ids DATASET", "Publish a dataset's records again, some under new ids (resync_required with an id map)",
		cobra.ExactArgs(1), func(args []string) url.Values {
			q := datasetQuery(args)
			q.Set("fraction", strconv.FormatFloat(fraction, 'g', -1, 64))
			return q
		}, "rename-ids")
	cmd.Flags().Float64Var(&fraction, "fraction", 0.25, "the share of the records that get new ids, above 0 and at most 1")
	return cmd
}

func newEmulatorRequestEventCmd(env *Env) *cobra.Command {
	c := &emulatorCtl{env: env}
	var request, data string
	cmd := &cobra.Command{
		Use:   "request-event TYPE",
		Short: "Send a request event (data_request.*, research_request.*) to the member's webhooks",
		Long: `Send a request event to the member's webhooks (those of no subscription).
TYPE is one of ` + strings.Join(emulator.RequestEventTypes(), ", ") + `.
What the type needs and --data lacks is made up: a request id, questions
(research_request.question), an answer (research_request.answered).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"type": {args[0]}}
			if request != "" {
				q.Set("request", request)
			}
			var out struct{ EventID, Type, RequestID string }
			if err := c.call(cmd.Context(), "request-event", q, []byte(data), &out); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "sent %s %s (request %s) to the member's webhooks\n", out.Type, out.EventID, out.RequestID)
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&request, "request", "", "the request's id (default: a new one)")
	cmd.Flags().StringVar(&data, "data", "", "the event's data, a JSON object (what the type needs and it lacks is made up)")
	return cmd
}

func newEmulatorFailNextCmd(env *Env) *cobra.Command {
	c := &emulatorCtl{env: env}
	var path string
	var status, count int
	cmd := &cobra.Command{
		Use:   "fail-next",
		Short: "Make the next API or file requests matching --path answer --status",
		Long: `Make the next --count requests whose path matches --path answer --status
(with Ploti's error body, and Retry-After: 1 for 429 and 503). A pattern's
'*' matches within one path segment, a trailing /** everything below; it may
start with a method: "GET /v1/feeds/subscriptions/*/events". File links are
under /files/**.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"path": {path}, "status": {strconv.Itoa(status)}, "count": {strconv.Itoa(count)}}
			var out struct {
				Path          string
				Status, Count int
			}
			if err := c.call(cmd.Context(), "fail-next", q, nil, &out); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "the next %d request(s) matching %s answer %d\n", out.Count, out.Path, out.Status)
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&path, "path", "/v1/**", "the requests to fail: a URL path pattern")
	cmd.Flags().IntVar(&status, "status", http.StatusServiceUnavailable, "the HTTP status they answer")
	cmd.Flags().IntVar(&count, "count", 1, "how many requests fail")
	return cmd
}
