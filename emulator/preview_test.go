package emulator

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

type previewAnswer struct {
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
	Datasets []struct {
		ID        string   `json:"id"`
		MatchedBy []string `json:"matchedBy"`
		Place     *struct {
			ID string `json:"id"`
		} `json:"place"`
	} `json:"datasets"`
	NextCursor *string `json:"nextCursor"`
}

func (p previewAnswer) ids() string {
	var s []string
	for _, d := range p.Datasets {
		s = append(s, d.ID)
	}
	return strings.Join(s, ",")
}

// previewWorld adds Seminole and three datasets to mustEmulator's world:
// ds_a (Seminole, development), ds_b (the state, no topic), ds_c (filed
// under no county, covering Seminole and Orange; parcels).
func previewWorld(t *testing.T) *Emulator {
	t.Helper()
	em := mustEmulator(t)
	em.AddPlace(Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	em.AddTopic("parcels-property", "Parcels and property")
	for _, spec := range []DatasetSpec{
		{ID: "ds_a", Title: "Alpha", PlaceID: "fl-seminole", Topic: "development-activity"},
		{ID: "ds_b", Title: "Beta", PlaceID: "fl"},
		{ID: "ds_c", Title: "Gamma", AlsoCovers: []string{"fl", "fl-seminole", "fl-orange"}, Topic: "parcels-property"},
	} {
		spec.Columns = []Column{{Name: "x", Type: "integer"}}
		if err := em.AddDataset(spec); err != nil {
			t.Fatal(err)
		}
	}
	return em
}

func preview(t *testing.T, em *Emulator, query, body string) (int, previewAnswer) {
	t.Helper()
	var pv previewAnswer
	resp := call(t, "POST", em.URL()+"/v1/feeds/subscriptions/preview"+query, em.APIKey(), strings.NewReader(body), &pv)
	return resp.StatusCode, pv
}

// subscriptions-manifest-files.txt, "Preview before you subscribe":
// "datasets is one page. Narrow it with q (title search), place, topic
// (none for no topic), matchedBy and sort (place, title or updated).
// matching says how many are left after them."
func TestEmulator_Preview(t *testing.T) {
	ctx := context.Background()
	em := previewWorld(t)
	// ds_a released last, the permits first: sort=updated puts ds_a first.
	// A subscription includes both, or their files are not built.
	mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{dsPermits, "ds_a"}})
	if _, err := em.Publish(ctx, dsPermits, []Row{permit("P-1", "1.00", 1)}); err != nil {
		t.Fatal(err)
	}
	em.Advance(time.Hour)
	if _, err := em.Publish(ctx, "ds_a", []Row{{"x": int64(1)}}); err != nil {
		t.Fatal(err)
	}
	body := `{"places": ["fl-seminole"], "datasetIds": ["ds_b", "ds_a", "` + dsPermits + `"]}`
	tests := []struct {
		name, query, want string
		matching          int
	}{
		{"every dataset, the list's order", "", dsPermits + ",ds_a,ds_b,ds_c", 4},
		{"q searches titles", "?q=alp", "ds_a", 1},
		{"place", "?place=fl-orange", dsPermits + ",ds_c", 2},
		{"topic none", "?topic=none", "ds_b", 1},
		{"matchedBy places", "?matchedBy=places", "ds_a,ds_c", 2},
		{"matchedBy datasetIds", "?matchedBy=datasetIds", dsPermits + ",ds_a,ds_b", 3},
		{"sort title", "?sort=title", "ds_a,ds_b,ds_c," + dsPermits, 4},
		{"sort place (ds_c's is its first county)", "?sort=place", "ds_b," + dsPermits + ",ds_a,ds_c", 4},
		{"sort updated: newest first, unreleased last", "?sort=updated", "ds_a," + dsPermits + ",ds_b,ds_c", 4},
		{"a page", "?sort=title&limit=3", "ds_a,ds_b,ds_c", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, pv := preview(t, em, tt.query, body)
			if st != 200 || pv.ids() != tt.want || pv.Matching != tt.matching || pv.Total != 4 {
				t.Fatalf("%d: %s matching %d total %d, want %s matching %d total 4", st, pv.ids(), pv.Matching, pv.Total, tt.want, tt.matching)
			}
		})
	}
	// matchedBy on each dataset: ds_a is both in a named place and named.
	_, pv := preview(t, em, "?q=alp", body)
	if got := pv.Datasets[0].MatchedBy; !slices.Equal(got, []string{"places", "datasetIds"}) {
		t.Fatalf("ds_a matchedBy = %v", got)
	}
	// Paging: the next page goes on where the first stopped.
	_, p1 := preview(t, em, "?sort=title&limit=3", body)
	if p1.NextCursor == nil {
		t.Fatal("a page short of matching has no nextCursor")
	}
	_, p2 := preview(t, em, "?sort=title&limit=3&cursor="+*p1.NextCursor, body)
	if p2.ids() != dsPermits || p2.NextCursor != nil {
		t.Fatalf("page 2 = %s next %v", p2.ids(), p2.NextCursor)
	}
	// "byTopic and byPlace count the same datasets, by primary topic (null
	// for none) and by the place each is filed under."
	// A JSON object cannot key by null: each is a list of {id, count}.
	raw, _ := json.Marshal(map[string]any{"byTopic": pv.ByTopic, "byPlace": pv.ByPlace})
	if want := `{"byPlace":[{"place":"fl-seminole","count":2},{"place":"fl","count":1},{"place":"fl-orange","count":1}],` +
		`"byTopic":[{"topic":"development-activity","count":2},{"topic":"parcels-property","count":1},{"topic":null,"count":1}]}`; string(raw) != want {
		t.Fatalf("byPlace and byTopic\n%s\nwant\n%s", raw, want)
	}
	for _, q := range []string{"?sort=size", "?matchedBy=topics", "?cursor=nope", "?limit=201"} {
		if st, _ := preview(t, em, q, body); st != 400 {
			t.Errorf("%s: %d, want 400", q, st)
		}
	}
	// "The 25-subscription limit does not apply to a preview."
	for i := 1; i < MaxSubscriptions; i++ { // the one above, and 24 more
		mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	}
	if st, _ := preview(t, em, "", body); st != 200 {
		t.Fatalf("preview at the subscription limit: %d", st)
	}
}

// "A subscription names at least one place or dataset", "A workspace may
// have at most 25 subscriptions at a time. Deleting one makes room for
// another", "the 500 places a subscription may name", and topics from the
// fixed list ("GET /v1/topics returns the list").
func TestEmulator_SubscriptionLimits(t *testing.T) {
	em := previewWorld(t)
	post := func(body string) (int, errorBody) {
		var eb errorBody
		return call(t, "POST", em.URL()+"/v1/feeds/subscriptions", em.APIKey(), strings.NewReader(body), &eb).StatusCode, eb
	}
	places := func(n int) string {
		return `{"places": [` + strings.TrimSuffix(strings.Repeat(`"fl-orange",`, n), ",") + `]}`
	}
	if st, eb := post(places(MaxPlaces + 1)); st != 400 || eb.Error.Code != "invalid_input" {
		t.Fatalf("501 places: %d %+v", st, eb)
	}
	if st, _ := post(`{"places": ["fl-orange"], "topics": ["permits"]}`); st != 400 {
		t.Fatalf("an unknown topic: %d, want 400", st)
	}
	var pv previewAnswer
	if st := call(t, "POST", em.URL()+"/v1/feeds/subscriptions/preview", em.APIKey(), strings.NewReader(`{"places": ["fl-orange"], "topics": ["permits"]}`), &pv).StatusCode; st != 400 {
		t.Fatalf("preview with an unknown topic: %d, want 400", st)
	}
	if st, _ := post(places(MaxPlaces)); st != 201 {
		t.Fatalf("500 places: %d", st)
	}
	for i := 1; i < MaxSubscriptions; i++ {
		if st, eb := post(`{"places": ["fl-orange"], "topics": ["parcels-property"]}`); st != 201 {
			t.Fatalf("subscription %d: %d %+v", i+1, st, eb)
		}
	}
	st, eb := post(`{"places": ["fl-orange"]}`)
	if st != http.StatusConflict || eb.Error.Code != "subscription_limit" {
		t.Fatalf("the 26th: %d %+v, want 409 subscription_limit", st, eb)
	}
	if err := em.DeleteSubscription(em.Subscriptions()[0]); err != nil {
		t.Fatal(err)
	}
	if st, _ := post(`{"places": ["fl-orange"]}`); st != 201 {
		t.Fatalf("after a delete: %d, want 201", st)
	}
}

// GET /v1/feeds/datasets: "Narrow it by place, topic, subscription or
// updatedSince", and "the updatedSince filter ... compares against"
// current.publishedAt.
func TestEmulator_DatasetsFilters(t *testing.T) {
	ctx := context.Background()
	em := previewWorld(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-seminole"}})
	mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{dsPermits}}) // or its files are not built
	if _, err := em.Publish(ctx, dsPermits, []Row{permit("P-1", "1.00", 1)}); err != nil {
		t.Fatal(err)
	}
	em.Advance(time.Hour)
	cut := em.Now().Format(time.RFC3339)
	if _, err := em.Publish(ctx, "ds_a", []Row{{"x": int64(1)}}); err != nil {
		t.Fatal(err)
	}
	type list struct {
		Datasets []struct {
			ID string `json:"id"`
		} `json:"datasets"`
	}
	ids := func(q string) string {
		var l list
		if st := apiGet(t, em, "/v1/feeds/datasets"+q, &l); st != 200 {
			t.Fatalf("%s: %d", q, st)
		}
		var s []string
		for _, d := range l.Datasets {
			s = append(s, d.ID)
		}
		return strings.Join(s, ",")
	}
	for q, want := range map[string]string{
		"?subscription=" + sub:                   "ds_a,ds_c",
		"?updatedSince=" + cut:                   "ds_a",
		"?updatedSince=2020-01-01T00:00:00Z":     dsPermits + ",ds_a",
		"?subscription=" + sub + "&topic=none":   "",
		"?place=fl-orange&updatedSince=" + cut:   "",
		"?place=fl-seminole&updatedSince=" + cut: "ds_a",
	} {
		if got := ids(q); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
	if st := apiGet(t, em, "/v1/feeds/datasets?updatedSince=yesterday", nil); st != 400 {
		t.Errorf("a bad updatedSince: %d, want 400", st)
	}
	if st := apiGet(t, em, "/v1/feeds/datasets?subscription=sub_nope", nil); st != 404 {
		t.Errorf("an unknown subscription: %d, want 404", st)
	}
}

// "Its place.id and its rows' _ploti_place_id still name one county: the
// county the dataset is filed under or, when it is filed under none, the
// first county it covers."
func TestEmulator_PlaceOfADatasetFiledUnderNone(t *testing.T) {
	ctx := context.Background()
	em := previewWorld(t)
	if _, err := em.Publish(ctx, "ds_c", []Row{{"x": int64(1)}, {"x": int64(2)}}); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Place *struct {
			ID   string `json:"id"`
			Kind string `json:"kind"`
		} `json:"place"`
	}
	apiGet(t, em, "/v1/feeds/datasets/ds_c", &d)
	if d.Place == nil || d.Place.ID != "fl-seminole" || d.Place.Kind != "county" {
		t.Fatalf("place = %+v, want fl-seminole (its first county; fl is a state)", d.Place)
	}
	snap, err := em.SnapshotFiles(ctx, "ds_c", 1)
	if err != nil {
		t.Fatal(err)
	}
	got := queryRows(t, testDB(t), "SELECT DISTINCT _ploti_place_id FROM "+parquetList(snap))
	if !slices.Equal(got, []string{"fl-seminole"}) {
		t.Fatalf("rows' _ploti_place_id = %v, want [fl-seminole]", got)
	}
	// Still listed under each place it covers.
	var l struct {
		Datasets []struct{ ID string } `json:"datasets"`
	}
	apiGet(t, em, "/v1/feeds/datasets?place=fl-orange", &l)
	if len(l.Datasets) != 2 {
		t.Fatalf("under fl-orange: %+v", l.Datasets)
	}
}
