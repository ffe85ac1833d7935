package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestEmulator_Auth(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	tests := []struct {
		name, key string
		want      int
	}{
		{"no key", "", 401},
		{"wrong key", "nope", 401},
		{"right key", em.APIKey(), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var eb errorBody
			resp := call(t, "GET", em.URL()+"/v1/feeds/subscriptions/"+sub+"/events", tt.key, nil, &eb)
			if got := resp.StatusCode; got != tt.want {
				t.Fatalf("status = %d, want %d", got, tt.want)
			}
			if tt.want == 401 && eb.Error.Code == "" {
				t.Fatalf("401 without error envelope")
			}
		})
	}
	t.Run("files refuse the key", func(t *testing.T) {
		var v versionBody
		apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", &v)
		if strings.HasPrefix(v.Files.Snapshot[0].URL, em.URL()) {
			t.Fatalf("file link %s is on the API host", v.Files.Snapshot[0].URL)
		}
		resp := call(t, "GET", v.Files.Snapshot[0].URL, em.APIKey(), nil, nil)
		if got, want := resp.StatusCode, 400; got != want {
			t.Fatalf("status = %d, want %d", got, want)
		}
		if got := em.KeyLeaks(); got != 1 {
			t.Fatalf("KeyLeaks = %d, want 1", got)
		}
	})
}

func download(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Docs: "Links last one hour." An expired or tampered link answers 403
// link_expired or link_invalid (docs/wire.md 1).
func TestEmulator_SignedLinks(t *testing.T) {
	em := mustEmulator(t)
	mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustPublish(t, em, []Row{permit("P-1", "2.00", 1)})
	var v versionBody
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/2", &v); st != 200 {
		t.Fatalf("version: %d", st)
	}
	if got, want := v.LinksExpireAt, em.Now().Add(time.Hour); !got.Equal(want) {
		t.Fatalf("linksExpireAt = %v, want %v", got, want)
	}
	files := append(append([]fileObj{}, v.Files.Snapshot...), v.Files.Changes...)
	files = append(files, *v.Files.Schema)
	for _, f := range files {
		st, body := download(t, f.URL)
		sum := sha256.Sum256(body)
		if st != 200 || int64(len(body)) != f.Bytes || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Fatalf("%s: status %d, %d bytes (want %d), sha256 match %v", f.URL, st, len(body), f.Bytes, hex.EncodeToString(sum[:]) == f.SHA256)
		}
	}
	tampered := strings.Replace(v.Files.Snapshot[0].URL, "sig=", "sig=0", 1)
	var eb errorBody
	if resp := call(t, "GET", tampered, "", nil, &eb); resp.StatusCode != 403 || eb.Error.Code != "link_invalid" {
		t.Fatalf("tampered: %d %s", resp.StatusCode, eb.Error.Code)
	}
	em.Advance(59 * time.Minute)
	if st, _ := download(t, v.Files.Snapshot[0].URL); st != 200 {
		t.Fatalf("after 59m: %d", st)
	}
	em.Advance(2 * time.Minute)
	if resp := call(t, "GET", v.Files.Snapshot[0].URL, "", nil, &eb); resp.StatusCode != 403 || eb.Error.Code != "link_expired" {
		t.Fatalf("after 61m: %d %s", resp.StatusCode, eb.Error.Code)
	}
	// Fresh links for only the files named.
	var l versionBody
	resp := call(t, "POST", em.URL()+"/v1/feeds/datasets/"+dsPermits+"/versions/2/links", em.APIKey(),
		strings.NewReader(`{"files": ["changes"]}`), &l)
	if resp.StatusCode != 200 || len(l.Files.Changes) != 1 || l.Files.Snapshot != nil || l.Files.Schema != nil {
		t.Fatalf("links: %d %+v", resp.StatusCode, l.Files)
	}
	if st, _ := download(t, l.Files.Changes[0].URL); st != 200 {
		t.Fatalf("fresh link: %d", st)
	}
}

func TestEmulator_VersionsAPI(t *testing.T) {
	em := mustEmulator(t)
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	var eb errorBody
	// Docs: a version no subscription delivers answers 409 not_subscribed.
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", &eb); st != 409 || eb.Error.Code != "not_subscribed" {
		t.Fatalf("unsubscribed: %d %s", st, eb.Error.Code)
	}
	mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{dsPermits}})
	tests := []struct {
		path string
		want int
	}{
		{"/v1/feeds/datasets/" + dsPermits + "/versions/1", 200},
		{"/v1/feeds/datasets/" + dsPermits + "/versions/2", 404},
		{"/v1/feeds/datasets/nope/versions/1", 404},
		{"/v1/feeds/datasets/" + dsPermits, 200},
		{"/v1/feeds/datasets/" + dsPermits + "/schema", 200},
		{"/v1/feeds/datasets/" + dsPermits + "/schema?version=1", 200},
		{"/v1/feeds/datasets/" + dsPermits + "/schemas", 200},
		{"/v1/feeds/datasets", 200},
		{"/v1/feeds/datasets?limit=201", 400},
		{"/v1/places", 200},
		{"/v1/topics", 200},
		{"/v1/nothing", 404},
	}
	for _, tt := range tests {
		if got := apiGet(t, em, tt.path, nil); got != tt.want {
			t.Errorf("GET %s = %d, want %d", tt.path, got, tt.want)
		}
	}
	var ds struct {
		ID      string `json:"id"`
		Keyed   bool   `json:"keyed"`
		Status  string `json:"status"`
		Current struct {
			Version       int    `json:"version"`
			SchemaVersion string `json:"schemaVersion"`
		} `json:"current"`
		Place struct {
			Kind string `json:"kind"`
		} `json:"place"`
	}
	apiGet(t, em, "/v1/feeds/datasets/"+dsPermits, &ds)
	if ds.Status != "available" || ds.Current.Version != 1 || !ds.Keyed || ds.Place.Kind != "county" {
		t.Fatalf("dataset = %+v", ds)
	}
	var places struct {
		Places []struct {
			ID            string         `json:"id"`
			DatasetCount  int            `json:"datasetCount"`
			DatasetCounts map[string]int `json:"datasetCounts"`
		} `json:"places"`
	}
	apiGet(t, em, "/v1/places?state=fl", &places)
	var ids []string
	for _, p := range places.Places {
		ids = append(ids, p.ID)
	}
	if got, want := strings.Join(ids, ","), "fl-orange,fl,fl-counties"; got != want {
		t.Fatalf("places = %s, want %s", got, want)
	}
	if places.Places[0].DatasetCount != 1 || places.Places[0].DatasetCounts["development-activity"] != 1 {
		t.Fatalf("counts = %+v", places.Places[0])
	}
}

// subscriptions-manifest-files.txt: "GET /v1/places lists the places in
// your workspace's coverage: its counties, their states, each state's
// counties and us", each with "its state (null for us)"; "a national one
// with any coverage". The emulator lists us without being seeded with it,
// and a subscription may name it.
func TestEmulator_PlacesListUs(t *testing.T) {
	em := mustEmulator(t)
	type place struct {
		ID           string  `json:"id"`
		Kind         string  `json:"kind"`
		State        *string `json:"state"`
		DatasetCount int     `json:"datasetCount"`
	}
	list := func(query string) []place {
		var body struct{ Places []place }
		if st := apiGet(t, em, "/v1/places"+query, &body); st != 200 {
			t.Fatalf("GET /v1/places%s = %d", query, st)
		}
		return body.Places
	}
	all := list("")
	last := all[len(all)-1]
	if last.ID != "us" || last.Kind != "us" || last.State != nil {
		t.Fatalf("places = %+v, want us last, kind us, state null", all)
	}
	for _, p := range list("?state=fl") {
		if p.ID == "us" {
			t.Fatalf("?state=fl lists us: %+v", p)
		}
	}
	if got := list("?kind=us"); len(got) != 1 || got[0].ID != "us" {
		t.Fatalf("?kind=us = %+v", got)
	}
	if err := em.AddDataset(DatasetSpec{ID: "ds_us_permits", Title: "National permits", PlaceID: "us", Columns: permitColumns()}); err != nil {
		t.Fatal(err)
	}
	if got := list("?kind=us"); got[0].DatasetCount != 1 {
		t.Fatalf("us counts %d datasets, want the national one", got[0].DatasetCount)
	}
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"us"}})
	var ds struct {
		Datasets []struct{ ID string } `json:"datasets"`
	}
	apiGet(t, em, "/v1/feeds/datasets?subscription="+sub, &ds)
	if len(ds.Datasets) != 1 || ds.Datasets[0].ID != "ds_us_permits" {
		t.Fatalf("a subscription to us delivers %+v, want the national dataset", ds.Datasets)
	}
	em.SetCoverage([]string{})
	for _, p := range list("") {
		if p.ID == "us" {
			t.Fatal("a workspace with no coverage lists us")
		}
	}
}
