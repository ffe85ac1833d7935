package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/serve"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// serveCmd is `ploti-replica serve`: its flags, wired to package serve,
// which runs the daemon.
type serveCmd struct {
	env         *Env
	conn        connFlags
	Listen      string
	WebhookPath string
	SecretFile  string
	// MemberPath and MemberSecretFile serve a second webhook, when the
	// feed's and the member's (watches, request events) are both used:
	// each webhook has its own secret.
	MemberPath       string
	MaxBody          string
	MemberSecretFile string
	Poll             time.Duration
	ShutdownTimeout  time.Duration
	VerifyEvery      time.Duration

	// Set by tests.
	now      func() time.Time // the webhook verifier's clock; default time.Now
	retryMin time.Duration    // default serve.DefaultRetryMin
	listener net.Listener     // used instead of listening on Listen
	progress func(replica.Progress)
}

func newServeCmd(env *Env) *cobra.Command {
	_, cmd := newServe(env)
	return cmd
}

const serveLong = `Sync at start, whenever a signed Ploti webhook arrives, and every --poll.
Webhooks only say "read the log now": a lost one costs at most the wait until
the next poll or the next webhook. Events that arrive during a sync cause
exactly one more sync. The DuckDB file is open only while a sync runs, so
notebooks can open it read-only in between. With --publish PATH, each sync
ends by renaming a checkpointed read-only copy over PATH: dashboards that
open PATH never wait for the writer and see whole syncs only.

A member webhook's dataset.changed (a watched dataset has a new version)
starts a sync too, which reads it; a lost one is caught up by the next poll,
whose watches list tells which watched datasets moved. Its request events
(data_request.*, research_request.*) are kept on disk before the answer and
recorded in _ploti.inbox by the next sync, once each (` + "`ploti-replica inbox`" + `).
Subscription and member webhooks have a secret each: give the member's with
--member-webhook-secret-file (it is served at --member-webhook-path).

  POST <--webhook-path>  signed deliveries (Standard Webhooks); 2xx at once
  GET  /healthz          200 while the last sync succeeded and nothing waits
                         in the log; 503 with a JSON reason otherwise
  GET  /metrics          Prometheus metrics

The webhook's signing secret (whsec_…) is read from --webhook-secret-file.
Without one, serve polls only (every --poll) and answers 404 on the webhook
path. It listens on loopback unless --listen says otherwise.
SIGINT or SIGTERM lets the transaction under way commit, then exits 0.`

// newServe returns the command and the options its flags fill, for tests.
func newServe(env *Env) (*serveCmd, *cobra.Command) {
	s := &serveCmd{env: env}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Keep the file current: webhooks as the signal, the log as the record, polling as the fallback",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return s.run(cmd.Context()) },
	}
	s.conn.register(cmd, flagsAll)
	s.conn.registerWatch(cmd)
	f := cmd.Flags()
	f.StringVar(&s.Listen, "listen", serve.DefaultListen, "address for webhooks, /healthz and /metrics")
	f.StringVar(&s.WebhookPath, "webhook-path", serve.DefaultWebhookPath, "path that receives Ploti's webhook POSTs")
	f.StringVar(&s.SecretFile, "webhook-secret-file", "", "file holding the webhook's signing secret, whsec_… (env PLOTI_WEBHOOK_SECRET_FILE)")
	f.StringVar(&s.MemberSecretFile, "member-webhook-secret-file", "", "file holding a second webhook's secret: a member webhook (watches' dataset.changed, request events) beside the subscription's")
	f.StringVar(&s.MemberPath, "member-webhook-path", serve.DefaultMemberPath, "path that receives the member webhook's POSTs, with --member-webhook-secret-file")
	f.StringVar(&s.MaxBody, "webhook-max-body", "32MiB", "the largest webhook delivery taken (a request event carries its answer); Ploti does not retry the 413 a larger one gets")
	f.DurationVar(&s.Poll, "poll", serve.DefaultPoll, "also sync this long after the last sync; 0 turns polling off")
	f.DurationVar(&s.VerifyEvery, "verify-every", 0, "also check every table against the version it holds this often (as ploti-replica verify does, in the sync that comes when due), with the result in /metrics; 0: never")
	f.DurationVar(&s.ShutdownTimeout, "shutdown-timeout", serve.DefaultShutdownTimeout,
		"on SIGINT/SIGTERM, how long the sync under way may take to reach its next commit before it is cancelled (rolled back)")
	return s, cmd
}

// run validates the flags, reads the secrets, and runs the daemon until
// ctx is cancelled; then it lets the transaction under way commit and
// returns nil.
func (s *serveCmd) run(ctx context.Context) error {
	opts, err := s.conn.options(s.env)
	if err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	now := s.now
	if now == nil {
		now = time.Now
	}
	verifier, err := s.verifier(now)
	if err != nil {
		return err
	}
	var member *webhook.Verifier
	if s.MemberSecretFile != "" {
		if member, err = readVerifier(s.MemberSecretFile, now); err != nil {
			return err
		}
	}
	if verifier == nil && member == nil && s.Poll == 0 {
		return &usageError{errors.New("nothing would start a sync: give --webhook-secret-file (or PLOTI_WEBHOOK_SECRET_FILE), or a --poll above 0")}
	}
	maxBody, err := parseSize("--webhook-max-body", s.MaxBody)
	if err != nil {
		return err
	}
	opts.Progress = s.progress
	listen := s.Listen
	if listen == "" {
		listen = ":0" // what net.Listen makes of "": every interface, a port the system picks (serve.Options' "" serves no HTTP)
	}
	d, err := serve.New(serve.Options{DB: s.conn.DB, Replica: opts, Now: now,
		Webhook:       serve.Webhook{Path: s.WebhookPath, Verifier: verifier, MaxBody: maxBody},
		MemberWebhook: serve.Webhook{Path: s.MemberPath, Verifier: member, MaxBody: maxBody},
		Poll:          s.Poll, VerifyEvery: s.VerifyEvery, ShutdownTimeout: s.ShutdownTimeout, RetryMin: s.retryMin,
		Listen: listen, Listener: s.listener})
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// check refuses flag values that cannot work.
func (s *serveCmd) check() error {
	if !serve.ValidPath(s.WebhookPath) {
		return &usageError{fmt.Errorf("--webhook-path %q: want a path such as %s, other than /healthz and /metrics", s.WebhookPath, serve.DefaultWebhookPath)}
	}
	if s.MemberSecretFile != "" && (!serve.ValidPath(s.MemberPath) || s.MemberPath == s.WebhookPath) {
		return &usageError{fmt.Errorf("--member-webhook-path %q: want a path such as %s, other than --webhook-path, /healthz and /metrics", s.MemberPath, serve.DefaultMemberPath)}
	}
	if s.Poll < 0 {
		return &usageError{fmt.Errorf("--poll %s: want 0 (off) or more", s.Poll)}
	}
	if s.VerifyEvery < 0 {
		return &usageError{fmt.Errorf("--verify-every %s: want 0 (never) or more", s.VerifyEvery)}
	}
	if s.ShutdownTimeout < 0 {
		return &usageError{fmt.Errorf("--shutdown-timeout %s: want 0 (cancel at once) or more", s.ShutdownTimeout)}
	}
	return nil
}

// verifier reads the secret file and builds the webhook verifier; nil
// when no secret file is given (polling only). No error quotes the secret.
func (s *serveCmd) verifier(now func() time.Time) (*webhook.Verifier, error) {
	path := s.SecretFile
	if path == "" {
		path = s.env.Getenv("PLOTI_WEBHOOK_SECRET_FILE")
	}
	if path == "" {
		return nil, nil
	}
	return readVerifier(path, now)
}

// readVerifier builds a webhook verifier from a secret file.
func readVerifier(path string, now func() time.Time) (*webhook.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if strings.HasPrefix(filepath.Base(path), "whsec_") {
			// The secret itself where its file's path belongs: the
			// error's path would carry it.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, &usageError{fmt.Errorf("read the webhook secret: %w: the flag takes the path of a file holding the secret, not the secret", err)}
		}
		return nil, &usageError{fmt.Errorf("read the webhook secret: %w", err)}
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return nil, &usageError{fmt.Errorf("the webhook secret file %s is empty: put the whsec_… secret Ploti returned when the webhook was created in it", path)}
	}
	v, err := webhook.NewVerifier(secret, webhook.WithNow(now))
	if err != nil {
		return nil, &usageError{fmt.Errorf("the webhook secret in %s: %w (want whsec_ followed by base64)", path, err)}
	}
	return v, nil
}
