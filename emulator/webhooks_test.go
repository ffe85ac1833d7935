package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a webhook receiver on loopback that records what it gets and
// answers with the status its answer function gives (200 by default).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int) int // n counts requests from 1
}

type received struct {
	header http.Header
	body   []byte
}

func mustReceiver(tb testing.TB, answer func(n int) int) *receiver {
	tb.Helper()
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), b})
		n := len(rc.got)
		rc.mu.Unlock()
		status := http.StatusOK
		if rc.answer != nil {
			status = rc.answer(n)
		}
		w.WriteHeader(status)
	}))
	tb.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func mustWebhook(tb testing.TB, em *Emulator, spec WebhookSpec) Webhook {
	tb.Helper()
	h, err := em.CreateWebhook(spec)
	if err != nil {
		tb.Fatalf("CreateWebhook: %v", err)
	}
	return h
}

func mustWait(tb testing.TB, em *Emulator) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := em.WaitDeliveries(ctx); err != nil {
		tb.Fatal(err)
	}
}

// attempts renders the deliveries as "<event type>#<attempt>:<status>".
func attempts(ds []Delivery) string {
	var s []string
	for _, d := range ds {
		x := fmt.Sprintf("%s#%d:%d", strings.TrimPrefix(d.EventType, "feed.dataset."), d.Attempt, d.Status)
		if d.Dropped {
			x = fmt.Sprintf("%s#%d:dropped", strings.TrimPrefix(d.EventType, "feed.dataset."), d.Attempt)
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

// nearWebhookNow reports whether a webhook-timestamp header is within a
// few seconds of WebhookNow (the wall clock moved while the test ran).
func nearWebhookNow(em *Emulator, ts string) bool {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := em.WebhookNow().Sub(time.Unix(sec, 0))
	return d > -2*time.Second && d < 10*time.Second
}

// deliveriesOf is the attempts to send one message.
func deliveriesOf(em *Emulator, msgID string) []Delivery {
	var out []Delivery
	for _, d := range em.Deliveries() {
		if d.MessageID == msgID {
			out = append(out, d)
		}
	}
	return out
}

// TestWebhook_signVectors checks the emulator's signer against the shared
// Standard Webhooks vectors.
func TestWebhook_signVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "shared", "testvectors", "standard-webhooks.json"))
	if err != nil {
		t.Skipf("no shared test vectors: %v", err)
	}
	var vs struct {
		Valid []struct {
			Secret, ID, Body, Signature string
			Timestamp                   int64
		}
	}
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs.Valid) == 0 {
		t.Fatal("no valid vectors")
	}
	for _, v := range vs.Valid {
		if got := signWebhook(v.Secret, v.ID, fmt.Sprint(v.Timestamp), []byte(v.Body)); got != v.Signature {
			t.Errorf("sign %s = %s, want %s", v.ID, got, v.Signature)
		}
	}
}

func TestWebhook_deliver(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, nil)
	only := mustReceiver(t, nil)
	h := mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL + "/ploti", Description: "all", SubscriptionID: sub,
		Header: &WebhookHeader{Name: "Authorization", Value: "Bearer receiver-key"}})
	mustWebhook(t, em, WebhookSpec{URL: only.srv.URL, SubscriptionID: sub, Events: []string{"feed.dataset.updated"}})
	if !strings.HasPrefix(h.Secret, "whsec_") || len(h.Secret) < 20 {
		t.Fatalf("secret %q, want whsec_…", h.Secret)
	}
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustPublish(t, em, []Row{permit("P-1", "2.00", 1)})
	mustWait(t, em)

	log := em.Events(sub)[1:] // the first, added, came before the webhook
	got := rc.requests()
	if len(got) != len(log) || len(log) < 2 {
		t.Fatalf("receiver got %d POSTs, the log has %d events since the webhook", len(got), len(log))
	}
	for i, r := range got {
		if string(r.body) != string(log[i].JSON) {
			t.Fatalf("POST %d body\n%s\nwant the log's event\n%s", i, r.body, log[i].JSON)
		}
		id, ts := r.header.Get("webhook-id"), r.header.Get("webhook-timestamp")
		if want := signWebhook(h.Secret, id, ts, r.body); r.header.Get("webhook-signature") != want {
			t.Fatalf("POST %d signature %q, want %q", i, r.header.Get("webhook-signature"), want)
		}
		// The header was pinned to the manual clock once; it is now the
		// real time plus Advance's offset (WebhookNow), so that a real
		// receiver, which checks it against its wall clock, takes it.
		if !nearWebhookNow(em, ts) {
			t.Fatalf("POST %d webhook-timestamp %s, want WebhookNow %d", i, ts, em.WebhookNow().Unix())
		}
		if got := r.header.Get("Authorization"); got != "Bearer receiver-key" {
			t.Fatalf("POST %d custom header %q", i, got)
		}
		if got := r.header.Get("Content-Type"); got != "application/json" {
			t.Fatalf("POST %d Content-Type %q", i, got)
		}
	}
	for _, d := range em.Deliveries() {
		if !d.At.Equal(em.Now()) {
			t.Fatalf("delivery %s At %s, want the emulator clock %s", d.MessageID, d.At, em.Now())
		}
	}
	var types []string
	for _, r := range only.requests() {
		var ev struct{ Type string }
		json.Unmarshal(r.body, &ev)
		types = append(types, ev.Type)
	}
	if got, want := strings.Join(types, " "), "feed.dataset.updated"; got != want {
		t.Fatalf("filtered webhook got %q, want %q", got, want)
	}
	if got := em.Webhooks(); len(got) != 2 || got[0].Secret != "" || got[0].HeaderName != "Authorization" {
		t.Fatalf("Webhooks() = %+v, want two, without secrets, header named", got)
	}
}

// TestWebhook_retry guards "retried six times, at growing intervals, over
// about a day and a half" on the emulator clock.
func TestWebhook_retry(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, func(int) int { return http.StatusInternalServerError })
	mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustWait(t, em)
	if got, want := attempts(em.Deliveries()), "resync_required#1:500"; got != want {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
	msgID := em.Deliveries()[0].MessageID
	var total time.Duration
	for i, wait := range DeliveryRetryIntervals() {
		em.Advance(wait - time.Second)
		mustWait(t, em)
		if got := len(deliveriesOf(em, msgID)); got != i+1 {
			t.Fatalf("a second before retry %d: %d attempts, want %d", i+1, got, i+1)
		}
		em.Advance(time.Second)
		mustWait(t, em)
		if got := len(deliveriesOf(em, msgID)); got != i+2 {
			t.Fatalf("retry %d: %d attempts, want %d", i+1, got, i+2)
		}
		total += wait
	}
	if total < 30*time.Hour || total > 42*time.Hour {
		t.Fatalf("retries span %s, want about a day and a half", total)
	}
	em.Advance(72 * time.Hour) // long past the last retry; a stale event comes, on its own message
	mustWait(t, em)
	ds := deliveriesOf(em, msgID)
	if got, want := attempts(ds), "resync_required#1:500 resync_required#2:500 resync_required#3:500 resync_required#4:500 resync_required#5:500 resync_required#6:500 resync_required#7:500"; got != want {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
	for _, d := range ds {
		if d.MessageID != ds[0].MessageID || d.EventID != ds[0].EventID {
			t.Fatalf("retry has webhook-id %s event %s, want %s %s", d.MessageID, d.EventID, ds[0].MessageID, ds[0].EventID)
		}
	}
	if !ds[6].NextAttempt.IsZero() || ds[5].NextAttempt.IsZero() {
		t.Fatalf("NextAttempt of the last two: %v, %v", ds[5].NextAttempt, ds[6].NextAttempt)
	}
}

func TestWebhook_answers(t *testing.T) {
	tests := []struct {
		name        string
		answer      func(n int) int
		want        string // after the first event, its retry, and a second event
		wantEnabled bool
	}{
		{name: "ok", answer: func(int) int { return 204 }, want: "resync_required#1:204 updated#1:204", wantEnabled: true},
		{name: "413 is not retried", answer: func(int) int { return 413 }, want: "resync_required#1:413 updated#1:413", wantEnabled: true},
		{name: "410 turns the webhook off", answer: func(int) int { return 410 }, want: "resync_required#1:410", wantEnabled: false},
		{name: "a redirect is a failure", answer: func(n int) int { return map[bool]int{true: 302, false: 200}[n == 1] },
			want: "resync_required#1:302 resync_required#2:200 updated#1:200", wantEnabled: true},
		{name: "503 then ok", answer: func(n int) int { return map[bool]int{true: 503, false: 200}[n == 1] },
			want: "resync_required#1:503 resync_required#2:200 updated#1:200", wantEnabled: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			em := mustEmulator(t)
			sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
			rc := mustReceiver(t, tc.answer)
			h := mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
			mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
			mustWait(t, em)
			em.RetryDeliveriesNow()
			mustWait(t, em)
			mustPublish(t, em, []Row{permit("P-1", "2.00", 1)})
			mustWait(t, em)
			if got := attempts(em.Deliveries()); got != tc.want {
				t.Fatalf("deliveries %q, want %q", got, tc.want)
			}
			var list struct{ Webhooks []map[string]any }
			apiGet(t, em, "/v1/webhooks", &list)
			if len(list.Webhooks) != 1 || list.Webhooks[0]["id"] != h.ID || list.Webhooks[0]["enabled"] != tc.wantEnabled {
				t.Fatalf("GET /v1/webhooks = %+v, want %s enabled=%v", list.Webhooks, h.ID, tc.wantEnabled)
			}
		})
	}
}

func TestWebhook_drop(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, nil)
	mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
	em.DropDeliveries(1)
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustPublish(t, em, []Row{permit("P-1", "2.00", 1)})
	mustWait(t, em)
	em.Advance(48 * time.Hour) // a dropped delivery is never retried
	mustWait(t, em)
	if got, want := attempts(em.Deliveries()), "resync_required#1:dropped updated#1:200"; got != want {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
	if got := len(rc.requests()); got != 1 {
		t.Fatalf("receiver got %d POSTs, want 1", got)
	}
	em.DropDeliveries(-1)
	mustPublish(t, em, []Row{permit("P-1", "3.00", 1)})
	mustPublish(t, em, []Row{permit("P-1", "4.00", 1)})
	mustWait(t, em)
	em.DropDeliveries(0)
	mustPublish(t, em, []Row{permit("P-1", "5.00", 1)})
	mustWait(t, em)
	if got, want := attempts(em.Deliveries()), "resync_required#1:dropped updated#1:200 updated#1:dropped updated#1:dropped updated#1:200"; got != want {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
}

func TestWebhook_api(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, nil)
	post := func(body string) (int, map[string]any) {
		var out map[string]any
		resp := call(t, "POST", em.URL()+"/v1/webhooks", em.APIKey(), strings.NewReader(body), &out)
		return resp.StatusCode, out
	}
	bad := []struct {
		name, body string
		status     int
	}{
		{"not JSON", `{`, 400},
		{"no url", fmt.Sprintf(`{"subscriptionId":%q}`, sub), 400},
		{"relative url", fmt.Sprintf(`{"url":"/x","subscriptionId":%q}`, sub), 400},
		{"ftp url", fmt.Sprintf(`{"url":"ftp://h/x","subscriptionId":%q}`, sub), 400},
		{"feed event type on a member webhook", fmt.Sprintf(`{"url":%q,"events":["feed.dataset.updated"]}`, rc.srv.URL), 400},
		{"unknown subscription", fmt.Sprintf(`{"url":%q,"subscriptionId":"sub_nope"}`, rc.srv.URL), 404},
		{"unknown event type", fmt.Sprintf(`{"url":%q,"subscriptionId":%q,"events":["dataset.changed"]}`, rc.srv.URL, sub), 400},
		{"reserved header", fmt.Sprintf(`{"url":%q,"subscriptionId":%q,"header":{"name":"webhook-signature","value":"x"}}`, rc.srv.URL, sub), 400},
		{"bad header name", fmt.Sprintf(`{"url":%q,"subscriptionId":%q,"header":{"name":"a b","value":"x"}}`, rc.srv.URL, sub), 400},
		{"header without value", fmt.Sprintf(`{"url":%q,"subscriptionId":%q,"header":{"name":"X-Key","value":""}}`, rc.srv.URL, sub), 400},
	}
	for _, tc := range bad {
		if status, out := post(tc.body); status != tc.status || out["error"] == nil {
			t.Errorf("%s: %d %v, want %d with an error", tc.name, status, out, tc.status)
		}
	}
	status, created := post(fmt.Sprintf(`{"url":%q,"description":"d","subscriptionId":%q,"events":["feed.dataset.added"],`+
		`"header":{"name":"x-receiver-key","value":"k1"}}`, rc.srv.URL, sub))
	if status != 201 || !strings.HasPrefix(fmt.Sprint(created["secret"]), "whsec_") {
		t.Fatalf("create: %d %v", status, created)
	}
	id := created["id"].(string)
	var list struct{ Webhooks []map[string]any }
	apiGet(t, em, "/v1/webhooks?subscriptionId="+sub, &list)
	if len(list.Webhooks) != 1 {
		t.Fatalf("list: %v", list)
	}
	w := list.Webhooks[0]
	if _, ok := w["secret"]; ok || fmt.Sprint(w["header"]) != "map[name:X-Receiver-Key]" || w["description"] != "d" ||
		fmt.Sprint(w["events"]) != "[feed.dataset.added]" || w["enabled"] != true {
		t.Fatalf("listed webhook %v: want no secret, the header's name only", w)
	}
	var ping map[string]any
	if resp := call(t, "POST", em.URL()+"/v1/webhooks/"+id+"/test", em.APIKey(), nil, &ping); resp.StatusCode != 202 {
		t.Fatalf("test: %d %v", resp.StatusCode, ping)
	}
	mustWait(t, em)
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d POSTs, want the ping", len(got))
	}
	var body map[string]any
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body["type"] != "ping" || fmt.Sprint(body["data"]) != "map[]" || body["id"] == "" || body["timestamp"] == nil || len(body) != 4 {
		t.Fatalf("ping body %s", got[0].body)
	}
	r := got[0]
	if want := signWebhook(created["secret"].(string), r.header.Get("webhook-id"), r.header.Get("webhook-timestamp"), r.body); r.header.Get("webhook-signature") != want ||
		r.header.Get("webhook-id") != ping["messageId"] || r.header.Get("X-Receiver-Key") != "k1" {
		t.Fatalf("ping headers %v", r.header)
	}
	if resp := call(t, "DELETE", em.URL()+"/v1/webhooks/"+id, em.APIKey(), nil, nil); resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	for _, req := range []struct{ method, path string }{{"DELETE", "/v1/webhooks/" + id}, {"POST", "/v1/webhooks/" + id + "/test"}} {
		var e errorBody
		if resp := call(t, req.method, em.URL()+req.path, em.APIKey(), nil, &e); resp.StatusCode != 404 || e.Error.Code != "not_found" {
			t.Fatalf("%s %s after delete: %d %+v", req.method, req.path, resp.StatusCode, e)
		}
	}
	if resp := call(t, "GET", em.URL()+"/v1/webhooks", "", nil, nil); resp.StatusCode != 401 {
		t.Fatalf("list without a key: %d", resp.StatusCode)
	}
	for i := range MaxWebhooks {
		mustWebhook(t, em, WebhookSpec{URL: fmt.Sprintf("%s/%d", rc.srv.URL, i), SubscriptionID: sub})
	}
	if _, err := em.CreateWebhook(WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub}); !errors.Is(err, ErrWebhookLimit) {
		t.Fatalf("webhook %d: %v, want ErrWebhookLimit", MaxWebhooks+1, err)
	}
}

// TestWebhook_subscriptionDeleted guards subscriptions-manifest-files.txt:
// "Deleting a subscription stops its events and its webhooks", at once: the
// webhook is listed turned off with its reason before any delivery is tried
// again, its queued retry is dropped, a test ping is refused (409
// webhook_disabled, decision 61), and a member webhook goes on.
func TestWebhook_subscriptionDeleted(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, func(int) int { return 500 })
	h := mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
	member := mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL + "/member"})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustWait(t, em)
	if resp := call(t, "DELETE", em.URL()+"/v1/feeds/subscriptions/"+sub, em.APIKey(), nil, nil); resp.StatusCode != 200 {
		t.Fatalf("delete subscription: %d", resp.StatusCode)
	}
	var list struct{ Webhooks []map[string]any }
	apiGet(t, em, "/v1/webhooks", &list)
	if len(list.Webhooks) != 2 || list.Webhooks[0]["id"] != h.ID || list.Webhooks[0]["enabled"] != false ||
		list.Webhooks[0]["disabledReason"] != "the subscription was deleted" || list.Webhooks[1]["enabled"] != true {
		t.Fatalf("GET /v1/webhooks after the delete = %+v, want %s listed off, the member's on", list.Webhooks, h.ID)
	}
	var e errorBody
	if resp := call(t, "POST", em.URL()+"/v1/webhooks/"+h.ID+"/test", em.APIKey(), nil, &e); resp.StatusCode != 409 || e.Error.Code != "webhook_disabled" {
		t.Fatalf("test after the delete: %d %+v, want 409 webhook_disabled", resp.StatusCode, e)
	}
	if _, err := em.TestWebhook(member.ID); err != nil {
		t.Fatalf("test of the member webhook: %v", err)
	}
	em.RetryDeliveriesNow()
	mustWait(t, em)
	if got, want := attempts(em.Deliveries()), "resync_required#1:500 ping#1:500"; got != want {
		t.Fatalf("deliveries %q, want %q: no retry after the delete, the member's ping", got, want)
	}
}

// The Go API's DeleteSubscription stops the webhooks too.
func TestWebhook_subscriptionDeletedByTheGoAPI(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	h := mustWebhook(t, em, WebhookSpec{URL: "https://example.org/hook", SubscriptionID: sub})
	if err := em.DeleteSubscription(sub); err != nil {
		t.Fatal(err)
	}
	if hs := em.Webhooks(); len(hs) != 1 || !hs[0].Disabled || hs[0].DisabledReason != "the subscription was deleted" {
		t.Fatalf("webhooks = %+v, want %s turned off", hs, h.ID)
	}
	if _, err := em.TestWebhook(h.ID); !errors.Is(err, ErrWebhookDisabled) {
		t.Fatalf("TestWebhook: %v, want ErrWebhookDisabled", err)
	}
}

// TestWebhook_closeWhileSending checks that Close does not wait for a
// receiver that never answers.
func TestWebhook_closeWhileSending(t *testing.T) {
	em, err := New(Options{Dir: t.TempDir(), NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	hung := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hung)
	em.AddPlace(Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	if err := em.AddDataset(DatasetSpec{ID: dsPermits, PlaceID: "fl-orange", KeyColumns: []string{"permit_number"}, Columns: permitColumns()}); err != nil {
		t.Fatal(err)
	}
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustWebhook(t, em, WebhookSpec{URL: srv.URL, SubscriptionID: sub})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	<-arrived
	start := time.Now()
	if err := em.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %s with a POST in flight", d)
	}
	if _, err := em.CreateWebhook(WebhookSpec{URL: srv.URL, SubscriptionID: sub}); !errors.Is(err, ErrClosed) {
		t.Fatalf("CreateWebhook after Close: %v, want ErrClosed", err)
	}
}

// watch-and-webhooks.txt: "A webhook is an https address you control." A
// plain http address is 400 invalid_input, as Ploti answers it, unless its
// host is loopback (localhost, 127.0.0.0/8, ::1), where tests' receivers
// listen.
func TestWebhook_httpsOnly(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	for _, tc := range []struct {
		url    string
		status int
	}{
		{"https://example.org/hook", 201},
		{"http://127.0.0.1:8790/ploti", 201},
		{"http://127.9.9.9/ploti", 201},
		{"http://localhost:8790/ploti", 201},
		{"http://[::1]:8790/ploti", 201},
		{"http://example.org/hook", 400},
		{"http://10.0.0.1/hook", 400},
		{"http://localhost.example.org/hook", 400},
	} {
		var out struct {
			ID    string `json:"id"`
			Error struct{ Code, Message string }
		}
		body := fmt.Sprintf(`{"url":%q,"subscriptionId":%q}`, tc.url, sub)
		resp := call(t, "POST", em.URL()+"/v1/webhooks", em.APIKey(), strings.NewReader(body), &out)
		switch {
		case resp.StatusCode != tc.status:
			t.Errorf("%s: %d %+v, want %d", tc.url, resp.StatusCode, out, tc.status)
		case tc.status == 400 && (out.Error.Code != "invalid_input" || !strings.Contains(out.Error.Message, "https address")):
			t.Errorf("%s: error %+v, want invalid_input naming the https rule", tc.url, out.Error)
		case tc.status == 201 && out.ID == "":
			t.Errorf("%s: created without an id", tc.url)
		}
	}
	if got := len(em.Webhooks()); got != 5 {
		t.Fatalf("webhooks = %d, want the 5 https or loopback ones", got)
	}
}
