package emulator

import (
	"strings"
	"testing"
	"time"
)

// Docs (feed-events.txt): "feed.dataset.resync_required carries one reason.
// When several apply, the first of these wins: 1. record_ids_changed 2.
// first_version 3. previous_unavailable, when the version does not change the
// schema 4. key_columns_changed, when the schema change includes the key 5.
// schema_changed".
func TestEmulator_ResyncPrecedence(t *testing.T) {
	cols := permitColumns()
	minor := append(permitColumns(), Column{Name: "units", Type: "integer"})
	tests := []struct {
		name      string
		reRelease bool
		opts      []PublishOption
		rows      func([]Row) []Row
		want      string
	}{
		{"ids replaced over a MAJOR change", false,
			[]PublishOption{WithReplacedIDs(1), WithSchema(cols[:7], []string{"permit_number"})},
			func(r []Row) []Row { return only(r, cols[:7]) }, "record_ids_changed"},
		{"ids replaced over a re-release", true, []PublishOption{WithReplacedIDs(0.5)}, nil, "record_ids_changed"},
		{"re-release without a schema change", true, nil, nil, "previous_unavailable"},
		{"re-release with a MINOR change", true, []PublishOption{WithSchema(minor, []string{"permit_number"})}, nil, "schema_changed"},
		{"re-release with a key change", true, []PublishOption{WithSchema(cols, []string{"permit_number", "issued"}), SkipReview()}, nil, "key_columns_changed"},
		{"key change", false, []PublishOption{WithSchema(cols, []string{"permit_number", "issued"}), SkipReview()}, nil, "key_columns_changed"},
		{"column retyped", false, []PublishOption{WithSchema(append(cols[:6:6], Column{Name: "extra", Type: "string"}, cols[7]), []string{"permit_number"}), SkipReview()}, nil, "schema_changed"},
		{"MINOR change alone", false, []PublishOption{WithSchema(minor, []string{"permit_number"})}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em := mustEmulator(t)
			sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
			mustPublish(t, em, permits(10, "P-"))
			if tt.reRelease {
				if err := em.ReRelease(dsPermits, 1); err != nil {
					t.Fatal(err)
				}
			}
			rows := permits(10, "P-")
			if tt.rows != nil {
				rows = tt.rows(rows)
			}
			rel := mustPublish(t, em, rows, tt.opts...)
			if rel.Held || rel.ResyncReason != tt.want {
				t.Fatalf("release = %+v, want reason %q", rel, tt.want)
			}
			evs := allEvents(t, em, sub)
			last := evs[len(evs)-1]
			if tt.want == "" {
				if last.Type != "feed.dataset.updated" {
					t.Fatalf("last event %s", last.Type)
				}
				return
			}
			if last.Type != "feed.dataset.resync_required" || last.Data.Reason != tt.want {
				t.Fatalf("last event = %s(%s)", last.Type, last.Data.Reason)
			}
		})
	}
}

// Docs (subscriptions-manifest-files.txt): status "not_built until a
// subscription includes the dataset, then building until its first version
// is sent; held or failed while its first version waits on Ploti's staff; or
// awaiting_release"; docs/wire.md 8.4: a delayed for a dataset with no version
// carries version null.
func TestEmulator_DatasetStatus(t *testing.T) {
	em := mustEmulator(t)
	status := func() string {
		var d struct {
			Status  string `json:"status"`
			Current any    `json:"current"`
		}
		apiGet(t, em, "/v1/feeds/datasets/"+dsPermits, &d)
		return d.Status
	}
	if got := status(); got != "not_built" {
		t.Fatalf("status = %s, want not_built", got)
	}
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	if got := status(); got != "building" {
		t.Fatalf("status = %s, want building", got)
	}
	em.SetDatasetStatus(dsPermits, "awaiting_release")
	if got := status(); got != "awaiting_release" {
		t.Fatalf("status = %s", got)
	}
	em.SetDatasetStatus(dsPermits, "")
	rel := mustPublish(t, em, append(permits(3, "P-"), permit("P-1", "1.00", 1)))
	if !rel.Held || rel.HoldReason != "key_violation" {
		t.Fatalf("release = %+v", rel)
	}
	if got := status(); got != "held" {
		t.Fatalf("status = %s, want held", got)
	}
	evs := allEvents(t, em, sub)
	if got := eventTypes(evs); got != "added delayed(data_check)" || evs[1].Data.Version != nil {
		t.Fatalf("events = %s (version %v)", got, evs[1].Data.Version)
	}
	var m manifestBody
	apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", &m)
	if len(m.Unavailable) != 1 || m.Unavailable[0].Reason != "held" {
		t.Fatalf("manifest unavailable = %+v", m.Unavailable)
	}
	// "Nothing more arrives for that dataset until the hold ends": no stale.
	em.Advance(72 * time.Hour)
	if got := eventTypes(allEvents(t, em, sub)); got != "added delayed(data_check)" {
		t.Fatalf("events while held = %s", got)
	}
	// A newer version replaces the held one: the first version sent.
	rel = mustPublish(t, em, permits(3, "P-"))
	if rel.Held || rel.Version != 2 || rel.ResyncReason != "first_version" {
		t.Fatalf("replacement = %+v", rel)
	}
	if got := status(); got != "available" {
		t.Fatalf("status = %s", got)
	}
}

func TestEmulator_DatasetsListAndPreview(t *testing.T) {
	em := mustEmulator(t)
	em.AddPlace(Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	for i, spec := range []DatasetSpec{
		{ID: "ds_a", Title: "Alpha", PlaceID: "fl-seminole", Topic: "development-activity"},
		{ID: "ds_b", Title: "Beta", PlaceID: "fl", Topic: ""},
		{ID: "ds_c", Title: "Gamma", PlaceID: "fl-seminole", AlsoCovers: []string{"fl-orange"}, Topic: "parcels-property"},
	} {
		spec.Columns = []Column{{Name: "x", Type: "integer"}}
		if err := em.AddDataset(spec); err != nil {
			t.Fatalf("dataset %d: %v", i, err)
		}
	}
	type list struct {
		Datasets []struct {
			ID string `json:"id"`
		} `json:"datasets"`
		NextCursor *string `json:"nextCursor"`
	}
	ids := func(l list) string {
		var s []string
		for _, d := range l.Datasets {
			s = append(s, d.ID)
		}
		return strings.Join(s, ",")
	}
	tests := []struct{ query, want string }{
		{"", dsPermits + ",ds_a,ds_b,ds_c"},
		{"?place=fl-orange", dsPermits + ",ds_c"},
		{"?place=fl-counties", dsPermits + ",ds_a,ds_c"},
		{"?topic=development-activity", dsPermits + ",ds_a"},
		{"?topic=none", "ds_b"},
	}
	for _, tt := range tests {
		var l list
		if st := apiGet(t, em, "/v1/feeds/datasets"+tt.query, &l); st != 200 || ids(l) != tt.want {
			t.Errorf("%q: %d %s, want %s", tt.query, st, ids(l), tt.want)
		}
	}
	var page list
	apiGet(t, em, "/v1/feeds/datasets?limit=3", &page)
	if page.NextCursor == nil || len(page.Datasets) != 3 {
		t.Fatalf("page 1 = %+v", page)
	}
	apiGet(t, em, "/v1/feeds/datasets?limit=3&cursor="+*page.NextCursor, &page)
	if ids(page) != "ds_c" || page.NextCursor != nil {
		t.Fatalf("page 2 = %s", ids(page))
	}
	// "total is exact: a dataset over several of the places you name counts once."
	var pv struct {
		Total   int `json:"total"`
		ByTopic []struct {
			Topic *string `json:"topic"`
			Count int     `json:"count"`
		} `json:"byTopic"`
		ByPlace []struct {
			Place *string `json:"place"`
			Count int     `json:"count"`
		} `json:"byPlace"`
		Matching int `json:"matching"`
	}
	resp := call(t, "POST", em.URL()+"/v1/feeds/subscriptions/preview", em.APIKey(),
		strings.NewReader(`{"places": ["fl-orange", "fl-seminole"]}`), &pv)
	if resp.StatusCode != 200 || pv.Total != 3 || len(pv.ByPlace) == 0 || *pv.ByPlace[0].Place != "fl-seminole" || pv.ByPlace[0].Count != 2 ||
		len(pv.ByTopic) == 0 || *pv.ByTopic[0].Topic != "development-activity" || pv.ByTopic[0].Count != 2 {
		t.Fatalf("preview: %d %+v", resp.StatusCode, pv)
	}
	if st := call(t, "POST", em.URL()+"/v1/feeds/subscriptions/preview", em.APIKey(), strings.NewReader(``), nil).StatusCode; st != 400 {
		t.Fatalf("empty preview: %d", st)
	}
	if len(em.Subscriptions()) != 0 {
		t.Fatalf("a preview created a subscription")
	}
}
