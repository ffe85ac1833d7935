package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// Defaults for HandlerOptions.
const (
	// DefaultMaxBody is the largest body the Handler reads: 1 MiB.
	DefaultMaxBody = 1 << 20
	// DefaultSeenWindow is how long the Handler remembers an event id. It
	// is twice DefaultTolerance, the longest a captured delivery stays
	// valid: its timestamp may be up to the tolerance ahead of the clock.
	DefaultSeenWindow = 2 * DefaultTolerance
	// DefaultMaxSeen bounds how many event ids the Handler remembers.
	DefaultMaxSeen = 10000
)

// feedPrefix starts the type of every feed event.
const feedPrefix = "feed."

// typePing is the type of the test delivery POST /v1/webhooks/{id}/test
// sends.
const typePing = "ping"

// Log keys.
const (
	logKeyResult     = "result"
	logKeyEventID    = "event_id"
	logKeyEventType  = "event_type"
	logKeyDeliveryID = "delivery_id"
	logKeyRemote     = "remote_addr"
	logKeyPath       = "path"
)

// Event is a delivery's body: a feed event, a ping or another Ploti event.
type Event struct {
	// ID is the event's id, the key for at-least-once dedupe.
	ID string `json:"id"`
	// Type is "feed.dataset.updated", "ping", "dataset.changed", ….
	Type string `json:"type"`
	// Timestamp is when the event happened.
	Timestamp time.Time `json:"timestamp"`
	// SubscriptionID is set on feed events.
	SubscriptionID string `json:"subscriptionId,omitempty"`
	// Data is the event's type-specific data, undecoded.
	Data json.RawMessage `json:"data,omitempty"`
	// DeliveryID is the webhook-id header: the delivery, not the event.
	DeliveryID string `json:"-"`
	// Raw is the whole verified body.
	Raw json.RawMessage `json:"-"`
}

// IsFeed reports whether e is a feed event, whose type starts with "feed.".
func (e Event) IsFeed() bool { return strings.HasPrefix(e.Type, feedPrefix) }

// HandlerOptions configures a Handler. Only Verifier is required.
type HandlerOptions struct {
	// Verifier checks each delivery's signature and timestamp. Required.
	Verifier *Verifier

	// Trigger, if set, is signalled once for each new feed event.
	Trigger *Trigger

	// OnEvent, if set, is called for each new feed event before the
	// Trigger is signalled and before the response is written. It runs on
	// the request's goroutine and must return quickly; ctx is the request's
	// context, cancelled once the response is sent.
	OnEvent func(ctx context.Context, e Event)

	// OnOther, if set, is called for each new ping or non-feed event, as
	// OnEvent is. These signal the Trigger only as Wants says.
	OnOther func(ctx context.Context, e Event)

	// Wants, if set, makes a member webhook's dataset.changed event (a
	// watched dataset has a new version) signal the Trigger when it
	// reports true for the event's dataset id: a replica's Wants, which
	// is true for the datasets its syncs keep.
	Wants func(datasetID string) bool

	// Keep, if set, is called for each new non-feed event that is not a
	// ping, before OnOther and before the answer, to record it durably
	// (request events, which no log keeps). When it fails the answer is
	// 503 (ResultNotKept), which Ploti retries, and the event id is
	// forgotten, so that the retry is received again.
	Keep func(ctx context.Context, e Event) error

	// Observe, if set, is called once per request with its Result, for
	// metrics. It must return quickly. Stats gives the same counts.
	Observe func(r Result)

	// MaxBody is the largest body read; a larger one gets 413, which Ploti
	// does not retry. Default DefaultMaxBody.
	MaxBody int64

	// Seen is how long an event id is remembered, so that a repeat within
	// it gets 2xx and no second signal. Keep it at least twice the
	// Verifier's tolerance. Default DefaultSeenWindow.
	Seen time.Duration

	// MaxSeen bounds the remembered ids; the oldest is forgotten first.
	// Default DefaultMaxSeen.
	MaxSeen int

	// SeenFile, if set, is a file the remembered ids are kept in, so that
	// a delivery repeated after a restart (within Seen) is answered as a
	// duplicate too. An id is written once its delivery is answered 2xx
	// (after Keep). The file is created when missing and stays bounded by
	// MaxSeen and Seen.
	SeenFile string

	// Now is the clock for the Seen window. Default: the Verifier's clock.
	Now func() time.Time

	// Logger receives one line per request. Nil logs nothing.
	Logger *slog.Logger
}

// Handler is an http.Handler for Ploti webhook deliveries; see the package
// documentation for what it answers. Create one with NewHandler; it is safe
// for concurrent use.
type Handler struct {
	opts   HandlerOptions
	seen   *seenSet
	counts map[Result]*atomic.Uint64 // one per Result; never written after NewHandler
}

// NewHandler returns a Handler, filling defaults for zero options. It
// returns ErrNoVerifier if opts.Verifier is nil.
func NewHandler(opts HandlerOptions) (*Handler, error) {
	if opts.Verifier == nil {
		return nil, fmt.Errorf("new webhook handler: %w", ErrNoVerifier)
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Seen <= 0 {
		opts.Seen = DefaultSeenWindow
	}
	if opts.MaxSeen <= 0 {
		opts.MaxSeen = DefaultMaxSeen
	}
	if opts.Now == nil {
		opts.Now = opts.Verifier.now
	}
	opts.Logger = logs.OrDiscard(opts.Logger)
	h := &Handler{
		opts:   opts,
		seen:   newSeenSet(opts.Seen, opts.MaxSeen),
		counts: make(map[Result]*atomic.Uint64, len(allResults)),
	}
	for _, r := range allResults {
		h.counts[r] = new(atomic.Uint64)
	}
	if opts.SeenFile != "" {
		if err := h.seen.openSeen(opts.SeenFile, opts.Now()); err != nil {
			return nil, fmt.Errorf("new webhook handler: %w", err)
		}
	}
	return h, nil
}

// Stats returns the number of requests so far for every Result, including
// those with none.
func (h *Handler) Stats() map[Result]uint64 {
	out := make(map[Result]uint64, len(h.counts))
	for r, c := range h.counts {
		out[r] = c.Load()
	}
	return out
}

// ServeHTTP receives one delivery.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev, res, err := h.receive(w, r)
	if res == ResultOther && h.opts.Keep != nil {
		if kerr := h.opts.Keep(r.Context(), ev); kerr != nil {
			h.seen.forget(ev.ID)
			res, err = ResultNotKept, kerr
		}
	}
	switch res {
	case ResultOK, ResultPing, ResultOther:
		if perr := h.seen.persist(ev.ID, h.opts.Now()); perr != nil {
			h.opts.Logger.Warn("a repeat of this delivery after a restart will not be known as one", logs.Err(perr))
		}
	}
	h.counts[res].Add(1)
	if h.opts.Observe != nil {
		h.opts.Observe(res)
	}
	h.log(r, ev, res, err)
	switch res {
	case ResultOK:
		if h.opts.OnEvent != nil {
			h.opts.OnEvent(r.Context(), ev)
		}
		if h.opts.Trigger != nil {
			h.opts.Trigger.Signal()
		}
	case ResultPing, ResultOther:
		if h.opts.OnOther != nil {
			h.opts.OnOther(r.Context(), ev)
		}
		if h.opts.Trigger != nil && h.wanted(ev) {
			h.opts.Trigger.Signal()
		}
	}
	writeResult(w, res)
}

// wanted reports whether ev is a dataset.changed event of a dataset that
// Wants wants.
func (h *Handler) wanted(ev Event) bool {
	if h.opts.Wants == nil || ev.Type != ploti.EventDatasetChanged {
		return false
	}
	var data ploti.DatasetChanged
	if err := json.Unmarshal(ev.Data, &data); err != nil || data.DatasetID == "" {
		return false
	}
	return h.opts.Wants(data.DatasetID)
}

// receive reads, verifies, decodes and dedupes one delivery. The error, if
// any, explains a rejection for the log.
func (h *Handler) receive(w http.ResponseWriter, r *http.Request) (Event, Result, error) {
	if r.Method != http.MethodPost {
		return Event{}, ResultBadMethod, nil
	}
	body, res, err := h.readBody(w, r)
	if err != nil {
		return Event{}, res, err
	}
	if err := h.opts.Verifier.Verify(r.Header, body); err != nil {
		return Event{}, verifyResult(err), err
	}
	ev, err := decodeEvent(body)
	if err != nil {
		return Event{}, ResultBadJSON, err
	}
	ev.DeliveryID = r.Header.Get(HeaderID)
	if !h.seen.add(ev.ID, h.opts.Now()) {
		return ev, ResultDuplicate, nil
	}
	switch {
	case ev.Type == typePing:
		return ev, ResultPing, nil
	case !ev.IsFeed():
		return ev, ResultOther, nil
	}
	return ev, ResultOK, nil
}

// readBody reads the body through the MaxBody limit.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, Result, error) {
	limit := h.opts.MaxBody
	if r.ContentLength > limit {
		return nil, ResultTooLarge, fmt.Errorf("read body: %d bytes over the %d byte limit", r.ContentLength, limit)
	}
	if r.Body == nil {
		return nil, "", nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, ResultTooLarge, fmt.Errorf("read body: over the %d byte limit", limit)
	case err != nil:
		return nil, ResultBadBody, fmt.Errorf("read body: %w", err)
	}
	return body, "", nil
}

// decodeEvent decodes a verified body; it needs at least an id and a type.
func decodeEvent(body []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	if ev.ID == "" || ev.Type == "" {
		return Event{}, errors.New("decode event: no id or type")
	}
	ev.Raw = body
	return ev, nil
}

// log writes one line for the request: a rejection as a warning, a repeat at
// debug level, anything accepted at info level.
func (h *Handler) log(r *http.Request, ev Event, res Result, err error) {
	level, attrs := slog.LevelInfo, make([]slog.Attr, 0, 7)
	switch res {
	case ResultOK, ResultPing, ResultOther:
	case ResultDuplicate:
		level = slog.LevelDebug
	default:
		level = slog.LevelWarn
		attrs = append(attrs, logs.Err(err), slog.String(logKeyPath, r.URL.Path), slog.String(logKeyRemote, r.RemoteAddr))
	}
	if ev.ID != "" {
		attrs = append(attrs, slog.String(logKeyEventID, ev.ID), slog.String(logKeyEventType, ev.Type),
			slog.String(logKeyDeliveryID, ev.DeliveryID))
	}
	attrs = append(attrs, slog.String(logKeyResult, string(res)))
	h.opts.Logger.LogAttrs(r.Context(), level, "webhook delivery", attrs...)
}

// writeResult answers with res's status and {"result": res}.
func writeResult(w http.ResponseWriter, res Result) {
	if res == ResultBadMethod {
		w.Header().Set("Allow", http.MethodPost)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(res.Status())
	fmt.Fprintf(w, "{\"result\":%q}\n", string(res))
}
