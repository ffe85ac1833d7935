package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// webhooksCmd is the webhooks commands: API commands like the others
// (apiCmd's flags, --max-attempts among them, and errors in words).
type webhooksCmd struct {
	apiCmd
	URL         string
	Description string
	Events      []string
	Header      string
	SecretFile  string
	Member      bool
	// Only is list's --subscription: that subscription's webhooks only.
	Only string
}

func newWebhooksCmd(env *Env) *cobra.Command {
	w := &webhooksCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{Use: "webhooks", Short: "Create, list, test and delete webhooks for a subscription's events, or your account's"}
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a webhook for the subscription (or, without one, for your account); its signing secret is returned once",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return w.create(c.Context()) },
	}
	create.Flags().StringVar(&w.URL, "url", "", "the https address Ploti POSTs events to (required)")
	create.Flags().StringVar(&w.Description, "description", "", "a description")
	create.Flags().StringSliceVar(&w.Events, "events", nil, "event types to send (default: every type the webhook's kind receives: every feed event type for a subscription's, which most receivers want, and dataset.changed and the request events for a member's; a subscription's filter without feed.dataset.added and feed.dataset.schema_changed never signals new datasets or schema changes)")
	create.Flags().StringVar(&w.Header, "header", "", `a header Ploti sends with every POST, "Name: value"`)
	create.Flags().StringVar(&w.SecretFile, "secret-file", "", "write the signing secret to this new file (mode 0600; an existing file is never replaced) instead of printing it; serve reads it with --webhook-secret-file")
	create.Flags().BoolVar(&w.Member, "member", false, "a member webhook, even with PLOTI_SUBSCRIPTION set: dataset.changed for the datasets you watch and your request events (the default without a subscription)")
	list := &cobra.Command{Use: "list", Short: "List webhooks", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return w.list(c.Context()) }}
	del := &cobra.Command{Use: "delete ID", Short: "Delete a webhook", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error { return w.delete(c.Context(), a[0]) }}
	test := &cobra.Command{Use: "test ID", Short: "Ask Ploti to send one signed ping now", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error { return w.test(c.Context(), a[0]) }}
	create.Flags().StringVar(&w.conn.Subscription, "subscription", "", "Data Feeds subscription id (env PLOTI_SUBSCRIPTION)")
	list.Flags().StringVar(&w.Only, "subscription", "", "list only this subscription's webhooks")
	for _, c := range []*cobra.Command{del, test} {
		// A webhook id names it whole; the flag is taken, as it always was,
		// so that scripts passing it on keep working.
		var ignored string
		c.Flags().StringVar(&ignored, "subscription", "", "ignored: the webhook's id names it")
		c.Flags().MarkHidden("subscription")
	}
	for _, c := range []*cobra.Command{create, list, del, test} {
		w.register(c)
		cmd.AddCommand(c)
	}
	return cmd
}

func (w *webhooksCmd) create(ctx context.Context) error {
	if w.URL == "" {
		return &usageError{fmt.Errorf("webhooks create: --url is required")}
	}
	if err := checkWebhookURL(w.URL); err != nil {
		return err
	}
	c, err := w.client()
	if err != nil {
		return err
	}
	sub := w.conn.Subscription
	if w.Member {
		sub = ""
	}
	req := ploti.Webhook{URL: w.URL, Description: w.Description, SubscriptionID: sub, Events: w.Events}
	if w.Header != "" {
		name, value, ok := strings.Cut(w.Header, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return &usageError{fmt.Errorf(`webhooks create: --header wants "Name: value"`)}
		}
		req.Header = &ploti.WebhookHeader{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}
	}
	// The secret file is made (empty, 0600) before the webhook, so that a
	// file that exists or cannot be written stops the create first.
	var sf *secretFile
	if w.SecretFile != "" {
		if sf, err = reserveSecretFile(w.SecretFile); err != nil {
			return fmt.Errorf("webhooks create: %w; no webhook was created", err)
		}
		defer sf.abandon()
	}
	hook, err := c.CreateWebhook(ctx, req)
	if err != nil {
		return explainWebhook(err, "create webhook", "")
	}
	if missed := missedFeedEvents(sub, w.Events); len(missed) > 0 {
		// feed-events.txt: "A filter that leaves out feed.dataset.added or
		// feed.dataset.schema_changed never tells you about new datasets or
		// schema changes." The log still has them: sync and serve read it.
		fmt.Fprintf(w.env.Stderr, "warning: --events leaves out %s: this webhook will never signal new datasets or schema changes (the log still has them; `serve` polls it too)\n",
			strings.Join(missed, " and "))
	}
	if !w.JSON {
		what := "subscription " + sub
		if sub == "" {
			what = "your account (dataset.changed for the datasets you watch, and your request events)"
		}
		fmt.Fprintf(w.env.Stdout, "created webhook %s → %s for %s\n", hook.ID, hook.URL, what)
	}
	return w.keepSecret(ctx, c, hook, sf)
}

// keepSecret writes the new webhook's secret to sf (deleting the webhook
// when it cannot: nobody would hold its secret), or prints it.
func (w *webhooksCmd) keepSecret(ctx context.Context, c *fetch.Client, hook *ploti.Webhook, sf *secretFile) error {
	if sf != nil {
		if err := sf.keep(hook.Secret); err != nil {
			if derr := c.DeleteWebhook(ctx, hook.ID); derr != nil {
				return fmt.Errorf("webhooks create: %w, and deleting webhook %s failed (delete it: its secret is lost): %w", err, hook.ID, derr)
			}
			return fmt.Errorf("webhooks create: %w; webhook %s was deleted again, as nobody holds its secret", err, hook.ID)
		}
	}
	switch {
	case w.JSON:
		out := struct {
			ploti.Webhook
			SecretFile string `json:"secretFile,omitempty"`
		}{*hook, w.SecretFile}
		if sf != nil {
			out.Secret = ""
		}
		return w.printJSON(out)
	case sf != nil:
		fmt.Fprintf(w.env.Stdout, "signing secret written to %s (Ploti shows it only once)\n", w.SecretFile)
	default:
		fmt.Fprintf(w.env.Stdout, "signing secret (shown once, keep it with your receiver): %s\n", hook.Secret)
	}
	return nil
}

func (w *webhooksCmd) list(ctx context.Context) error {
	c, err := w.client()
	if err != nil {
		return err
	}
	hooks, err := c.Webhooks(ctx)
	if err != nil {
		return explainWebhook(err, "list webhooks", "")
	}
	if w.Only != "" {
		hooks = slices.DeleteFunc(hooks, func(h ploti.Webhook) bool { return h.SubscriptionID != w.Only })
		if len(hooks) == 0 {
			if err := checkSubscription(ctx, c, w.Only); err != nil {
				return err
			}
		}
	}
	if w.JSON {
		return w.printJSON(nonNil(hooks))
	}
	if len(hooks) == 0 {
		fmt.Fprintln(w.env.Stdout, "no webhooks")
		return nil
	}
	tw := tabwriter.NewWriter(w.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tSUBSCRIPTION\tEVENTS\tENABLED")
	for _, h := range hooks {
		events := webhookEvents(h)
		enabled := "yes"
		if h.Enabled != nil && !*h.Enabled {
			enabled = "no"
			if h.DisabledReason != "" {
				enabled += " (" + h.DisabledReason + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.ID, h.URL, orDash(h.SubscriptionID), events, enabled)
	}
	return tw.Flush()
}

func (w *webhooksCmd) delete(ctx context.Context, id string) error {
	c, err := w.client()
	if err != nil {
		return err
	}
	if err := c.DeleteWebhook(ctx, id); err != nil {
		return explainWebhook(err, "delete webhook "+id, id)
	}
	if w.JSON {
		return w.printJSON(map[string]any{"id": id, "deleted": true})
	}
	fmt.Fprintf(w.env.Stdout, "deleted webhook %s\n", id)
	return nil
}

func (w *webhooksCmd) test(ctx context.Context, id string) error {
	c, err := w.client()
	if err != nil {
		return err
	}
	if err := c.TestWebhook(ctx, id); err != nil {
		return explainWebhook(err, "test webhook "+id, id)
	}
	if w.JSON {
		return w.printJSON(map[string]any{"id": id, "sent": true})
	}
	fmt.Fprintf(w.env.Stdout, "sent a signed ping to webhook %s\n", id)
	return nil
}

// checkWebhookURL refuses, as a usage error, an address that is not https
// (watch-and-webhooks.txt: "A webhook is an https address you control"),
// but for plain http to a loopback host, where `serve` listens in trials
// and tests (the emulator takes those too).
func checkWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return &usageError{fmt.Errorf("webhooks create: --url %q: want an absolute https address such as https://replica.example.org/ploti", s)}
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return &usageError{fmt.Errorf("webhooks create: --url %s: a webhook is an https address (plain http only to a loopback host: localhost, 127.0.0.0/8 or ::1)", s)}
	}
	return nil
}

// loopbackHost reports whether host (a URL's, without its port) is
// localhost, 127.0.0.0/8 or ::1.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// explainWebhook puts a webhook call's error in words, as explainWatch
// does a watch's: an unknown id (id set: delete, test) says where yours
// are listed, a test of a webhook that is off (decision 61) says what to
// do, and the 21st webhook says so with Ploti's own message. An
// ambiguous create (fetch.ErrAmbiguous) keeps fetch's words, which say
// what to look for in webhooks list.
func explainWebhook(err error, what, id string) error {
	var ae *fetch.APIError
	if errors.Is(err, fetch.ErrAmbiguous) || !errors.As(err, &ae) {
		return err
	}
	said := ""
	if ae.Message != "" {
		said = " (Ploti said: " + ae.Message + ")"
	}
	switch {
	case id != "" && errors.Is(err, fetch.ErrNotFound):
		return &explained{msg: fmt.Sprintf("%s: no webhook %s: `ploti-replica webhooks list` shows yours (404)", what, id), err: err}
	case ae.Code == "webhook_disabled":
		return &explained{msg: fmt.Sprintf("%s: webhook %s is turned off, so Ploti sends it nothing (409 webhook_disabled; `ploti-replica webhooks list` says why): delete it and create another%s", what, id, said), err: err}
	case errors.Is(err, fetch.ErrWebhookLimit):
		return &explained{msg: fmt.Sprintf("%s: you have the 20 webhooks a member may have, subscription webhooks included (409 webhook_limit): delete one first (`ploti-replica webhooks list`, `ploti-replica webhooks delete ID`)%s", what, said), err: err}
	}
	return explain(err, what)
}

// missedFeedEvents names the event types that feed-events.txt says a
// subscription webhook's filter should keep and events leaves out; none
// for a member webhook (sub empty) or no filter.
func missedFeedEvents(sub string, events []string) []string {
	if sub == "" || len(events) == 0 {
		return nil
	}
	var missed []string
	for _, want := range []string{ploti.EventAdded, ploti.EventSchemaChanged} {
		if !slices.Contains(events, want) {
			missed = append(missed, want)
		}
	}
	return missed
}

// webhookEvents is what a webhook receives: "A webhook made for a Data
// Feeds subscription receives only that subscription's feed events. Every
// other webhook receives these three kinds of event" (watch-and-webhooks).
func webhookEvents(h ploti.Webhook) string {
	switch {
	case len(h.Events) > 0:
		return strings.Join(h.Events, ",")
	case h.SubscriptionID != "":
		return "the subscription's feed events"
	default:
		return "dataset.changed, data_request.*, research_request.*"
	}
}
