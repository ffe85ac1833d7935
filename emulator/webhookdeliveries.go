package emulator

import (
	"context"
	"fmt"
	"slices"
	"time"
)

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
// happen now has happened. Retries due later stay queued, and so do the
// later events of their dataset, which wait for them.
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
		idle := !w.busy && !slices.ContainsFunc(w.queue, func(m *message) bool { return !m.due.After(now) && !w.behindLocked(m) })
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
