package emulator

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func patch(t *testing.T, em *Emulator, sub, ifMatch, body string, out any) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("PATCH", em.URL()+"/v1/feeds/subscriptions/"+sub, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+em.APIKey())
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// Docs (subscriptions-manifest-files.txt, "Changing a subscription").
func TestEmulator_PatchSubscription(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-"))
	tests := []struct {
		name, ifMatch, body string
		want                int
	}{
		{"neither If-Match nor revision: 400", "", `{"name": "x"}`, 400},
		{"stale If-Match: 412", `"7"`, `{"name": "x"}`, 412},
		{"null field: 400", `"1"`, `{"places": null}`, 400},
		{"no places and no datasets: 400", `"1"`, `{"places": []}`, 400},
		{"empty body: 400", `"1"`, ``, 400},
		{"body revision wins over If-Match", `"7"`, `{"name": "x", "revision": 1}`, 200},
		{"the revision moved on", `"1"`, `{"name": "y"}`, 412},
		{"fresh If-Match", `"2"`, `{"places": ["fl"], "datasetIds": []}`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := patch(t, em, sub, tt.ifMatch, tt.body, nil).StatusCode; got != tt.want {
				t.Fatalf("status = %d, want %d", got, tt.want)
			}
		})
	}
	// "datasets that leave send feed.dataset.removed"
	evs := allEvents(t, em, sub)
	if got, want := eventTypes(evs), "added resync_required(first_version) removed(subscription_changed)"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	var s struct {
		Revision int      `json:"revision"`
		Places   []string `json:"places"`
	}
	resp := call(t, "GET", em.URL()+"/v1/feeds/subscriptions/"+sub, em.APIKey(), nil, &s)
	if s.Revision != 3 || resp.Header.Get("ETag") != `"3"` {
		t.Fatalf("revision %d, ETag %s", s.Revision, resp.Header.Get("ETag"))
	}
	// "Datasets that join send feed.dataset.added"
	if got := patch(t, em, sub, `"3"`, `{"places": ["fl-counties"]}`, nil).StatusCode; got != 200 {
		t.Fatalf("re-add: %d", got)
	}
	evs = allEvents(t, em, sub)
	if evs[3].Type != "feed.dataset.added" || *evs[3].Data.Version != 1 {
		t.Fatalf("join = %+v", evs[3])
	}
}

func TestEmulator_CreateSubscription_HTTP(t *testing.T) {
	em := mustEmulator(t)
	post := func(key, body string, out any) *http.Response {
		req, _ := http.NewRequest("POST", em.URL()+"/v1/feeds/subscriptions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+em.APIKey())
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// "A retry with the same key within a day returns the first answer
	// instead of creating twice, with an Idempotent-Replayed: true header.
	// The first answer carries the ETag header. A replay does not"
	r1 := post("k1", `{"name": "a", "places": ["fl-orange"]}`, nil)
	r2 := post("k1", `{"name": "a", "places": ["fl-orange"]}`, nil)
	if r1.StatusCode != 201 || r1.Header.Get("ETag") == "" || r2.Header.Get("Idempotent-Replayed") != "true" || r2.Header.Get("ETag") != "" {
		t.Fatalf("first %d %q, replay %q %q", r1.StatusCode, r1.Header.Get("ETag"), r2.Header.Get("Idempotent-Replayed"), r2.Header.Get("ETag"))
	}
	if got := len(em.Subscriptions()); got != 1 {
		t.Fatalf("subscriptions = %d", got)
	}
	tests := []struct {
		body string
		want int
	}{
		{`{}`, 400},
		{`{"places": ["nowhere"]}`, 400},
		{`{"datasetIds": ["ds_nope"]}`, 400},
		{`{"places": ["fl-orange"], "topics": null}`, 400},
	}
	for _, tt := range tests {
		if got := post("", tt.body, nil).StatusCode; got != tt.want {
			t.Errorf("%s: %d, want %d", tt.body, got, tt.want)
		}
	}
	em.SetCoverage([]string{})
	if got := post("", `{"places": ["fl-orange"]}`, nil).StatusCode; got != 409 {
		t.Errorf("outside coverage: %d, want 409", got)
	}
}

// Docs: feed.dataset.removed reasons left_coverage, plan_changed,
// subscription_changed (including "Ploti filing the dataset under another
// topic or place"), no_longer_deliverable.
func TestEmulator_Removed(t *testing.T) {
	tests := []struct {
		name   string
		act    func(*Emulator) error
		reason string
	}{
		{"coverage", func(em *Emulator) error { em.SetCoverage([]string{"fl-other"}); return nil }, "left_coverage"},
		{"plan", func(em *Emulator) error { return em.SetPlanClosed(dsPermits, true) }, "plan_changed"},
		{"refiled", func(em *Emulator) error { return em.Refile(dsPermits, "fl-orange", "zoning-land-use") }, "subscription_changed"},
		{"not deliverable", func(em *Emulator) error { return em.SetDeliverable(dsPermits, false) }, "no_longer_deliverable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em := mustEmulator(t)
			sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}, Topics: []string{"development-activity"}})
			mustPublish(t, em, permits(2, "P-"))
			if err := tt.act(em); err != nil {
				t.Fatal(err)
			}
			if got, want := eventTypes(allEvents(t, em, sub)), "added resync_required(first_version) removed("+tt.reason+")"; got != want {
				t.Fatalf("events = %s, want %s", got, want)
			}
			// "A 409 (not_subscribed, outside_coverage or not_deliverable) or a 404"
			if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", nil); st != 409 && st != 404 {
				t.Fatalf("version after removal: %d", st)
			}
		})
	}
}

// Docs: "When Ploti cannot read your workspace's plan at that moment, it
// removes nothing for it and checks again later." and "the manifest answers
// 503 plan_unavailable".
func TestEmulator_PlanUnavailable(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-"))
	em.SetPlanUnavailable(true)
	em.SetPlanClosed(dsPermits, true)
	var eb errorBody
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", &eb); st != 503 || eb.Error.Code != "plan_unavailable" {
		t.Fatalf("manifest: %d %s", st, eb.Error.Code)
	}
	if got := eventTypes(allEvents(t, em, sub)); strings.Contains(got, "removed") {
		t.Fatalf("removed while the plan was unreadable: %s", got)
	}
	em.SetPlanUnavailable(false)
	if got := eventTypes(allEvents(t, em, sub)); !strings.HasSuffix(got, "removed(plan_changed)") {
		t.Fatalf("events = %s", got)
	}
}

func TestEmulator_DeleteSubscription(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-"))
	em.SetSubscriptionBusy(sub, true)
	var eb errorBody
	if r := call(t, "DELETE", em.URL()+"/v1/feeds/subscriptions/"+sub, em.APIKey(), nil, &eb); r.StatusCode != 409 || eb.Error.Code != "busy" {
		t.Fatalf("busy delete: %d %s", r.StatusCode, eb.Error.Code)
	}
	em.SetSubscriptionBusy(sub, false)
	var del struct {
		Deleted bool `json:"deleted"`
	}
	if r := call(t, "DELETE", em.URL()+"/v1/feeds/subscriptions/"+sub, em.APIKey(), nil, &del); r.StatusCode != 200 || !del.Deleted {
		t.Fatalf("delete: %d", r.StatusCode)
	}
	// "stops GET .../versions/{version} signing links for its datasets ...
	// It answers 409 not_subscribed instead."
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", &eb); st != 409 || eb.Error.Code != "not_subscribed" {
		t.Fatalf("version: %d %s", st, eb.Error.Code)
	}
}

// Docs: "A day past nextCheckBy, the dataset is stale and you receive
// feed.dataset.stale." and "feed.dataset.stale is sent once per missed
// check."
func TestEmulator_Stale(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-"))
	em.Advance(47 * time.Hour) // nextCheckBy is +24h; stale after +48h
	if got := eventTypes(allEvents(t, em, sub)); strings.Contains(got, "stale") {
		t.Fatalf("stale too early: %s", got)
	}
	em.Advance(2 * time.Hour)
	em.Advance(24 * time.Hour)
	evs := allEvents(t, em, sub)
	if got, want := eventTypes(evs), "added resync_required(first_version) stale"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	em.Check(dsPermits)
	em.Advance(49 * time.Hour)
	if got := eventTypes(allEvents(t, em, sub)); !strings.HasSuffix(got, "stale stale") {
		t.Fatalf("next missed check: %s", got)
	}
}

// Docs: "Snapshots and changes files are kept 90 days from when each version
// was built"; previous_unavailable: "the snapshot of the version before it is
// past retention".
func TestEmulator_FileRetention(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-"))
	var v1 versionBody
	apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", &v1)
	mustPublish(t, em, permits(3, "P-"))
	em.Advance(91 * 24 * time.Hour)
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", nil); st != 410 {
		t.Fatalf("old version: %d, want 410", st)
	}
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/2", nil); st != 200 {
		t.Fatalf("current version: %d, want 200", st)
	}
	rel := mustPublish(t, em, permits(3, "P-"))
	if rel.ResyncReason != "previous_unavailable" {
		t.Fatalf("release = %+v", rel)
	}
	evs := em.Events(sub) // the log's first events were pruned: no-cursor reads answer 410
	if last := evs[len(evs)-1]; last.Type != "feed.dataset.resync_required" || last.Data["reason"] != "previous_unavailable" {
		t.Fatalf("last event = %s", last.JSON)
	}
	tr, err := em.Truth(context.Background(), dsPermits, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := queryRows(t, testDB(t), "SELECT count(*) FROM read_parquet('"+tr+"')"); got[0] != "3" {
		t.Fatalf("truth rows = %v", got)
	}
}

// Docs: "Files being rebuilt: {"datasetId", "version", "reason": "rebuilding"}."
func TestEmulator_Manifest_Rebuilding(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-"))
	em.SetRebuilding(dsPermits, true)
	var m manifestBody
	apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", &m)
	if len(m.Datasets) != 0 || len(m.Unavailable) != 1 || m.Unavailable[0].Reason != "rebuilding" || *m.Unavailable[0].Version != 1 {
		t.Fatalf("manifest = %+v", m)
	}
}

// Docs: asOf is refused with "410 expired ... when a listed version's
// snapshot is past retention", even while the events up to it are kept.
func TestEmulator_ManifestAsOf_SnapshotPastRetention(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-")) // v1 built on day 0
	em.Advance(10 * 24 * time.Hour)
	asOf := Cursor(sub, 2) // added, resync_required v1

	mustPublish(t, em, permits(3, "P-")) // v2 on day 10
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest?asOf="+asOf, nil); st != 200 {
		t.Fatalf("asOf on day 10: %d", st)
	}
	em.Advance(81 * 24 * time.Hour) // day 91: v1's files are gone, the events are not
	var eb errorBody
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest?asOf="+asOf, &eb); st != 410 || eb.Error.Code != "expired" {
		t.Fatalf("asOf on day 91: %d %s", st, eb.Error.Code)
	}
	var m manifestBody
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", &m); st != 200 || m.Datasets[0].Version != 2 {
		t.Fatalf("manifest without asOf: %d %+v", st, m.Datasets)
	}
}
