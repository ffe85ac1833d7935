package fetch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// A POST /v1/webhooks that fails after it may have reached Ploti is not
// retried blindly: the secret is returned "once when the webhook is
// created" (feed-events.txt), so a second POST would leave a webhook whose
// secret nobody holds. The client lists the webhooks before, recognises
// its own after as a new one to the same URL and subscription, deletes it
// and creates again.
func TestClient_CreateWebhook_neverTwo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault emulator.Fault
	}{
		{"the answer cut off after Ploti created it", emulator.Fault{Match: "POST /v1/webhooks", Kind: emulator.FaultCutOff}},
		{"the answer's body spoiled after Ploti created it", emulator.Fault{Match: "POST /v1/webhooks", Kind: emulator.FaultTruncate}},
		{"a reset before Ploti read it", emulator.Fault{Match: "POST /v1/webhooks", Kind: emulator.FaultReset}},
		{"a 500, twice", emulator.Fault{Match: "POST /v1/webhooks", Kind: emulator.FaultStatus, Status: 500, Count: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			em, c := manageWorld(t)
			sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
			must(t, err)
			// A webhook to the same URL made before is not the lost one.
			old, err := c.CreateWebhook(ctx, ploti.Webhook{URL: "https://example.org/hook", Description: "replica", SubscriptionID: sub})
			must(t, err)
			em.Inject(tc.fault)
			hook, err := c.CreateWebhook(ctx, ploti.Webhook{URL: "https://example.org/hook", Description: "replica", SubscriptionID: sub})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			hooks := em.Webhooks()
			if len(hooks) != 2 || hooks[0].ID != old.ID || hooks[1].ID != hook.ID || !strings.HasPrefix(hook.Secret, "whsec_") {
				t.Fatalf("webhooks = %+v, answer %s; want the one made before (%s) and the one whose secret came back", hooks, hook.ID, old.ID)
			}
			// "webhooks create takes the address and an optional
			// description" (watch-and-webhooks.txt): the member's, as given.
			if hooks[1].Description != "replica" {
				t.Fatalf("description %q, want the caller's %q", hooks[1].Description, "replica")
			}
		})
	}
}

// A 429 or 503 says Ploti did nothing: it is retried as any call; a 400
// or 409 is returned at once.
func TestClient_CreateWebhook_refusals(t *testing.T) {
	ctx := context.Background()
	em, c := manageWorld(t)
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	em.FailNext("POST /v1/webhooks", http.StatusTooManyRequests, 1)
	if _, err := c.CreateWebhook(ctx, ploti.Webhook{URL: "https://example.org/a", SubscriptionID: sub}); err != nil {
		t.Fatalf("after a 429: %v", err)
	}
	if _, err := c.CreateWebhook(ctx, ploti.Webhook{URL: "https://example.org/x", SubscriptionID: "sub_nope"}); errors.Is(err, fetch.ErrAmbiguous) || err == nil {
		t.Fatalf("a refused webhook: %v", err)
	}
	// Every try ambiguous and the list unreadable: the error says what to
	// look for.
	em.Inject(emulator.Fault{Match: "POST /v1/webhooks", Kind: emulator.FaultCutOff})
	em.Inject(emulator.Fault{Match: "GET /v1/webhooks", Kind: emulator.FaultStatus, Status: 404, Code: "not_found", Skip: 1})
	_, err = c.CreateWebhook(ctx, ploti.Webhook{URL: "https://example.org/b", SubscriptionID: sub})
	if !errors.Is(err, fetch.ErrAmbiguous) || !strings.Contains(err.Error(), "may exist without its secret: delete it") {
		t.Fatalf("ambiguous and unlisted: %v", err)
	}
	if got := len(em.Webhooks()); got != 2 {
		t.Fatalf("webhooks = %d, want 2 (a and the one b's lost answer left)", got)
	}
	// The list before unreadable: one try, and a lost answer is not
	// recovered blindly.
	em.Inject(emulator.Fault{Match: "GET /v1/webhooks", Kind: emulator.FaultStatus, Status: 404, Code: "not_found"})
	em.Inject(emulator.Fault{Match: "POST /v1/webhooks", Kind: emulator.FaultCutOff})
	_, err = c.CreateWebhook(ctx, ploti.Webhook{URL: "https://example.org/c", SubscriptionID: sub})
	if !errors.Is(err, fetch.ErrAmbiguous) || !strings.Contains(err.Error(), "see webhooks list and delete it") {
		t.Fatalf("ambiguous with no list before: %v", err)
	}
	if got := len(em.Webhooks()); got != 3 {
		t.Fatalf("webhooks = %d, want 3 (c's one try made one)", got)
	}
}

// GET /v1/webhooks and GET /v1/feeds/subscriptions have no shape in
// docs/wire.md ("shapes: choice"): the client reads the {"webhooks": [...]}
// every other list answers, and a bare array as well; an object without
// the list is an error, not an empty list.
func TestClient_ListsOfOpenShape(t *testing.T) {
	ctx := context.Background()
	em, _ := manageWorld(t)
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	_, err = em.CreateWebhook(emulator.WebhookSpec{URL: "https://example.org/hook", SubscriptionID: sub})
	must(t, err)
	var shape atomic.Value // "bare" or "other"
	target, err := url.Parse(em.URL())
	must(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		p := resp.Request.URL.Path
		if resp.Request.Method != http.MethodGet || (p != "/v1/webhooks" && p != "/v1/feeds/subscriptions") {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return err
		}
		switch shape.Load() {
		case "bare":
			body = obj[path.Base(p)]
		case "other":
			body, _ = json.Marshal(map[string]json.RawMessage{"data": obj[path.Base(p)]})
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close)
	c, err := fetch.New(fetch.Options{BaseURL: proxy.URL, APIKey: em.APIKey()})
	must(t, err)
	for _, s := range []string{"object", "bare"} {
		shape.Store(s)
		hooks, err := c.Webhooks(ctx)
		if err != nil || len(hooks) != 1 || hooks[0].SubscriptionID != sub {
			t.Fatalf("%s: webhooks = %+v, %v", s, hooks, err)
		}
		subs, err := c.Subscriptions(ctx)
		if err != nil || len(subs) != 1 || subs[0].ID != sub {
			t.Fatalf("%s: subscriptions = %+v, %v", s, subs, err)
		}
	}
	shape.Store("other")
	if hooks, err := c.Webhooks(ctx); err == nil || !strings.Contains(err.Error(), `no "webhooks" list`) {
		t.Fatalf("an answer without the list: %+v, %v", hooks, err)
	}
}
