package emulator

// One goroutine, started with the first webhook and stopped by Close, sends
// the queued messages one at a time, oldest due first. A message that fails
// (no answer, or any status but 2xx, 410 and 413) is tried again after each
// wait of DeliveryRetryIntervals in turn, on the emulator clock: with the
// default manual clock a retry goes out when Advance moves the clock past
// it, or at once after RetryDeliveriesNow.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

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
			dataset: ev.datasetID, seq: int64(w.nextMsg), body: body, due: ev.ts})
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
// (zero: nothing queued). A message waits, whatever its due time, while
// an earlier one for the same dataset and webhook is still queued (for
// its retry): feed-events.txt, "events for one dataset arrive in order".
func (w *webhookState) next(now time.Time) (*message, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	best := -1
	for i, m := range w.queue {
		if w.behindLocked(m) {
			continue
		}
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

// behindLocked reports whether an earlier message of m's dataset for m's
// webhook is still queued. Pings name no dataset and wait for nothing.
func (w *webhookState) behindLocked(m *message) bool {
	if m.dataset == "" {
		return false
	}
	return slices.ContainsFunc(w.queue, func(o *message) bool {
		return o != m && o.hook == m.hook && o.dataset == m.dataset && o.seq < m.seq
	})
}

// attempt makes one attempt to send m at emulator time now and records it
// (Delivery.At, and the retry is due from now); the POST itself is signed
// at WebhookNow, which a receiver checks against its wall clock.
func (e *Emulator) attempt(w *webhookState, m *message, now time.Time) {
	m.attempts++
	d := Delivery{WebhookID: m.hook.ID, MessageID: m.id, EventID: m.eventID, EventType: m.typ, Attempt: m.attempts,
		At: now, Body: m.body}
	retry, disable := false, ""
	var cause error // the transport's error, for the log
	switch {
	case w.takeDrop():
		d.Dropped, d.Err = true, "dropped (DropDeliveries)"
	case m.hook.SubscriptionID != "" && !e.hasSubscription(m.hook.SubscriptionID):
		d.Err, disable = "subscription deleted", reasonSubscriptionDeleted
	default:
		var err error
		d.Status, d.Header, err = w.post(m, e.WebhookNow())
		if err != nil {
			d.Err = err.Error()
			cause = err
		}
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
	w.mu.Unlock()
	// Logged before the sender is idle again, so that a WaitDeliveries
	// that returns finds the attempt's line written; not under w.mu.
	e.logDelivery(d, cause, disable)
	w.mu.Lock()
	w.busy = false
	w.notifyLocked()
	w.mu.Unlock()
}

// logDelivery logs one attempt: debug when the receiver took it, warn
// when not, with the retry to come or why the webhook was turned off.
// Neither the webhook's URL (which may carry a token), its secret nor its
// custom header is logged; a transport error is logged without the URL it
// quotes.
func (e *Emulator) logDelivery(d Delivery, cause error, disabled string) {
	attrs := []any{"webhook", d.WebhookID, "message", d.MessageID, "event_type", d.EventType, "attempt", d.Attempt}
	if d.OK() {
		e.log.Debug("emulator: webhook delivered", append(attrs, "status", d.Status)...)
		return
	}
	reason := d.Err
	var ue *url.Error
	if errors.As(cause, &ue) {
		reason = ue.Err.Error()
	}
	switch {
	case d.Status != 0:
		attrs = append(attrs, "status", d.Status)
	case reason != "":
		attrs = append(attrs, "error", reason)
	}
	if !d.NextAttempt.IsZero() {
		attrs = append(attrs, "next_attempt", d.NextAttempt)
	}
	if disabled != "" {
		attrs = append(attrs, "disabled", disabled)
	}
	e.log.Warn("emulator: webhook delivery failed", attrs...)
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
