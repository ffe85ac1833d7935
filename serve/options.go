package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// Defaults, as `ploti-replica serve` gives them to its flags.
const (
	// DefaultListen is loopback (a receiver on the internet sits behind
	// a proxy the operator chooses), on a port the emulator's defaults
	// (8080 and 8081) leave free.
	DefaultListen          = "127.0.0.1:8790"
	DefaultWebhookPath     = "/ploti"
	DefaultMemberPath      = "/ploti/member"
	DefaultPoll            = 5 * time.Minute
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultRetryMin and DefaultRetryMax bound the wait before the next
	// sync after a failed one (doubling from the first to the second, and
	// never longer than Poll when polling).
	DefaultRetryMin = 5 * time.Second
	DefaultRetryMax = 5 * time.Minute
	// DefaultMaxBody is the largest delivery a webhook takes: request
	// events carry a research request's answer, and Ploti never retries
	// a 413 ("An answer of 413 is not retried"), so a larger event
	// refused would be lost. Either webhook may be the member's.
	DefaultMaxBody = 32 << 20
)

// Options configure a Daemon.
type Options struct {
	// DB is the replica's file, or a postgres:// URL: replica.Open's path.
	// The request-event queue is kept beside a file, and in the user's
	// cache folder for a database.
	DB string

	// Replica are the options of each sync's replica.Open. Stop and
	// OnLocked are the daemon's: what is set there is replaced.
	Replica replica.Options

	// Logger takes the daemon's own lines (its syncs, webhook deliveries,
	// the request-event queue and verifies); nil: Replica.Logger, and no
	// logs when that is nil too.
	Logger *slog.Logger

	// Webhook is the subscription's webhook and MemberWebhook the
	// member's (watches' dataset.changed, request events): each has its
	// own secret. One without a secret or verifier is not served.
	Webhook, MemberWebhook Webhook

	// Poll is how long after the last sync the next one starts without a
	// webhook; 0: never (webhooks only).
	Poll time.Duration

	// VerifyEvery is how often the sync that comes when due also checks
	// every table against the version it holds (replica.Verify), with the
	// result in /metrics; 0: never.
	VerifyEvery time.Duration

	// ShutdownTimeout is how long the sync under way when Run's context
	// is cancelled may take to reach its next commit before it is
	// cancelled (rolled back); 0: at once.
	ShutdownTimeout time.Duration

	// StuckAfter is how long the sync under way may go without progress
	// (no event applied, no dataset loaded) before /healthz calls it
	// stuck; 0: what the API client's limits allow (Replica.FetchOptions:
	// its tries, answer timeout, waits and Retry-After budget), 23m with
	// the defaults. /healthz also calls the replica stale when the last
	// success is older than 3 × Poll + StuckAfter (with Poll above 0).
	StuckAfter time.Duration

	// RetryMin and RetryMax bound the wait before the next sync after a
	// failed one; 0: DefaultRetryMin and DefaultRetryMax.
	RetryMin, RetryMax time.Duration

	// Listen is the address Run serves Handler on. Listener, when set, is
	// used instead. With neither, Run serves no HTTP: mount Handler on a
	// server of your own.
	Listen   string
	Listener net.Listener

	// Registry takes the metrics /metrics serves; nil: a registry of the
	// daemon's own, with the Go and process collectors.
	Registry *prometheus.Registry

	// Now is the clock of the health, the metrics and the verifiers
	// built from a Secret; default time.Now.
	Now func() time.Time
}

// Webhook is a path that receives signed Ploti deliveries (Standard
// Webhooks).
type Webhook struct {
	// Path is where the POSTs arrive; "": DefaultWebhookPath for the
	// subscription's webhook, DefaultMemberPath for the member's.
	Path string
	// Secret is the signing secret Ploti returned when the webhook was
	// created (whsec_…); Verifier, when set, is used instead.
	Secret   string
	Verifier *webhook.Verifier
	// MaxBody is the largest delivery taken (larger ones get 413, which
	// Ploti does not retry); 0: DefaultMaxBody.
	MaxBody int64
}

func (w Webhook) on() bool { return w.Verifier != nil || w.Secret != "" }

// webhookPathRE is what a webhook path may be: a plain path, which
// http.ServeMux takes literally.
var webhookPathRE = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*$`)

// ValidPath reports whether p may be a webhook's path: a plain path (no
// pattern), other than /healthz and /metrics.
func ValidPath(p string) bool {
	return webhookPathRE.MatchString(p) && p != "/healthz" && p != "/metrics"
}

// logger is the daemon's logger: Logger, else Replica.Logger, else one
// that writes nothing.
func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return logs.OrDiscard(o.Replica.Logger)
}

// check fills the defaults and refuses what cannot work.
func (o *Options) check() error {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Webhook.Path == "" {
		o.Webhook.Path = DefaultWebhookPath
	}
	if o.MemberWebhook.Path == "" {
		o.MemberWebhook.Path = DefaultMemberPath
	}
	for _, w := range []*Webhook{&o.Webhook, &o.MemberWebhook} {
		if w.MaxBody <= 0 {
			w.MaxBody = DefaultMaxBody
		}
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	switch {
	case o.DB == "":
		return errors.New("serve: no DB: a file's path or a postgres:// URL")
	case o.Webhook.on() && !ValidPath(o.Webhook.Path):
		return fmt.Errorf("serve: webhook path %q: want a path such as %s, other than /healthz and /metrics", o.Webhook.Path, DefaultWebhookPath)
	case o.MemberWebhook.on() && (!ValidPath(o.MemberWebhook.Path) || o.Webhook.on() && o.MemberWebhook.Path == o.Webhook.Path):
		return fmt.Errorf("serve: member webhook path %q: want a path such as %s, other than the subscription webhook's, /healthz and /metrics",
			o.MemberWebhook.Path, DefaultMemberPath)
	case o.Poll < 0 || o.VerifyEvery < 0 || o.ShutdownTimeout < 0 || o.StuckAfter < 0:
		return errors.New("serve: Poll, VerifyEvery, ShutdownTimeout and StuckAfter want 0 or more")
	case !o.Webhook.on() && !o.MemberWebhook.on() && o.Poll == 0:
		return errors.New("serve: nothing would start a sync: give a webhook secret, or a Poll above 0")
	}
	return nil
}

// verifier is w's verifier, built from its secret when none is given; nil
// when w is not served. No error quotes the secret.
func (w Webhook) verifier(now func() time.Time) (*webhook.Verifier, error) {
	if w.Verifier != nil || w.Secret == "" {
		return w.Verifier, nil
	}
	v, err := webhook.NewVerifier(w.Secret, webhook.WithNow(now))
	if err != nil {
		return nil, fmt.Errorf("serve: the secret of the webhook at %s: %w (want whsec_ followed by base64)", w.Path, err)
	}
	return v, nil
}
