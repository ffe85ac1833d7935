package emulator_test

// These tests put the module's own webhook receiver (package webhook) in
// front of the emulator, as an embedder does: the emulator's webhook
// signing is checked against a real verifier rather than against itself.

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// realReceiver is an httptest server running webhook.NewHandler; the
// handler is set once the webhook's secret is known.
type realReceiver struct {
	srv     *httptest.Server
	handler atomic.Pointer[webhook.Handler]
	feed    atomic.Int64 // feed events the handler passed on
}

func newRealReceiver(t *testing.T) *realReceiver {
	t.Helper()
	rr := &realReceiver{}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := rr.handler.Load()
		if h == nil {
			http.Error(w, "no handler yet", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rr.srv.Close)
	return rr
}

// use makes the receiver verify with v.
func (rr *realReceiver) use(t *testing.T, v *webhook.Verifier) *webhook.Handler {
	t.Helper()
	h, err := webhook.NewHandler(webhook.HandlerOptions{Verifier: v,
		OnEvent: func(context.Context, webhook.Event) { rr.feed.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	rr.handler.Store(h)
	return h
}

// embedded starts an emulator with the zero Options (the manual clock) and
// one subscription, and points a webhook at rr.
func embedded(t *testing.T, rr *realReceiver) (*emulator.Emulator, emulator.Webhook) {
	t.Helper()
	em, err := emulator.New(emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	if err := em.AddDataset(emulator.DatasetSpec{ID: "ds_permits", PlaceID: "fl-orange", KeyColumns: []string{"permit"},
		Columns: []emulator.Column{{Name: "permit", Type: "string"}}}); err != nil {
		t.Fatal(err)
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	if err != nil {
		t.Fatal(err)
	}
	wh, err := em.CreateWebhook(emulator.WebhookSpec{URL: rr.srv.URL + "/hook", SubscriptionID: sub})
	if err != nil {
		t.Fatal(err)
	}
	return em, wh
}

func publishAndWait(t *testing.T, em *emulator.Emulator) {
	t.Helper()
	if _, err := em.Publish(t.Context(), "ds_permits", []emulator.Row{{"permit": "P-1"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := em.WaitDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
}

// An emulator made with the zero Options (manual clock at DefaultStart)
// delivers to a receiver whose verifier reads the wall clock with the
// default 5-minute tolerance: webhook-timestamp is signed with the real
// time plus Advance's offset, not with the manual clock.
func TestWebhook_realReceiverDefaultClock(t *testing.T) {
	rr := newRealReceiver(t)
	em, wh := embedded(t, rr)
	v, err := webhook.NewVerifier(wh.Secret)
	if err != nil {
		t.Fatal(err)
	}
	h := rr.use(t, v)
	publishAndWait(t, em)
	ds := em.Deliveries()
	if len(ds) == 0 {
		t.Fatal("no delivery")
	}
	for _, d := range ds {
		if !d.OK() {
			t.Fatalf("delivery %s answered %d %s; receiver stats %v", d.MessageID, d.Status, d.Err, h.Stats())
		}
		if !d.At.Equal(em.Now()) {
			t.Fatalf("Delivery.At %s, want the emulator clock %s", d.At, em.Now())
		}
	}
	if rr.feed.Load() == 0 || h.Stats()[webhook.ResultOK] == 0 {
		t.Fatalf("the handler took no feed event: stats %v", h.Stats())
	}
}

// Advance still moves the signed timestamp: a receiver that verifies
// against WebhookNow takes the delivery when it comes and refuses it as
// too old when it is replayed after the clock moved on.
func TestWebhook_advanceAgesDelivery(t *testing.T) {
	rr := newRealReceiver(t)
	em, wh := embedded(t, rr)
	v, err := webhook.NewVerifier(wh.Secret, webhook.WithNow(em.WebhookNow))
	if err != nil {
		t.Fatal(err)
	}
	h := rr.use(t, v)
	publishAndWait(t, em)
	ds := em.Deliveries()
	if len(ds) == 0 || !ds[0].OK() {
		t.Fatalf("deliveries %+v, want the first taken", ds)
	}
	em.Advance(webhook.DefaultTolerance + time.Minute)
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(ds[0].Body))
	req.Header = ds[0].Header.Clone()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusUnauthorized || h.Stats()[webhook.ResultTooOld] != 1 {
		t.Fatalf("replay after Advance answered %d %s, stats %v; want 401 too_old", w.Code, w.Body, h.Stats())
	}
}
