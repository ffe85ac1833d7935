package emulator

// The delivery side of webhooks (docs/wire.md sections 6 and 9;
// feed-events.txt, "Webhooks for a subscription"; watch-and-webhooks.txt):
// a subscription's webhook receives its feed events, each POSTed as the
// event object the log serves; a member webhook (no subscription) receives
// dataset.changed and the request events (member.go). Both are signed with
// Standard Webhooks. The API routes are in apiMux; the hooks that queue a
// delivery for each new event are in appendEvent and emitMemberLocked.
//
// One goroutine, started with the first webhook and stopped by Close, sends
// the queued messages one at a time, oldest due first. A message that fails
// (no answer, or any status but 2xx, 410 and 413) is tried again after each
// wait of DeliveryRetryIntervals in turn, on the emulator clock: with the
// default manual clock a retry goes out when Advance moves the clock past
// it, or at once after RetryDeliveriesNow.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits and settings of webhook delivery.
const (
	// MaxWebhooks is how many webhooks the workspace's member may have,
	// subscription and member webhooks together (docs: "A member may have
	// 20 webhooks").
	MaxWebhooks = 20
	// DeliveryTimeout is how long (real time) one POST may take before it
	// counts as failed.
	DeliveryTimeout = 15 * time.Second
	// webhookUserAgent is sent with every POST.
	webhookUserAgent = "Ploti-Webhooks/emulator"
	// secretPrefix starts a signing secret.
	secretPrefix = "whsec_"
	// reasonSubscriptionDeleted is the disabledReason of a webhook whose
	// subscription was deleted.
	reasonSubscriptionDeleted = "the subscription was deleted"
)

// DeliveryRetryIntervals returns the waits before each of the six retries
// of a failed delivery, measured on the emulator clock from the attempt
// before (docs: "retried six times, at growing intervals, over about a day
// and a half"): 5s, 5m, 30m, 2h, 10h and 24h, 36h35m5s in all.
func DeliveryRetryIntervals() []time.Duration {
	return []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 10 * time.Hour, 24 * time.Hour}
}

// feedEventTypes are the event types a subscription's webhook may ask for.
var feedEventTypes = []string{
	"feed.dataset.added", "feed.dataset.updated", "feed.dataset.resync_required", "feed.dataset.schema_changed",
	"feed.dataset.removed", "feed.dataset.stale", "feed.dataset.delayed",
}

// reservedHeaders may not be a webhook's custom header: the emulator sets them.
var reservedHeaders = []string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", "Content-Type", "Content-Length",
	"Host", "User-Agent", "Transfer-Encoding", "Connection"}

// WebhookSpec describes a webhook for CreateWebhook and POST /v1/webhooks.
type WebhookSpec struct {
	// URL receives the POSTs: an https address (watch-and-webhooks.txt: "A
	// webhook is an https address you control"), or plain http to a
	// loopback host (localhost, 127.0.0.0/8, ::1), for receivers in tests.
	URL string `json:"url"`
	// Description is free text.
	Description string `json:"description"`
	// SubscriptionID is the subscription whose feed events the webhook
	// receives. Empty makes a member webhook, which receives
	// dataset.changed for every dataset the member watches and the request
	// events.
	SubscriptionID string `json:"subscriptionId"`
	// Events lists the event types to send, among the ones the webhook's
	// kind receives; empty means all of them.
	Events []string `json:"events"`
	// Header, if set, is sent with every POST, such as a bearer key the
	// receiver requires. Its value is never shown again.
	Header *WebhookHeader `json:"header"`
}

// WebhookHeader is a custom header sent with every POST.
type WebhookHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Webhook is a webhook as CreateWebhook and Webhooks show it.
type Webhook struct {
	ID             string
	URL            string
	Description    string
	SubscriptionID string
	// Events is the type filter; nil means every type the webhook's kind
	// receives.
	Events []string
	// HeaderName names the custom header, if any; its value is not shown.
	HeaderName string
	// Disabled is set when the receiver answered 410 or the subscription
	// was deleted; DisabledReason says which. Nothing more is sent to it.
	Disabled       bool
	DisabledReason string
	CreatedAt      time.Time
	// Secret is the signing secret, "whsec_" and base64. Only
	// CreateWebhook's answer carries it.
	Secret string
}

// Delivery is one attempt to deliver a message (a feed event or a ping) to a
// webhook, as Deliveries reports it.
type Delivery struct {
	WebhookID string
	// MessageID is the webhook-id header: the same on each retry of a
	// message, and not the event id.
	MessageID string
	EventID   string
	EventType string
	// Attempt is 1 for the first try and up to 7 for the sixth retry.
	Attempt int
	// At is the emulator time of the attempt, sent as webhook-timestamp.
	At time.Time
	// Status is the receiver's answer; 0 when there was none.
	Status int
	// Err says why there was no answer, or why the message was not sent.
	Err string
	// Dropped is set for an attempt DropDeliveries ate: never sent, never
	// retried, as if it were lost on the way.
	Dropped bool
	// NextAttempt is when the message will be tried again; zero: never.
	NextAttempt time.Time
	// Body is the signed body; Header the request's headers, signature and
	// custom header included.
	Body   []byte
	Header http.Header
}

// OK reports whether the receiver took the message (a 2xx answer).
func (d Delivery) OK() bool { return d.Status >= 200 && d.Status < 300 }

// webhookState is the emulator's webhooks and their delivery queue. Lock
// order: Emulator.mu before webhookState.mu; the sender never holds mu while
// it takes Emulator.mu or sends.
type webhookState struct {
	mu       sync.Mutex
	hooks    map[string]*hook
	order    []string
	nextHook int
	nextMsg  int
	nextPing int
	queue    []*message
	log      []Delivery
	drop     int  // attempts left to drop; negative: all
	busy     bool // an attempt is in flight
	changed  chan struct{}

	kick   chan struct{} // wakes the sender; never closed
	cancel context.CancelFunc
	ctx    context.Context
	done   chan struct{}
	client *http.Client
}

// hook is one webhook with its secrets.
type hook struct {
	Webhook
	secret string
	header *WebhookHeader
}

// message is one event or ping waiting to be sent to one webhook.
type message struct {
	hook     *hook
	id       string
	eventID  string
	typ      string
	body     []byte
	attempts int
	due      time.Time
	ping     bool // pings are sent once, never retried
}

// webhooksLocked returns the webhook state, starting the sender on first
// use. It fails once the emulator is closed.
func (e *Emulator) webhooksLocked() (*webhookState, error) {
	if e.closed {
		return nil, ErrClosed
	}
	if e.webhooks != nil {
		return e.webhooks, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	w := &webhookState{
		hooks: map[string]*hook{}, changed: make(chan struct{}), kick: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		client: &http.Client{Transport: tr, Timeout: DeliveryTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
	e.webhooks = w
	go e.sendLoop(w)
	return w, nil
}

// stopDeliveries stops the sender, cancelling a POST in flight, and waits
// for it. Close calls it.
func (e *Emulator) stopDeliveries() {
	e.mu.Lock()
	w := e.webhooks
	e.mu.Unlock()
	if w == nil {
		return
	}
	w.cancel()
	<-w.done
	w.client.CloseIdleConnections()
}

// kickDeliveriesLocked wakes the sender after the clock moved.
func (e *Emulator) kickDeliveriesLocked() {
	if e.webhooks != nil {
		e.webhooks.wake()
	}
}

func (w *webhookState) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// notifyLocked tells WaitDeliveries that something changed.
func (w *webhookState) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// queueDeliveriesLocked queues a new event for every enabled webhook of its
// subscription whose filter lets its type through. appendEvent calls it.
func (e *Emulator) queueDeliveriesLocked(s *subscription, ev *event) {
	w := e.webhooks
	if w == nil {
		return
	}
	var body []byte
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.order {
		h := w.hooks[id]
		if h.Disabled || h.SubscriptionID != s.id || (len(h.Events) > 0 && !slices.Contains(h.Events, ev.typ)) {
			continue
		}
		if body == nil {
			var err error
			if body, err = json.Marshal(ev.render(s.id, e.apiURL)); err != nil {
				return // a map of strings and numbers always encodes
			}
		}
		w.nextMsg++
		w.queue = append(w.queue, &message{hook: h, id: fmt.Sprintf("msg_%012d", w.nextMsg), eventID: ev.id, typ: ev.typ,
			body: body, due: ev.ts})
	}
	w.notifyLocked()
	w.wake()
}

// sendLoop sends due messages until the state's context is cancelled. It
// sleeps until the earliest message is due (real time, which is right for a
// clock that follows the wall clock) or until woken by a new message or by
// Advance.
func (e *Emulator) sendLoop(w *webhookState) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := e.Now()
		m, wait := w.next(now)
		if m != nil {
			e.attempt(w, m, now)
			continue
		}
		var due <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			due = timer.C
		}
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-due:
		}
	}
}

// next takes the message due earliest, if one is due at now, and marks the
// sender busy; otherwise it returns how long until the earliest is due
// (zero: nothing queued).
func (w *webhookState) next(now time.Time) (*message, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	best := -1
	for i, m := range w.queue {
		if best < 0 || m.due.Before(w.queue[best].due) {
			best = i
		}
	}
	if best < 0 {
		return nil, 0
	}
	m := w.queue[best]
	if m.due.After(now) {
		return nil, m.due.Sub(now)
	}
	w.queue = slices.Delete(w.queue, best, best+1)
	w.busy = true
	w.notifyLocked()
	return m, 0
}

// attempt makes one attempt to send m at emulator time now and records it.
func (e *Emulator) attempt(w *webhookState, m *message, now time.Time) {
	m.attempts++
	d := Delivery{WebhookID: m.hook.ID, MessageID: m.id, EventID: m.eventID, EventType: m.typ, Attempt: m.attempts,
		At: now, Body: m.body}
	retry, disable := false, ""
	switch {
	case w.takeDrop():
		d.Dropped, d.Err = true, "dropped (DropDeliveries)"
	case m.hook.SubscriptionID != "" && !e.hasSubscription(m.hook.SubscriptionID):
		d.Err, disable = "subscription deleted", reasonSubscriptionDeleted
	default:
		d.Status, d.Header, d.Err = w.post(m, now)
		switch {
		case d.OK():
		case d.Status == http.StatusGone:
			disable = "the receiver answered 410 Gone"
		case d.Status == http.StatusRequestEntityTooLarge: // not retried
		default:
			retry = !m.ping
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if disable != "" {
		w.disableLocked(m.hook, disable)
	}
	intervals := DeliveryRetryIntervals()
	if retry && m.attempts <= len(intervals) && !m.hook.Disabled && w.hooks[m.hook.ID] == m.hook {
		m.due = now.Add(intervals[m.attempts-1])
		d.NextAttempt = m.due
		w.queue = append(w.queue, m)
	}
	w.log = append(w.log, d)
	w.busy = false
	w.notifyLocked()
}

// takeDrop uses one of DropDeliveries' drops, if any are left.
func (w *webhookState) takeDrop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.drop < 0:
		return true
	case w.drop > 0:
		w.drop--
		return true
	}
	return false
}

func (e *Emulator) hasSubscription(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.subs[id] != nil
}

// stopSubscriptionWebhooksLocked turns off the webhooks of subscription
// sub, just deleted, and drops their queued messages: "Deleting a
// subscription stops its events and its webhooks". They stay listed, with
// enabled false and the reason, as one a 410 turned off does, until the
// member deletes them (docs/decisions.md 61). e.mu is held.
func (e *Emulator) stopSubscriptionWebhooksLocked(sub string) {
	w := e.webhooks
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.order {
		if h := w.hooks[id]; h.SubscriptionID == sub && !h.Disabled {
			w.disableLocked(h, reasonSubscriptionDeleted)
		}
	}
	w.notifyLocked()
}

// disableLocked turns a webhook off and forgets its queued messages.
func (w *webhookState) disableLocked(h *hook, reason string) {
	h.Disabled, h.DisabledReason = true, reason
	w.queue = slices.DeleteFunc(w.queue, func(m *message) bool { return m.hook == h })
}

// post sends m signed at now, returning the answer's status (0 for none),
// the headers sent and the transport error.
func (w *webhookState) post(m *message, now time.Time) (int, http.Header, string) {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, m.hook.URL, bytes.NewReader(m.body))
	if err != nil {
		return 0, nil, err.Error()
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", webhookUserAgent)
	req.Header.Set("webhook-id", m.id)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", signWebhook(m.hook.secret, m.id, ts, m.body))
	if h := m.hook.header; h != nil {
		req.Header.Set(h.Name, h.Value)
	}
	sent := req.Header.Clone()
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, sent, err.Error()
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, sent, ""
}

// signWebhook is Standard Webhooks' "v1,<base64>": HMAC-SHA256 of
// "<id>.<timestamp>.<body>" keyed with the base64 bytes after "whsec_".
func signWebhook(secret, id, ts string, body []byte) string {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// webhookSecret is a webhook's signing secret: 24 bytes derived from its id,
// so that runs are repeatable.
func webhookSecret(id string) string {
	sum := sha256.Sum256([]byte("ploti-emulator webhook secret " + id))
	return secretPrefix + base64.StdEncoding.EncodeToString(sum[:24])
}

// CreateWebhook adds a webhook, for a subscription or (no SubscriptionID)
// for the member, and returns it with its signing secret, which nothing
// shows again. It returns ErrInvalid (wrapped, with the reason) for a bad
// URL, event type or header, ErrWebhookLimit when MaxWebhooks exist,
// ErrNotFound for an unknown subscription and ErrClosed after Close. From
// then on each event appended to the subscription's log (for a member
// webhook: each dataset.changed of a watched dataset and each request
// event) is POSTed to the webhook, asynchronously.
//
// Deliveries are signed at the emulator clock (webhook-timestamp). A
// receiver that checks timestamps against the wall clock, as Standard
// Webhooks verifiers do, needs an emulator whose clock follows it:
// Options.Now = time.Now.
func (e *Emulator) CreateWebhook(spec WebhookSpec) (Webhook, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, err := e.createWebhookLocked(spec)
	if err != nil {
		return Webhook{}, err
	}
	out := h.public()
	out.Secret = h.secret
	return out, nil
}

func (e *Emulator) createWebhookLocked(spec WebhookSpec) (*hook, error) {
	if err := checkWebhookSpec(spec); err != nil {
		return nil, err
	}
	if spec.SubscriptionID != "" && e.subs[spec.SubscriptionID] == nil {
		return nil, fmt.Errorf("subscription %q: %w", spec.SubscriptionID, ErrNotFound)
	}
	w, err := e.webhooksLocked()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.hooks) >= MaxWebhooks {
		return nil, fmt.Errorf("a member may have %d webhooks: %w", MaxWebhooks, ErrWebhookLimit)
	}
	w.nextHook++
	id := fmt.Sprintf("wh_%06d", w.nextHook)
	h := &hook{Webhook: Webhook{ID: id, URL: spec.URL, Description: spec.Description, SubscriptionID: spec.SubscriptionID,
		CreatedAt: e.nowLocked()}, secret: webhookSecret(id)}
	if len(spec.Events) > 0 {
		h.Events = slices.Clone(spec.Events)
	}
	if spec.Header != nil {
		hd := *spec.Header
		h.header, h.HeaderName = &hd, http.CanonicalHeaderKey(hd.Name)
	}
	w.hooks[id] = h
	w.order = append(w.order, id)
	return h, nil
}

// checkWebhookSpec checks a webhook's URL, event types and header.
func checkWebhookSpec(spec WebhookSpec) error {
	u, err := url.Parse(spec.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("url must be an absolute https address: %w", ErrInvalid)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return fmt.Errorf("url %q: a webhook is an https address (plain http only to a loopback host: localhost, 127.0.0.0/8 or ::1): %w", spec.URL, ErrInvalid)
	}
	kind, types := "a feed event type", feedEventTypes
	if spec.SubscriptionID == "" {
		kind, types = "an event type a member webhook receives", memberEventTypes
	}
	for _, t := range spec.Events {
		if !slices.Contains(types, t) {
			return fmt.Errorf("events: %q is not %s (%s): %w", t, kind, strings.Join(types, ", "), ErrInvalid)
		}
	}
	if hd := spec.Header; hd != nil {
		name := http.CanonicalHeaderKey(hd.Name)
		if !validHeaderName(hd.Name) || slices.Contains(reservedHeaders, name) {
			return fmt.Errorf("header.name %q is not a header the receiver may require: %w", hd.Name, ErrInvalid)
		}
		if hd.Value == "" || strings.ContainsAny(hd.Value, "\r\n\x00") {
			return fmt.Errorf("header.value must be one non-empty line: %w", ErrInvalid)
		}
	}
	return nil
}

// loopbackHost reports whether host (a URL's, without its port) is
// localhost, 127.0.0.0/8 or ::1. The client's `webhooks create` has the
// same check: the emulator stands for Ploti's server and imports none of
// the client's packages.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validHeaderName reports whether s is an HTTP token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c >= 0x7f || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

// public is the webhook without its secrets.
func (h *hook) public() Webhook {
	out := h.Webhook
	out.Events = slices.Clone(h.Events)
	out.Secret = ""
	return out
}

// Webhooks lists the webhooks in the order they were made, without their
// secrets.
func (e *Emulator) Webhooks() []Webhook {
	e.mu.Lock()
	w := e.webhooks
	e.mu.Unlock()
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Webhook, 0, len(w.order))
	for _, id := range w.order {
		out = append(out, w.hooks[id].public())
	}
	return out
}

// DeleteWebhook removes a webhook and its queued messages. It returns
// ErrNotFound for an unknown id.
func (e *Emulator) DeleteWebhook(id string) error {
	e.mu.Lock()
	w := e.webhooks
	e.mu.Unlock()
	if w == nil {
		return fmt.Errorf("webhook %q: %w", id, ErrNotFound)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.hooks[id]
	if h == nil {
		return fmt.Errorf("webhook %q: %w", id, ErrNotFound)
	}
	w.disableLocked(h, "deleted")
	delete(w.hooks, id)
	w.order = slices.DeleteFunc(w.order, func(x string) bool { return x == id })
	w.notifyLocked()
	return nil
}

// TestWebhook queues one signed ping, {"id", "type": "ping", "timestamp",
// "data": {}}, for the webhook, due now; a ping is not retried. It returns
// the message id (the webhook-id header), ErrNotFound, or
// ErrWebhookDisabled for a webhook that is turned off.
func (e *Emulator) TestWebhook(id string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.webhooks
	if w == nil {
		return "", fmt.Errorf("webhook %q: %w", id, ErrNotFound)
	}
	now := e.nowLocked()
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.hooks[id]
	if h == nil {
		return "", fmt.Errorf("webhook %q: %w", id, ErrNotFound)
	}
	if h.Disabled {
		return "", fmt.Errorf("webhook %s is off (%s): nothing is sent to it: %w", id, h.DisabledReason, ErrWebhookDisabled)
	}
	w.nextPing++
	w.nextMsg++
	evID := fmt.Sprintf("evt_ping_%06d", w.nextPing)
	body, err := json.Marshal(map[string]any{"id": evID, "type": "ping", "timestamp": now.Format(time.RFC3339), "data": map[string]any{}})
	if err != nil {
		return "", err
	}
	m := &message{hook: h, id: fmt.Sprintf("msg_%012d", w.nextMsg), eventID: evID, typ: "ping", body: body, due: now, ping: true}
	w.queue = append(w.queue, m)
	w.notifyLocked()
	w.wake()
	return m.id, nil
}

// DropDeliveries makes the next n delivery attempts vanish: not sent, not
// retried, recorded with Dropped set, as webhooks lost on the way. A
// negative n drops every attempt until DropDeliveries(0).
func (e *Emulator) DropDeliveries(n int) {
	e.mu.Lock()
	w, err := e.webhooksLocked()
	e.mu.Unlock()
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop = n
}

// RetryDeliveriesNow makes every queued retry due now, for a test that
// wants the retries without moving the clock.
func (e *Emulator) RetryDeliveriesNow() {
	e.mu.Lock()
	w := e.webhooks
	now := e.nowLocked()
	e.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	for _, m := range w.queue {
		if m.due.After(now) {
			m.due = now
		}
	}
	w.notifyLocked()
	w.mu.Unlock()
	w.wake()
}

// Deliveries returns every delivery attempt so far, in the order made.
func (e *Emulator) Deliveries() []Delivery {
	e.mu.Lock()
	w := e.webhooks
	e.mu.Unlock()
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Delivery, len(w.log))
	for i, d := range w.log {
		d.Header = d.Header.Clone()
		out[i] = d
	}
	return out
}

// WaitDeliveries waits until no attempt is in flight and no queued message
// is due on the emulator clock, that is until every delivery that can
// happen now has happened. Retries due later stay queued.
func (e *Emulator) WaitDeliveries(ctx context.Context) error {
	for {
		e.mu.Lock()
		w := e.webhooks
		now := e.nowLocked()
		e.mu.Unlock()
		if w == nil {
			return nil
		}
		w.mu.Lock()
		idle := !w.busy && !slices.ContainsFunc(w.queue, func(m *message) bool { return !m.due.After(now) })
		changed := w.changed
		w.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for deliveries: %w", ctx.Err())
		case <-changed:
		case <-time.After(50 * time.Millisecond): // a clock that follows the wall clock makes retries due
		}
	}
}

// webhookJSON is a webhook as the API shows it.
func webhookJSON(h Webhook) map[string]any {
	var events any
	if h.Events != nil {
		events = h.Events
	}
	var header any
	if h.HeaderName != "" {
		header = map[string]any{"name": h.HeaderName}
	}
	out := map[string]any{
		"id": h.ID, "url": h.URL, "description": h.Description, "subscriptionId": nullIfEmpty(h.SubscriptionID),
		"events": events, "header": header, "enabled": !h.Disabled, "disabledReason": nullIfEmpty(h.DisabledReason),
		"createdAt": h.CreatedAt.Format(time.RFC3339),
	}
	if h.Secret != "" {
		out["secret"] = h.Secret
	}
	return out
}

// asAPIError maps the Go API's errors to API answers with the sentinel's
// status and code; the message drops "invalid input" and "not found", which
// the code says.
func asAPIError(err error) error {
	for _, m := range []struct {
		err    error
		status int
		code   string
	}{
		{ErrInvalid, http.StatusBadRequest, "invalid_input"},
		{ErrNotFound, http.StatusNotFound, "not_found"},
		{ErrOutsideCoverage, http.StatusConflict, "outside_coverage"},
		{ErrNotDeliverable, http.StatusConflict, "not_deliverable"},
		{ErrWatchLimit, http.StatusConflict, "watch_limit"},
		{ErrWebhookLimit, http.StatusConflict, "webhook_limit"},
		{ErrWebhookDisabled, http.StatusConflict, "webhook_disabled"},
	} {
		if errors.Is(err, m.err) {
			msg := err.Error()
			if m.status != http.StatusConflict {
				msg = strings.TrimSuffix(msg, ": "+m.err.Error())
			}
			return &apiError{m.status, m.code, msg}
		}
	}
	return err
}

func (e *Emulator) postWebhook(r *http.Request) (int, any, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return 0, nil, errInvalid("the body must be a JSON object")
	}
	// Strict, as a server may be: a field the create does not take (a
	// webhook's id or secret) is refused, not ignored.
	var spec WebhookSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return 0, nil, errInvalid("the body must be a JSON object of url, description, subscriptionId, events and header: " + err.Error())
	}
	h, err := e.CreateWebhook(spec)
	if err != nil {
		return 0, nil, asAPIError(err)
	}
	return http.StatusCreated, webhookJSON(h), nil
}

func (e *Emulator) listWebhooks(r *http.Request) (int, any, error) {
	sub := r.URL.Query().Get("subscriptionId")
	out := []map[string]any{}
	for _, h := range e.Webhooks() {
		if sub == "" || h.SubscriptionID == sub {
			out = append(out, webhookJSON(h))
		}
	}
	return http.StatusOK, map[string]any{"webhooks": out}, nil
}

func (e *Emulator) deleteWebhook(r *http.Request) (int, any, error) {
	if err := e.DeleteWebhook(r.PathValue("id")); err != nil {
		return 0, nil, asAPIError(err)
	}
	return http.StatusOK, map[string]any{"deleted": true}, nil
}

func (e *Emulator) testWebhook(r *http.Request) (int, any, error) {
	msgID, err := e.TestWebhook(r.PathValue("id"))
	if err != nil {
		return 0, nil, asAPIError(err)
	}
	return http.StatusAccepted, map[string]any{"sent": true, "messageId": msgID}, nil
}
