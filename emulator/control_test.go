package emulator

import (
	"net/http"
	"strings"
	"testing"
)

type controlAnswer struct {
	Releases []struct {
		DatasetID    string  `json:"datasetId"`
		Version      int     `json:"version"`
		Held         bool    `json:"held"`
		HoldReason   *string `json:"holdReason"`
		ResyncReason *string `json:"resyncReason"`
	} `json:"releases"`
	EventID string `json:"eventId"`
	errorBody
}

// ctl posts to a control endpoint with the emulator's key.
func ctl(t *testing.T, em *Emulator, endpoint string) (int, controlAnswer) {
	t.Helper()
	var out controlAnswer
	resp := call(t, "POST", em.URL()+ControlPrefix+endpoint, em.APIKey(), nil, &out)
	return resp.StatusCode, out
}

// A control endpoint without the key, or with another, answers 401 and
// does nothing.
func TestControl_needsKey(t *testing.T) {
	em, _ := demoEmulator(t)
	for _, key := range []string{"", "not_the_key"} {
		var out errorBody
		if st := call(t, "POST", em.URL()+ControlPrefix+"publish", key, nil, &out).StatusCode; st != http.StatusUnauthorized || out.Error.Code != "unauthorized" {
			t.Fatalf("publish with key %q: %d %+v, want 401 unauthorized", key, st, out)
		}
	}
	if got := len(em.PlotiVersions(DemoPermits)); got != 1 {
		t.Fatalf("the permits have %d versions after refused publishes, want 1", got)
	}
	// The prefix sits beside /v1: the API's own 404 under /v1.
	if st := call(t, "POST", em.URL()+"/v1"+ControlPrefix+"publish", em.APIKey(), nil, nil).StatusCode; st != http.StatusNotFound {
		t.Fatalf("/v1%spublish = %d, want 404", ControlPrefix, st)
	}
}

// Each control endpoint has the effect of the method it calls.
func TestControl_endpoints(t *testing.T) {
	em, d := demoEmulator(t)
	if st, out := ctl(t, em, "publish?dataset="+DemoParcels); st != 200 || len(out.Releases) != 1 || out.Releases[0].Version != 2 {
		t.Fatalf("publish parcels: %d %+v", st, out)
	}
	if st, out := ctl(t, em, "publish"); st != 200 || len(out.Releases) != 4 || d.Round != 2 {
		t.Fatalf("publish (a round): %d %+v, Round %d", st, out, d.Round)
	}
	if st, out := ctl(t, em, "hold?dataset="+DemoPermits); st != 200 || !out.Releases[0].Held || *out.Releases[0].HoldReason != "row_drop" {
		t.Fatalf("hold: %d %+v", st, out)
	}
	evs := em.Events(d.SubscriptionID)
	if last := evs[len(evs)-1]; last.Type != "feed.dataset.delayed" {
		t.Fatalf("after hold the last event is %s, want feed.dataset.delayed", last.Type)
	}
	if st, out := ctl(t, em, "release?dataset="+DemoPermits); st != 200 || out.Releases[0].Held {
		t.Fatalf("release: %d %+v", st, out)
	}
	if st, out := ctl(t, em, "release?dataset="+DemoPermits); st != http.StatusConflict {
		t.Fatalf("release with nothing held: %d %+v, want 409", st, out)
	}
	if st, out := ctl(t, em, "rename-ids?dataset="+DemoInspections+"&fraction=0.5"); st != 200 || *out.Releases[0].ResyncReason != "record_ids_changed" {
		t.Fatalf("rename-ids: %d %+v", st, out)
	}
	st, out := ctl(t, em, "request-event?type=research_request.question&request=req_42")
	mev := em.MemberEvents()
	if last := mev[len(mev)-1]; st != 200 || last.ID != out.EventID || last.Type != "research_request.question" ||
		last.Data["requestId"] != "req_42" || last.Data["questions"] == nil {
		t.Fatalf("request-event: %d %+v; last member event %+v", st, out, last)
	}
	if st, _ := ctl(t, em, "fail-next?path=/v1/places&status=418"); st != 200 {
		t.Fatalf("fail-next: %d", st)
	}
	if st := apiGet(t, em, "/v1/places", nil); st != 418 {
		t.Fatalf("GET /v1/places after fail-next = %d, want 418", st)
	}
	if st := apiGet(t, em, "/v1/places", nil); st != 200 {
		t.Fatalf("the second GET /v1/places = %d, want 200 (one failure)", st)
	}
	for _, bad := range []struct {
		endpoint string
		status   int
	}{
		{"hold", 400}, {"publish?dataset=ds_nope", 404}, {"request-event?type=nope", 400},
		{"fail-next?path=v1&status=503", 400}, {"fail-next?status=99", 400}, {"rename-ids?dataset=" + DemoPermits + "&fraction=2", 400},
	} {
		if st, out := ctl(t, em, bad.endpoint); st != bad.status || out.Error.Message == "" {
			t.Errorf("%s: %d %+v, want %d with words", bad.endpoint, st, out, bad.status)
		}
	}
	if st, out := ctl(t, em, "nope"); st != 404 || !strings.Contains(out.Error.Message, ControlPrefix+"publish") {
		t.Fatalf("an unknown control endpoint: %d %+v, want 404 listing the others", st, out)
	}
}
