package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage/backends"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// Defaults of serve.
const (
	// defaultListen is loopback (a receiver on the internet sits behind
	// a proxy the operator chooses), on a port the emulator's defaults
	// (8080 and 8081) leave free.
	defaultListen          = "127.0.0.1:8790"
	defaultWebhookPath     = "/ploti"
	defaultMemberPath      = "/ploti/member"
	defaultPoll            = 5 * time.Minute
	defaultShutdownTimeout = 30 * time.Second
	// defaultRetryMin and defaultRetryMax bound the wait before the next
	// sync after a failed one (doubling from the first to the second, and
	// never longer than --poll when polling).
	defaultRetryMin = 5 * time.Second
	defaultRetryMax = 5 * time.Minute
	// behindLimit is how many events after the cursor a sync counts at its
	// end, for /healthz; more are reported as this many.
	behindLimit = 1000
)

// Sync results, the label of ploti_replica_syncs_total.
const (
	resultOK      = "ok"
	resultPartial = "partial"
	resultFailed  = "failed"
	resultStopped = "stopped"
)

// Log keys.
const (
	logKeyResult    = "result"
	logKeyDuration  = "duration_ms" // zerolog writes durations as milliseconds
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
	logKeyRetryWait = "retry_in_ms"
	logKeyPublished = "published"
	logKeyPubBytes  = "published_bytes"
	logKeyPubTook   = "publish_ms"
)

// daemon runs the syncs and answers /healthz; its state is shared with the
// HTTP handlers under mu.
type daemon struct {
	path     string
	opts     replica.Options
	log      zerolog.Logger
	now      func() time.Time
	trig     *webhook.Trigger
	metrics  *serveMetrics
	poll     time.Duration
	grace    time.Duration
	retryMin time.Duration
	retryMax time.Duration

	inbox *inboxQueue // request events waiting for a sync; nil: none kept

	verifyEvery   time.Duration // serve_verify.go
	verifyMetrics *verifyMetrics

	mu         sync.Mutex
	health     health
	nextVerify time.Time
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
}

func newDaemon(path string, opts replica.Options, log zerolog.Logger, now func() time.Time) *daemon {
	d := &daemon{path: path, opts: opts, log: log, now: now, trig: webhook.NewTrigger(), poll: defaultPoll,
		grace: defaultShutdownTimeout, retryMin: defaultRetryMin, retryMax: defaultRetryMax, health: health{Behind: -1}}
	d.metrics = newServeMetrics(d.lastSuccess, now)
	d.verifyMetrics = newVerifyMetrics(d.metrics.reg)
	return d
}

// noteEvent records when the last feed event arrived (webhook.Handler's
// OnEvent).
func (d *daemon) noteEvent(context.Context, webhook.Event) {
	at := d.now().UTC()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.health.LastEventAt = &at
}

// noteOther starts a sync for a member webhook's event: dataset.changed
// (a watched dataset moved: the sync reads it; for a dataset the feed
// keeps, it reads the log) and a request event (kept in the queue: the
// sync records it in _ploti.inbox). Like feed events they are coalesced;
// pings are not.
func (d *daemon) noteOther(ctx context.Context, e webhook.Event) {
	if e.Type != ploti.EventDatasetChanged && !ploti.IsRequestEvent(e.Type) {
		return
	}
	d.noteEvent(ctx, e)
	d.trig.Signal()
}

func (d *daemon) lastSuccess() *time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.health.LastSuccessAt
}

// mux routes the webhook paths, /healthz and /metrics.
func (d *daemon) mux(hooks map[string]http.Handler) http.Handler {
	mux := http.NewServeMux()
	for path, h := range hooks {
		mux.Handle(path, h)
	}
	mux.HandleFunc("GET /healthz", d.healthz)
	mux.Handle("GET /metrics", d.metrics.handler())
	return mux
}

// subscriptionGoneSyncs is how many syncs in a row must find the
// subscription gone before serve stops.
const subscriptionGoneSyncs = 2

// loop syncs at start, on each webhook signal, on the poll timer and,
// after a failure, after a growing wait; it returns when ctx is cancelled
// (nil) or when a sync meets an error no retry can mend.
func (d *daemon) loop(ctx context.Context) error {
	next := time.NewTimer(0) // the first sync, at start
	defer next.Stop()
	failures, gone, trigger := 0, 0, "start"
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.trig.C():
			trigger = "webhook"
		case <-next.C:
		}
		result, err := d.syncOnce(ctx, trigger)
		trigger = "poll"
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, replica.ErrWrongSubscription), errors.Is(err, replica.ErrForeignCursor):
			// Nothing a later sync can change: stop and say why.
			return err
		case errors.Is(err, replica.ErrSubscriptionGone):
			// A deleted subscription never comes back; one 404 (a proxy's,
			// a deploy's) could, so the retry must meet it again.
			if gone++; gone >= subscriptionGoneSyncs {
				return err
			}
		default:
			gone = 0
		}
		wait := d.poll
		if result == resultOK {
			failures = 0
		} else {
			failures++
			retry := min(d.retryMin<<min(failures-1, 16), d.retryMax)
			if wait == 0 || retry < wait {
				wait = retry
			}
			d.log.Info().Dur(logKeyRetryWait, wait).Msg("sync again after the failure")
		}
		if due, on := d.verifyDue(); on && (wait == 0 || due < wait) {
			wait = max(due, time.Millisecond)
		}
		next.Stop()
		if wait > 0 {
			next.Reset(wait)
		}
	}
}

// syncOutcome is what one sync did.
type syncOutcome struct {
	res    replica.SyncResult
	status *replica.Status
	behind int
	err    error
}

// syncOnce opens the file, syncs, reads the status and counts the events
// still waiting, closes the file, and records the outcome.
//
// Cancelling ctx (the signal) closes replica.Options.Stop: the transaction
// under way, a migration in Open included, commits and nothing new starts.
// The sync's own context is cancelled, rolling back what is open, only
// after the grace period, or at once while Open waits for another process
// to let go of the file.
func (d *daemon) syncOnce(ctx context.Context, trigger string) (string, error) {
	if ctx.Err() != nil {
		return resultStopped, nil
	}
	d.setSyncing(true)
	start := d.now()
	stop := make(chan struct{})
	syncCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var waiting atomic.Bool // Open waits for the file's lock
	release := context.AfterFunc(ctx, func() {
		close(stop)
		if waiting.Load() {
			cancel()
			return
		}
		d.log.Info().Dur("timeout_ms", d.grace).Msg("stopping: letting the sync under way reach its next commit")
		time.AfterFunc(d.grace, cancel)
	})
	defer release()
	opts := d.opts
	opts.Stop = stop
	opts.OnLocked = func(msg string) { // once per Open
		waiting.Store(true)
		if ctx.Err() != nil {
			cancel()
		}
		d.log.Warn().Str(logKeyDB, backends.Name(d.path)).Msg("waiting for the file: " + msg)
	}
	out := d.runSync(syncCtx, opts, &waiting)
	result := d.record(out, d.now().Sub(start))
	d.logSync(trigger, result, out, d.now().Sub(start))
	if out.behind > 0 && result == resultOK {
		d.trig.Signal() // events came during the sync: read them now
	}
	return result, out.err
}

// runSync is one sync with the file open only for its duration.
func (d *daemon) runSync(ctx context.Context, opts replica.Options, waiting *atomic.Bool) (out syncOutcome) {
	out.behind = -1
	r, err := replica.Open(ctx, d.path, opts)
	waiting.Store(false)
	if err != nil {
		out.err = err
		return out
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && out.err == nil {
			out.err = fmt.Errorf("close %s: %w", backends.Name(d.path), cerr)
		}
	}()
	if d.inbox != nil {
		d.inbox.record(ctx, r)
	}
	out.res, out.err = r.Sync(ctx)
	select {
	case <-opts.Stop: // shutting down: no more calls
		return out
	default:
	}
	st, err := r.Status(ctx)
	if err != nil {
		d.log.Warn().Err(err).Msg("read the file's status")
	}
	out.status = st
	if out.err == nil || errors.Is(out.err, replica.ErrPartial) {
		d.maybeVerify(ctx, r)
		if out.behind, err = r.Behind(ctx, behindLimit); err != nil {
			d.log.Warn().Err(err).Msg("count the events after the cursor")
			out.behind = -1
		}
	}
	return out
}

// classify names a sync's result.
func classify(err error) string {
	switch {
	case err == nil:
		return resultOK
	case errors.Is(err, replica.ErrPartial):
		return resultPartial
	case errors.Is(err, replica.ErrStopped), errors.Is(err, context.Canceled):
		return resultStopped
	}
	return resultFailed
}

// record updates the health and the metrics with a finished sync.
func (d *daemon) record(out syncOutcome, took time.Duration) string {
	result := classify(out.err)
	at := d.now().UTC()
	d.metrics.observeSync(result, took, out)
	d.mu.Lock()
	defer d.mu.Unlock()
	h := &d.health
	h.Syncing = false
	if result == resultStopped {
		return result
	}
	h.Syncs++
	h.LastResult, h.LastSyncAt, h.LastError, h.Failed = result, &at, "", out.res.Failed
	if out.err != nil {
		h.LastError = out.err.Error()
	}
	if result == resultOK {
		h.LastSuccessAt = &at
	}
	h.Behind = out.behind
	return result
}

func (d *daemon) logSync(trigger, result string, out syncOutcome, took time.Duration) {
	var e *zerolog.Event
	switch result {
	case resultOK:
		e = d.log.Info()
	case resultStopped:
		e = d.log.Info().AnErr("cause", out.err)
	default:
		e = d.log.Warn().Err(out.err)
	}
	if len(out.res.Failed) > 0 {
		e = e.Strs(logKeyFailed, out.res.Failed)
	}
	if p := out.res.Published; p != nil {
		e = e.Str(logKeyPublished, p.Path).Int64(logKeyPubBytes, p.Bytes).Dur(logKeyPubTook, p.Duration)
	}
	e.Str(logKeyTrigger, trigger).Str(logKeyResult, result).Dur(logKeyDuration, took).Int(logKeySeen, out.res.EventsSeen).
		Int(logKeyApplied, out.res.EventsApplied).Int(logKeyLoaded, out.res.SnapshotsLoaded).Int(logKeyMerged, out.res.ChangesMerged).
		Int(logKeyBehind, out.behind).Msg("sync")
}

func (d *daemon) setSyncing(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.health.Syncing = on
}

// healthz answers 200 while the last sync succeeded and no event waited
// after the cursor at its end, and 503 with the reason otherwise.
func (d *daemon) healthz(w http.ResponseWriter, _ *http.Request) {
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
	switch {
	case h.LastResult == "":
		body.Reason = "no sync has finished yet"
	case h.LastResult == resultPartial:
		body.Reason = fmt.Sprintf("the last sync left %d dataset(s) failed (%s); their last good versions stay", len(h.Failed), strings.Join(h.Failed, ", "))
	case h.LastResult != resultOK:
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
