package emulator

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Docs (feed-events.txt): "When it is null, the dataset has no released
// version yet, and its first version arrives as feed.dataset.resync_required
// with reason first_version." A dataset that joins with a version gets added
// with it.
func TestEmulator_Events_FirstVersionAndAdded(t *testing.T) {
	em := mustEmulator(t)
	early := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-counties"}})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	late := mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{dsPermits}})
	mustPublish(t, em, []Row{permit("P-1", "2.00", 1)})

	evs := allEvents(t, em, early)
	if got, want := eventTypes(evs), "added resync_required(first_version) updated"; got != want {
		t.Fatalf("early = %s, want %s", got, want)
	}
	if evs[0].Data.Version != nil || evs[1].Data.PreviousVersion != nil || *evs[1].Data.Version != 1 {
		t.Fatalf("versions: %+v %+v", evs[0].Data, evs[1].Data)
	}
	if got, want := evs[2].Data.Links.Version, em.URL()+"/v1/feeds/datasets/"+dsPermits+"/versions/2"; got != want {
		t.Fatalf("links.version = %s, want %s", got, want)
	}
	if *evs[2].Data.PreviousVersion != 1 || evs[2].Data.SchemaVersion != "1.0" || evs[2].SubscriptionID != early {
		t.Fatalf("updated = %+v", evs[2])
	}
	lev := allEvents(t, em, late)
	if got, want := eventTypes(lev), "added updated"; got != want || *lev[0].Data.Version != 1 {
		t.Fatalf("late = %s, want %s", got, want)
	}
	ids := map[string]bool{}
	for _, e := range append(evs, lev...) {
		if ids[e.ID] || !strings.HasPrefix(e.ID, "evt_") {
			t.Fatalf("event id %s repeated or malformed", e.ID)
		}
		ids[e.ID] = true
	}
}

// Docs (feed-events.txt, "Reading the log").
func TestEmulator_Events_Cursors(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	for i := range 5 {
		mustPublish(t, em, []Row{permit("P-1", strings.Repeat("1", i+1)+".00", 1)})
	}
	// added, resync, 4 updated = 6 events
	path := "/v1/feeds/subscriptions/" + sub + "/events"
	t.Run("paging", func(t *testing.T) {
		var got []string
		cursor := ""
		for range 10 {
			var p eventsPage
			if st := apiGet(t, em, path+"?limit=4&cursor="+cursor, &p); st != 200 {
				t.Fatalf("status %d", st)
			}
			if len(p.Events) == 0 {
				if p.NextCursor != cursor {
					t.Fatalf("caught-up page moved the cursor")
				}
				break
			}
			for _, e := range p.Events {
				got = append(got, e.ID)
			}
			cursor = p.NextCursor
		}
		if len(got) != 6 {
			t.Fatalf("read %d events, want 6", len(got))
		}
	})
	t.Run("types filter advances the cursor", func(t *testing.T) {
		// "It advances even when a types filter matches nothing on the page."
		var p eventsPage
		apiGet(t, em, path+"?limit=2&types=feed.dataset.updated", &p)
		if len(p.Events) != 0 || p.NextCursor != Cursor(sub, 2) {
			t.Fatalf("page = %d events, cursor %s", len(p.Events), p.NextCursor)
		}
		apiGet(t, em, path+"?limit=500&types=feed.dataset.updated,feed.dataset.added&cursor="+p.NextCursor, &p)
		if len(p.Events) != 4 {
			t.Fatalf("filtered = %d, want 4", len(p.Events))
		}
	})
	tests := []struct {
		name, query string
		want        int
		code        string
	}{
		{"limit over 500", "?limit=501", 400, "invalid_input"},
		{"limit zero", "?limit=0", 400, "invalid_input"},
		{"limit 500", "?limit=500", 200, ""},
		{"garbage cursor", "?cursor=%25%25", 400, "invalid_input"},
		{"other subscription's cursor", "?cursor=" + Cursor("sub_9", 1), 400, "invalid_input"},
		{"cursor past newest", "?cursor=" + Cursor(sub, 7), 400, "invalid_input"},
		{"cursor at newest", "?cursor=" + Cursor(sub, 6), 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var eb errorBody
			if st := apiGet(t, em, path+tt.query, &eb); st != tt.want || eb.Error.Code != tt.code {
				t.Fatalf("status %d %q, want %d %q", st, eb.Error.Code, tt.want, tt.code)
			}
		})
	}
	t.Run("retention", func(t *testing.T) {
		// "Events are kept for 90 days": after that an old cursor and no
		// cursor answer 410 expired; the manifest's cursor works.
		em.Advance(91 * 24 * time.Hour)
		mustPublish(t, em, []Row{permit("P-1", "9.00", 1)})
		for _, q := range []string{"", "?cursor=" + Cursor(sub, 3)} {
			var eb errorBody
			if st := apiGet(t, em, path+q, &eb); st != 410 || eb.Error.Code != "expired" {
				t.Fatalf("%q: %d %s", q, st, eb.Error.Code)
			}
		}
		var m manifestBody
		apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", &m)
		var p eventsPage
		// the missed source check sent stale when the clock moved, and the
		// version before is past retention
		if st := apiGet(t, em, path+"?cursor="+Cursor(sub, 6), &p); st != 200 || eventTypes(p.Events) != "stale resync_required(previous_unavailable)" {
			t.Fatalf("cursor at pruned edge: %d, %s", st, eventTypes(p.Events))
		}
		if st := apiGet(t, em, path+"?cursor="+m.EventCursor, &p); st != 200 || len(p.Events) != 0 {
			t.Fatalf("manifest cursor: %d", st)
		}
	})
}

type manifestBody struct {
	SubscriptionID string `json:"subscriptionId"`
	EventCursor    string `json:"eventCursor"`
	Datasets       []struct {
		DatasetID     string   `json:"datasetId"`
		Version       int      `json:"version"`
		SchemaVersion string   `json:"schemaVersion"`
		Keyed         bool     `json:"keyed"`
		KeyColumns    []string `json:"keyColumns"`
		RowCount      int64    `json:"rowCount"`
		Files         struct {
			Snapshot []fileObj `json:"snapshot"`
			Schema   fileObj   `json:"schema"`
		} `json:"files"`
	} `json:"datasets"`
	Unavailable []struct {
		DatasetID string `json:"datasetId"`
		Version   *int   `json:"version"`
		Reason    string `json:"reason"`
	} `json:"unavailable"`
}

func TestEmulator_Manifest(t *testing.T) {
	em := mustEmulator(t)
	if err := em.AddDataset(DatasetSpec{ID: "ds_empty", PlaceID: "fl-orange", Columns: []Column{{Name: "a", Type: "integer"}}}); err != nil {
		t.Fatal(err)
	}
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1), permit("P-2", "1.00", 2)})
	var m manifestBody
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", &m); st != 200 {
		t.Fatalf("manifest: %d", st)
	}
	if len(m.Datasets) != 1 || m.Datasets[0].Version != 1 || m.Datasets[0].RowCount != 2 || !m.Datasets[0].Keyed {
		t.Fatalf("datasets = %+v", m.Datasets)
	}
	if len(m.Unavailable) != 1 || m.Unavailable[0].DatasetID != "ds_empty" || m.Unavailable[0].Reason != "building" {
		t.Fatalf("unavailable = %+v", m.Unavailable)
	}
	if m.EventCursor != Cursor(sub, 3) {
		t.Fatalf("eventCursor = %s", m.EventCursor)
	}
	if st, _ := download(t, m.Datasets[0].Files.Snapshot[0].URL); st != 200 {
		t.Fatalf("snapshot: %d", st)
	}
	mustPublish(t, em, []Row{permit("P-1", "2.00", 1)}, SkipReview())
	var old manifestBody
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest?asOf="+m.EventCursor, &old); st != 200 || old.Datasets[0].Version != 1 {
		t.Fatalf("asOf: %d %+v", st, old.Datasets)
	}
	var eb errorBody
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest?asOf="+Cursor(sub, 99), &eb); st != 400 {
		t.Fatalf("asOf past newest: %d", st)
	}
}

// Docs (schemas-and-holds.txt): "A MINOR change comes with a version that has
// changes to apply ... Records that did not change keep the value your table
// gives a new column, usually null, until you reload."
func TestEmulator_MinorSchemaChange_Truth(t *testing.T) {
	em := mustEmulator(t)
	ctx := context.Background()
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1), permit("P-2", "2.00", 2)})
	cols := append(permitColumns(), Column{Name: "units", Type: "integer"})
	r1, r2 := permit("P-1", "1.00", 1), permit("P-2", "3.00", 2)
	r1["units"], r2["units"] = 5, 7
	rel := mustPublish(t, em, []Row{r1, r2}, WithSchema(cols, []string{"permit_number"}))
	if rel.SchemaVersion != "1.1" || rel.SchemaBump != "minor" || rel.ResyncRequired || rel.Changed != 1 {
		t.Fatalf("release = %+v", rel)
	}
	evs := allEvents(t, em, sub)
	if got, want := eventTypes(evs), "added resync_required(first_version) schema_changed updated"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	var change struct {
		Bump  string `json:"bump"`
		Added []map[string]any
	}
	json.Unmarshal(evs[2].Data.SchemaChange, &change)
	if change.Bump != "minor" || len(change.Added) != 1 || change.Added[0]["name"] != "units" {
		t.Fatalf("schemaChange = %s", evs[2].Data.SchemaChange)
	}
	if _, ok := change.Added[0]["precision"]; !ok {
		t.Fatalf("added column lacks precision: null (docs: carry all three)")
	}
	tr, err := em.Truth(ctx, dsPermits, 2)
	if err != nil {
		t.Fatal(err)
	}
	db := testDB(t)
	got := queryRows(t, db, "SELECT permit_number, valuation, units FROM read_parquet('"+tr+"') ORDER BY 1")
	if want := []string{"P-1|1.00|∅", "P-2|3.00|7"}; !slices.Equal(got, want) {
		t.Fatalf("truth = %v, want %v", got, want)
	}
	var sch struct {
		SchemaVersion string           `json:"schemaVersion"`
		Columns       []map[string]any `json:"columns"`
	}
	apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/schema?version=1", &sch)
	if sch.SchemaVersion != "1.0" || len(sch.Columns) != 8 {
		t.Fatalf("schema v1 = %+v", sch)
	}
	if _, ok := sch.Columns[0]["precision"]; ok {
		t.Fatalf("columns carry precision on a string column")
	}
}

// Docs (schemas-and-holds.txt): a breaking schema change is held for review;
// "Its subscribers get feed.dataset.delayed once, naming the version that
// stays current"; released, "Its usual updated or resync_required follows,
// after schema_changed when the schema changed."
func TestEmulator_MajorSchemaChange_Held(t *testing.T) {
	tests := []struct {
		name    string
		key     []string
		drop    bool
		reason  string
		version string
	}{
		{"column removed", []string{"permit_number"}, true, "schema_changed", "2.0"},
		{"key changed", []string{"permit_number", "issued"}, false, "key_columns_changed", "2.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em := mustEmulator(t)
			sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
			mustPublish(t, em, []Row{permit("P-1", "1.00", 1), permit("P-2", "2.00", 2)})
			cols := permitColumns()
			rows := []Row{permit("P-1", "1.00", 1), permit("P-2", "2.00", 2)}
			if tt.drop {
				cols = cols[:len(cols)-1]
				for _, r := range rows {
					delete(r, "geometry")
				}
			}
			rel := mustPublish(t, em, rows, WithSchema(cols, tt.key))
			if !rel.Held || rel.HoldReason != "schema_change" || rel.SchemaVersion != tt.version {
				t.Fatalf("release = %+v", rel)
			}
			evs := allEvents(t, em, sub)
			if got, want := eventTypes(evs), "added resync_required(first_version) delayed(schema_review)"; got != want {
				t.Fatalf("events = %s, want %s", got, want)
			}
			if *evs[2].Data.Version != 1 {
				t.Fatalf("delayed names version %d, want 1", *evs[2].Data.Version)
			}
			if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/2", nil); st != 404 {
				t.Fatalf("held version visible: %d", st)
			}
			if _, err := em.ReleaseHeld(dsPermits); err != nil {
				t.Fatal(err)
			}
			evs = allEvents(t, em, sub)
			if got, want := eventTypes(evs[3:]), "schema_changed resync_required("+tt.reason+")"; got != want {
				t.Fatalf("after release = %s, want %s", got, want)
			}
			// A record keeps its id across a MAJOR change when matched.
			snap, _ := em.SnapshotFiles(context.Background(), dsPermits, 2)
			got := queryRows(t, testDB(t), "SELECT _ploti_record_id FROM "+parquetList(snap)+" ORDER BY 1")
			if want := []string{"rec_d1_1", "rec_d1_2"}; !slices.Equal(got, want) {
				t.Fatalf("ids = %v, want %v", got, want)
			}
		})
	}
}

func TestEmulator_RateLimit(t *testing.T) {
	em := mustEmulator(t)
	em.SetRateLimit(true)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	for i := range 20 {
		if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", nil); st != 200 {
			t.Fatalf("manifest %d: %d", i, st)
		}
	}
	var eb errorBody
	resp := call(t, "GET", em.URL()+"/v1/feeds/subscriptions/"+sub+"/manifest", em.APIKey(), nil, &eb)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || eb.Error.Code != "rate_limited" || ra < 50 || ra > 60 {
		t.Fatalf("21st manifest: %d %s Retry-After %q", resp.StatusCode, eb.Error.Code, resp.Header.Get("Retry-After"))
	}
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/events", nil); st != 200 {
		t.Fatalf("events under the 120 limit: %d", st)
	}
	em.Advance(time.Minute)
	if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest", nil); st != 200 {
		t.Fatalf("after a minute: %d", st)
	}
}

func TestEmulator_FailNext(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	em.FailNext("GET /v1/feeds/subscriptions/*/events", 503, 2)
	path := "/v1/feeds/subscriptions/" + sub + "/events"
	for i, want := range []int{503, 503, 200} {
		if got := apiGet(t, em, path, nil); got != want {
			t.Fatalf("call %d: %d, want %d", i, got, want)
		}
	}
}
