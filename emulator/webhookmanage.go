package emulator

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// CreateWebhook adds a webhook, for a subscription or (no SubscriptionID)
// for the member, and returns it with its signing secret, which nothing
// shows again. It returns ErrInvalid (wrapped, with the reason) for a bad
// URL, event type or header, ErrWebhookLimit when MaxWebhooks exist,
// ErrNotFound for an unknown subscription and ErrClosed after Close. From
// then on each event appended to the subscription's log (for a member
// webhook: each dataset.changed of a watched dataset and each request
// event) is POSTed to the webhook, asynchronously.
//
// Deliveries are signed at WebhookNow (webhook-timestamp): under the
// default manual clock the real time plus Advance's offset, so a receiver
// that checks timestamps against the wall clock, as Standard Webhooks
// verifiers do, takes them with no clock option; with Options.Now set, the
// emulator clock.
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
	member := spec.Member
	if member == "" {
		member = DefaultMember
	}
	if e.membersGone[member] {
		return nil, fmt.Errorf("member %s left the workspace: %w", member, ErrNotFound)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.countOfLocked(member) >= MaxWebhooks {
		return nil, fmt.Errorf("a member may have %d webhooks: %w", MaxWebhooks, ErrWebhookLimit)
	}
	w.nextHook++
	id := fmt.Sprintf("wh_%06d", w.nextHook)
	h := &hook{Webhook: Webhook{ID: id, URL: spec.URL, Description: spec.Description, SubscriptionID: spec.SubscriptionID,
		Member: member, CreatedAt: e.nowLocked()}, secret: webhookSecret(id)}
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

// countOfLocked is how many webhooks a member has ("A member may have 20
// webhooks").
func (w *webhookState) countOfLocked(member string) int {
	n := 0
	for _, h := range w.hooks {
		if h.Member == member {
			n++
		}
	}
	return n
}
