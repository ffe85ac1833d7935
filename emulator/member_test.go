package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// bodyTypes lists the "type" of each POST a receiver got.
func bodyTypes(tb testing.TB, rc *receiver) []string {
	tb.Helper()
	var out []string
	for _, r := range rc.requests() {
		var ev struct{ Type string }
		if err := json.Unmarshal(r.body, &ev); err != nil {
			tb.Fatalf("POST body %s: %v", r.body, err)
		}
		out = append(out, ev.Type)
	}
	return out
}

func keys(m map[string]json.RawMessage) string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	slices.Sort(k)
	return strings.Join(k, ",")
}

// Docs: "each new version sends a dataset.changed event to all your
// webhooks"; "A webhook made for a Data Feeds subscription receives only
// that subscription's feed events." Member deliveries are signed as feed
// ones are (checked with the Standard Webhooks library).
func TestMemberWebhook_datasetChanged(t *testing.T) {
	em := mustEmulator(t)
	if err := em.AddDataset(DatasetSpec{ID: "ds_other", PlaceID: "fl-orange", Columns: permitColumns()}); err != nil {
		t.Fatal(err)
	}
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	feed, member := mustReceiver(t, nil), mustReceiver(t, nil)
	mustWebhook(t, em, WebhookSpec{URL: feed.srv.URL, SubscriptionID: sub})
	h := mustWebhook(t, em, WebhookSpec{URL: member.srv.URL, Header: &WebhookHeader{Name: "X-Key", Value: "k"}})
	if _, err := em.Watch(dsPermits); err != nil {
		t.Fatal(err)
	}
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81)})
	em.Advance(time.Minute)
	r2 := mustPublish(t, em, []Row{permit("P-1", "1.50", -81), permit("P-3", "3.00", -81)})
	if _, err := em.Publish(t.Context(), "ds_other", []Row{permit("P-9", "9.00", -81)}); err != nil {
		t.Fatal(err)
	}
	if _, err := em.EmitRequestEvent("data_request.ready", map[string]any{"requestId": "req_1"}); err != nil {
		t.Fatal(err)
	}
	mustWait(t, em)
	if got, want := strings.Join(bodyTypes(t, member), " "), "dataset.changed dataset.changed data_request.ready"; got != want {
		t.Fatalf("member webhook got %q, want %q", got, want)
	}
	for _, typ := range bodyTypes(t, feed) {
		if !strings.HasPrefix(typ, "feed.dataset.") {
			t.Fatalf("subscription webhook got %s", typ)
		}
	}
	wh, err := standardwebhooks.NewWebhook(h.Secret)
	if err != nil {
		t.Fatal(err)
	}
	evs := em.MemberEvents()
	for i, r := range member.requests() {
		if err := wh.VerifyIgnoringTimestamp(r.body, r.header); err != nil {
			t.Fatalf("POST %d: signature: %v", i, err)
		}
		// webhook-timestamp is WebhookNow's (the real time plus Advance's
		// offset under the manual clock), not the emulator clock's.
		if r.header.Get("X-Key") != "k" || !nearWebhookNow(em, r.header.Get("webhook-timestamp")) && i == 2 {
			t.Fatalf("POST %d headers %v", i, r.header)
		}
		if string(r.body) != string(evs[i].JSON) {
			t.Fatalf("POST %d body %s, MemberEvents has %s", i, r.body, evs[i].JSON)
		}
	}
	var ev map[string]json.RawMessage
	json.Unmarshal(member.requests()[1].body, &ev)
	var data map[string]json.RawMessage
	json.Unmarshal(ev["data"], &data)
	if keys(ev) != "data,id,timestamp,type" || keys(data) != "counts,datasetId,promotedAt,provenanceUrl,version" {
		t.Fatalf("dataset.changed: %s", member.requests()[1].body)
	}
	if got, want := string(ev["timestamp"]), `"2026-11-01T00:01:00Z"`; got != want {
		t.Fatalf("timestamp %s, want %s", got, want)
	}
	for k, want := range map[string]string{"datasetId": `"` + dsPermits + `"`, "version": itoa(r2.PlotiVersion),
		"promotedAt": `"2026-11-01T00:01:00Z"`, "counts": `{"added":1,"changed":1,"removed":1}`,
		"provenanceUrl": `"https://ploti.ai/datasets/` + dsPermits + `/provenance"`} {
		if string(data[k]) != want {
			t.Errorf("data.%s = %s, want %s", k, data[k], want)
		}
	}
}

// Docs: a member webhook receives dataset.changed and the request events;
// events filters among those (docs/wire.md 9); a watched dataset the coverage
// no longer opens sends nothing.
func TestMemberWebhook_filterAndCoverage(t *testing.T) {
	em := mustEmulator(t)
	all, only := mustReceiver(t, nil), mustReceiver(t, nil)
	mustWebhook(t, em, WebhookSpec{URL: all.srv.URL})
	mustWebhook(t, em, WebhookSpec{URL: only.srv.URL, Events: []string{"research_request.question"}})
	for _, bad := range [][]string{{"ping"}, {"feed.dataset.updated"}, {"dataset.changed", "nope"}} {
		if _, err := em.CreateWebhook(WebhookSpec{URL: all.srv.URL, Events: bad}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("member webhook with events %v: %v, want ErrInvalid", bad, err)
		}
	}
	em.Watch(dsPermits)
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81)})
	em.EmitRequestEvent("research_request.question", map[string]any{"requestId": "rr_1",
		"questions": []map[string]any{{"id": "q1", "text": "Which years?"}}})
	em.SetCoverage([]string{"fl-other"})
	mustPublish(t, em, []Row{permit("P-1", "2.00", -81)})
	em.SetCoverage(nil)
	em.Unwatch(dsPermits)
	mustPublish(t, em, []Row{permit("P-1", "3.00", -81)})
	mustWait(t, em)
	if got, want := strings.Join(bodyTypes(t, all), " "), "dataset.changed research_request.question"; got != want {
		t.Fatalf("member webhook got %q, want %q", got, want)
	}
	if got, want := strings.Join(bodyTypes(t, only), " "), "research_request.question"; got != want {
		t.Fatalf("filtered member webhook got %q, want %q", got, want)
	}
}

// Docs: "A member may have 20 webhooks"; docs/wire.md 9: subscription webhooks
// included, the 21st is 409 webhook_limit.
func TestMemberWebhook_limit(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, nil)
	for i := range MaxWebhooks {
		spec := WebhookSpec{URL: fmt.Sprintf("%s/%d", rc.srv.URL, i)}
		if i%2 == 0 {
			spec.SubscriptionID = sub
		}
		mustWebhook(t, em, spec)
	}
	for _, body := range []string{fmt.Sprintf(`{"url":%q}`, rc.srv.URL), fmt.Sprintf(`{"url":%q,"subscriptionId":%q}`, rc.srv.URL, sub)} {
		var eb errorBody
		if st := call(t, "POST", em.URL()+"/v1/webhooks", em.APIKey(), strings.NewReader(body), &eb).StatusCode; st != 409 || eb.Error.Code != "webhook_limit" {
			t.Fatalf("21st webhook %s: %d %+v", body, st, eb)
		}
	}
	var list struct{ Webhooks []map[string]any }
	apiGet(t, em, "/v1/webhooks", &list)
	members := 0
	for _, h := range list.Webhooks {
		if h["subscriptionId"] == nil {
			members++
		}
	}
	if len(list.Webhooks) != MaxWebhooks || members != MaxWebhooks/2 {
		t.Fatalf("webhooks: %d, %d of them member webhooks (subscriptionId null)", len(list.Webhooks), members)
	}
}

// Member deliveries are retried like feed ones: the same webhook-id, after
// DeliveryRetryIntervals.
func TestMemberWebhook_retry(t *testing.T) {
	em := mustEmulator(t)
	rc := mustReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return 200
	})
	mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL})
	id, err := em.EmitRequestEvent("data_request.failed", map[string]any{"requestId": "req_9", "reason": "no source"})
	if err != nil {
		t.Fatal(err)
	}
	mustWait(t, em)
	em.Advance(DeliveryRetryIntervals()[0])
	mustWait(t, em)
	ds := em.Deliveries()
	if got, want := attempts(ds), "data_request.failed#1:503 data_request.failed#2:200"; got != want {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
	if ds[0].MessageID != ds[1].MessageID || ds[1].EventID != id {
		t.Fatalf("retry: %s/%s, first %s/%s", ds[1].MessageID, ds[1].EventID, ds[0].MessageID, id)
	}
}

// Docs, "Request events": the types, "data.url on a request event opens
// the request in Ploti", data.questions on research_request.question and
// data.answer on .answered.
func TestEmitRequestEvent(t *testing.T) {
	cases := []struct {
		typ  string
		data map[string]any
		ok   bool
		want string // data as sent, when ok
	}{
		{"data_request.sourcing", map[string]any{"requestId": "req_1"}, true, `{"requestId":"req_1","url":"https://ploti.ai/requests/req_1"}`},
		{"data_request.question", map[string]any{"requestId": "req_1", "url": "https://x/req_1"}, true, `{"requestId":"req_1","url":"https://x/req_1"}`},
		{"research_request.question", map[string]any{"requestId": "rr_1", "questions": []any{map[string]any{"id": "q1", "text": "Which?"}}}, true,
			`{"questions":[{"id":"q1","text":"Which?"}],"requestId":"rr_1","url":"https://ploti.ai/requests/rr_1"}`},
		{"research_request.answered", map[string]any{"requestId": "rr_1", "answer": "2019 on"}, true, `{"answer":"2019 on","requestId":"rr_1","url":"https://ploti.ai/requests/rr_1"}`},
		{"research_request.question", map[string]any{"requestId": "rr_1"}, false, ""},
		{"research_request.answered", map[string]any{"requestId": "rr_1"}, false, ""},
		{"data_request.ready", map[string]any{}, false, ""},
		{"data_request.ready", map[string]any{"requestId": 7}, false, ""},
		{"data_request.done", map[string]any{"requestId": "req_1"}, false, ""},
		{"dataset.changed", map[string]any{"requestId": "req_1"}, false, ""},
	}
	em := mustEmulator(t)
	for _, typ := range RequestEventTypes() {
		if _, err := em.EmitRequestEvent(typ, map[string]any{"requestId": "r", "questions": []any{}, "answer": "a"}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	if n := len(RequestEventTypes()); n != 14 {
		t.Fatalf("%d request event types, the docs list 14", n)
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			id, err := em.EmitRequestEvent(tc.typ, tc.data)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Fatalf("EmitRequestEvent: %v", err)
			}
			if !tc.ok {
				return
			}
			evs := em.MemberEvents()
			last := evs[len(evs)-1]
			var ev struct {
				ID, Type string
				Data     json.RawMessage
			}
			json.Unmarshal(last.JSON, &ev)
			if ev.ID != id || ev.Type != tc.typ || string(ev.Data) != tc.want || last.DatasetID != "" {
				t.Fatalf("event %s", last.JSON)
			}
		})
	}
}
