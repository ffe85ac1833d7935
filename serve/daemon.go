package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// Sync results: the label of ploti_replica_syncs_total and /healthz's
// lastResult.
const (
	ResultOK      = "ok"
	ResultPartial = "partial" // some datasets failed; their last good versions stay
	ResultFailed  = "failed"
	ResultStopped = "stopped" // by the shutdown
)

// Log keys.
const (
	logKeyResult    = "result"
	logKeyDuration  = "duration_ms" // an integer count of milliseconds
	logKeyApplied   = "events_applied"
	logKeySeen      = "events_seen"
	logKeyBehind    = "behind"
	logKeyLoaded    = "snapshots_loaded"
	logKeyMerged    = "changes_merged"
	logKeyFailed    = "failed_datasets"
	logKeyListen    = "listen"
	logKeyPath      = "webhook_path"
	logKeyPoll      = "poll_ms"
	logKeyDB        = "db"
	logKeyTrigger   = "trigger"
	logKeyPublished = "published"
	logKeyPubBytes  = "published_bytes"
	logKeyPubTook   = "publish_ms"
)

// Daemon runs the syncs and answers the webhooks and /healthz; its state
// is shared with the HTTP handlers under mu.
type Daemon struct {
	path     string
	opts     replica.Options
	log      *slog.Logger
	now      func() time.Time
	trig     *webhook.Trigger
	metrics  *serveMetrics
	poll     time.Duration
	stuck    time.Duration // /healthz calls a sync without progress for this long stuck (health.go)
	grace    time.Duration
	retryMin time.Duration
	retryMax time.Duration

	listen      string
	listener    net.Listener
	webhookPath string // for the log
	hooks       int    // webhook paths served
	handler     http.Handler
	running     atomic.Bool

	inbox *InboxQueue // request events waiting for a sync

	verifyEvery   time.Duration // verify.go
	verifyMetrics *verifyMetrics

	mu         sync.Mutex
	health     health
	nextVerify time.Time
	held       map[string]bool // the datasets the file held after the last sync; nil before one
}

// health is what the last finished sync left, for /healthz.
type health struct {
	Syncing       bool       `json:"syncing"`
	Syncs         int        `json:"syncs"`
	LastResult    string     `json:"lastResult,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	LastSyncAt    *time.Time `json:"lastSyncAt,omitempty"`
	LastSuccessAt *time.Time `json:"lastSuccessAt,omitempty"`
	Behind        int        `json:"-"` // events after the cursor at the end of the last sync; -1: not known (JSON: absent)
	Failed        []string   `json:"failedDatasets,omitempty"`
	LastEventAt   *time.Time `json:"lastWebhookEventAt,omitempty"`
	// progressAt is the last sign of life of the sync under way: its
	// start, or its last Progress.
	progressAt time.Time
}

// New checks opts, builds the webhook verifiers and registers the
// metrics. Nothing runs until Run.
func New(opts Options) (*Daemon, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	d := &Daemon{path: opts.DB, opts: opts.Replica, log: opts.logger(), now: opts.Now, trig: webhook.NewTrigger(),
		poll: opts.Poll, stuck: stuckAfterFor(opts), grace: opts.ShutdownTimeout, retryMin: opts.RetryMin, retryMax: opts.RetryMax,
		listen: opts.Listen, listener: opts.Listener, webhookPath: opts.Webhook.Path, health: health{Behind: -1}}
	var err error
	if d.metrics, err = newServeMetrics(opts.Registry, d.lastSuccess, d.now); err != nil {
		return nil, err
	}
	if d.verifyMetrics, err = newVerifyMetrics(d.metrics.reg); err != nil {
		return nil, err
	}
	if d.verifyEvery = opts.VerifyEvery; d.verifyEvery > 0 {
		d.nextVerify = d.now().Add(d.verifyEvery)
	}
	d.inbox = NewInboxQueue(opts.DB, d.now, d.log)
	mux := http.NewServeMux()
	for i, w := range []Webhook{opts.Webhook, opts.MemberWebhook} {
		h, err := d.webhookHandler(w, replica.SeenPath(opts.DB, []string{"", "member"}[i]))
		if err != nil {
			return nil, err
		}
		if h != nil {
			mux.Handle(w.Path, h)
			d.hooks++
		}
	}
	mux.HandleFunc("GET /healthz", d.healthz)
	mux.Handle("GET /metrics", d.metrics.handler())
	d.handler = mux
	return d, nil
}

// webhookHandler is w's handler, keeping the ids it answered in seen;
// nil when w is not served.
func (d *Daemon) webhookHandler(w Webhook, seen string) (http.Handler, error) {
	v, err := w.verifier(d.now)
	if v == nil || err != nil {
		return nil, err
	}
	return webhook.NewHandler(webhook.HandlerOptions{Verifier: v, Trigger: d.trig, Observe: d.metrics.observeWebhook, MaxBody: w.MaxBody,
		Logger: d.log, OnEvent: d.noteEvent, Keep: d.inbox.Keep, OnOther: d.noteOther, Wants: d.wants, SeenFile: seen})
}

// Handler serves the webhook paths, GET /healthz and GET /metrics. Run
// serves it on Options.Listen; without one, mount it on a server of your
// own.
func (d *Daemon) Handler() http.Handler { return d.handler }

// noteEvent records when the last feed event arrived (webhook.Handler's
// OnEvent).
func (d *Daemon) noteEvent(context.Context, webhook.Event) {
	at := d.now().UTC()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.health.LastEventAt = &at
}

// noteOther notes a member webhook's event. A request event starts a
// sync (kept in the queue: the sync records it in _ploti.inbox); a
// dataset.changed starts one through the handler's Wants. Like feed
// events they are coalesced; pings are not.
func (d *Daemon) noteOther(ctx context.Context, e webhook.Event) {
	if e.Type != ploti.EventDatasetChanged && !ploti.IsRequestEvent(e.Type) {
		return
	}
	d.noteEvent(ctx, e)
	if ploti.IsRequestEvent(e.Type) {
		d.trig.Signal()
	}
}

// wants is the member handler's Wants: a dataset.changed starts a sync
// when the replica watches (every such event is about a watched dataset),
// or when the file holds the dataset from the feed (the sync reads the
// log), as the last sync's status tells; before any, always.
func (d *Daemon) wants(datasetID string) bool {
	if d.opts.Watch {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		return true
	}
	return d.held[datasetID]
}

// noteHeld keeps the datasets st lists, for wants.
func (d *Daemon) noteHeld(st *replica.Status) {
	if st == nil {
		return
	}
	held := make(map[string]bool, len(st.Datasets))
	for _, ds := range st.Datasets {
		held[ds.DatasetID] = ds.Status != replica.StatusRemoved
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held = held
}

func (d *Daemon) lastSuccess() *time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.health.LastSuccessAt
}

// Run syncs at start, on each webhook, every Poll and, after a failure,
// after a growing wait, serving Handler on Options.Listen meanwhile. When
// ctx is cancelled it lets the transaction under way commit (within
// ShutdownTimeout) and returns nil; it returns an error when a sync meets
// one no retry can mend (replica.ErrWrongSubscription,
// replica.ErrForeignCursor, replica.ErrSubscriptionGone twice in a row),
// or when it cannot listen. Run runs once.
func (d *Daemon) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("serve: Run called twice")
	}
	if d.hooks == 0 {
		d.log.Info("no webhook secret: polling only", logs.Ms(logKeyPoll, d.poll))
	}
	ln := d.listener
	if ln == nil && d.listen != "" {
		var err error
		if ln, err = net.Listen("tcp", d.listen); err != nil {
			return fmt.Errorf("serve: listen on %s: %w", d.listen, err)
		}
	}
	var err error
	if ln == nil {
		d.log.Info("syncing; webhooks, /healthz and /metrics are served by the embedding server",
			slog.String(logKeyPath, d.webhookPath), slog.String(logKeyDB, replica.Name(d.path)), logs.Ms(logKeyPoll, d.poll))
		err = d.loop(ctx)
	} else {
		err = d.serve(ctx, ln)
	}
	if err == nil {
		d.log.Info("stopped; the last committed state stays")
	}
	return err
}

// serve runs the loop while serving Handler on ln, and shuts the server
// down when the loop returns.
func (d *Daemon) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: d.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelWarn)}
	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(ln)
		stopLoop() // without a listener, webhooks cannot arrive: stop
	}()
	d.log.Info("serving webhooks, /healthz and /metrics",
		slog.String(logKeyListen, ln.Addr().String()), slog.String(logKeyPath, d.webhookPath),
		slog.String(logKeyDB, replica.Name(d.path)), logs.Ms(logKeyPoll, d.poll))
	loopErr := d.loop(loopCtx)
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && loopErr == nil {
		loopErr = fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	}
	return loopErr
}

// loop runs the syncs: replica.RunFile, the file open only while a sync
// runs, with the daemon's health, metrics, inbox and verify around each.
func (d *Daemon) loop(ctx context.Context) error {
	if d.verifyEvery > 0 {
		// The sync that comes when a verify is due runs it: make one come.
		tick := time.NewTicker(d.verifyEvery)
		defer tick.Stop()
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					d.trig.Signal()
				}
			}
		}()
	}
	interval := d.poll
	if interval == 0 {
		interval = -1 // webhooks only
	}
	opts := d.opts
	opts.Progress = d.noteProgress(opts.Progress)
	opts.OnLocked = func(msg string) { // once per Open
		d.log.Warn("waiting for the file: "+msg, logKeyDB, replica.Name(d.path))
	}
	var status atomic.Pointer[replica.Status] // AfterSync's, for OnSync
	opened := false                           // a sync of this run opened the file
	ro := replica.RunOptions{Interval: interval, Signal: d.trig.C(), RetryMin: d.retryMin, RetryMax: d.retryMax, StopTimeout: d.grace,
		BeforeSync: func(ctx context.Context, r *replica.Replica) {
			d.setSyncing(true)
			status.Store(nil)
			d.recordInbox(ctx, r, &opened)
		},
		AfterSync: func(ctx context.Context, r *replica.Replica, _ replica.SyncResult, err error) {
			st, serr := r.Status(ctx)
			if serr != nil {
				d.log.Warn("read the file's status", logs.Err(serr))
			}
			status.Store(st)
			d.noteHeld(st)
			if err == nil || errors.Is(err, replica.ErrPartial) {
				d.maybeVerify(ctx, r)
			}
		},
		OnSync: func(res replica.SyncResult, err error) {
			out := syncOutcome{res: res, status: status.Load(), behind: -1, err: err}
			if res.Behind != nil {
				out.behind = *res.Behind
			}
			result := d.record(out, res.Duration)
			d.logSync(res.Trigger, result, out, res.Duration)
		},
	}
	return replica.RunFile(ctx, d.path, opts, ro)
}

// recordInbox records the queued request events in the file a sync
// opened. When an earlier sync of the run opened the file, RunFile found
// the same one (else it ends the run: replica.ErrFileReplaced), so the
// events recorded then are in it, and are forgotten (InboxQueue.Confirm).
func (d *Daemon) recordInbox(ctx context.Context, r *replica.Replica, opened *bool) {
	if *opened {
		d.inbox.Confirm()
	}
	*opened = true
	d.inbox.RecordKept(ctx, r)
}

// syncOutcome is what one sync did.
type syncOutcome struct {
	res    replica.SyncResult
	status *replica.Status
	behind int
	err    error
}

// classify names a sync's result.
func classify(err error) string {
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, replica.ErrPartial):
		return ResultPartial
	case errors.Is(err, replica.ErrStopped), errors.Is(err, context.Canceled):
		return ResultStopped
	}
	return ResultFailed
}

// record updates the health and the metrics with a finished sync.
func (d *Daemon) record(out syncOutcome, took time.Duration) string {
	result := classify(out.err)
	at := d.now().UTC()
	d.metrics.observeSync(result, took, out)
	d.mu.Lock()
	defer d.mu.Unlock()
	h := &d.health
	h.Syncing = false
	if result == ResultStopped {
		return result
	}
	h.Syncs++
	h.LastResult, h.LastSyncAt, h.LastError, h.Failed = result, &at, "", out.res.Failed
	if out.err != nil {
		h.LastError = out.err.Error()
	}
	if result == ResultOK {
		h.LastSuccessAt = &at
	}
	h.Behind = out.behind
	return result
}

func (d *Daemon) logSync(trigger, result string, out syncOutcome, took time.Duration) {
	level, attrs := slog.LevelInfo, make([]slog.Attr, 0, 14)
	switch result {
	case ResultOK:
	case ResultStopped:
		attrs = append(attrs, logs.AnErr("cause", out.err))
	default:
		level = slog.LevelWarn
		attrs = append(attrs, logs.Err(out.err))
	}
	if len(out.res.Failed) > 0 {
		attrs = append(attrs, slog.Any(logKeyFailed, out.res.Failed))
	}
	if p := out.res.Published; p != nil {
		attrs = append(attrs, slog.String(logKeyPublished, p.Path), slog.Int64(logKeyPubBytes, p.Bytes), logs.Ms(logKeyPubTook, p.Duration))
	}
	attrs = append(attrs, slog.String(logKeyTrigger, trigger), slog.String(logKeyResult, result), logs.Ms(logKeyDuration, took),
		slog.Int(logKeySeen, out.res.EventsSeen), slog.Int(logKeyApplied, out.res.EventsApplied),
		slog.Int(logKeyLoaded, out.res.SnapshotsLoaded), slog.Int(logKeyMerged, out.res.ChangesMerged))
	if out.behind >= 0 {
		// Counted only with a subscription (a watch-only file has no
		// log to be behind on): "behind" is left out, not -1, otherwise.
		attrs = append(attrs, slog.Int(logKeyBehind, out.behind))
	}
	d.log.LogAttrs(context.Background(), level, "sync", attrs...)
}

func (d *Daemon) setSyncing(on bool) {
	at := d.clock()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.health.Syncing = on
	d.health.progressAt = at
}

// healthz answers 200 while the last sync succeeded, no event waited
// after the cursor at its end, the sync under way (if any) is not stuck
// and the last success is not stale (staleReason), and 503 with the
// reason otherwise.
func (d *Daemon) healthz(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	h := d.health
	d.mu.Unlock()
	body := struct {
		Status string `json:"status"`
		Reason string `json:"reason,omitempty"`
		health
		Behind *int `json:"behind,omitempty"`
	}{Status: "ok", health: h}
	if h.Behind >= 0 {
		body.Behind = &h.Behind
	}
	stale := d.staleReason(h, d.clock())
	switch {
	case stale != "":
		body.Reason = stale
	case h.LastResult == "":
		body.Reason = "no sync has finished yet"
	case h.LastResult == ResultPartial:
		body.Reason = fmt.Sprintf("the last sync left %d dataset(s) failed (%s); their last good versions stay", len(h.Failed), strings.Join(h.Failed, ", "))
	case h.LastResult != ResultOK:
		body.Reason = "the last sync failed: " + h.LastError
	case h.Behind > 0:
		body.Reason = fmt.Sprintf("behind: %d event(s) waited after the cursor when the last sync ended", h.Behind)
	}
	status := http.StatusOK
	if body.Reason != "" {
		body.Status, status = "unavailable", http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
