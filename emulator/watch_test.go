package emulator

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// watchBody is POST .../watch and an item of GET /v1/datasets/watches.
type watchBody struct {
	DatasetID  string     `json:"datasetId"`
	Title      string     `json:"title"`
	WatchedAt  time.Time  `json:"watchedAt"`
	Version    *int       `json:"version"`
	PromotedAt *time.Time `json:"promotedAt"`
	Watching   *bool      `json:"watching"`
}

func postWatch(tb testing.TB, em *Emulator, ds string) (int, watchBody, errorBody) {
	tb.Helper()
	var raw struct {
		watchBody
		errorBody
	}
	st := call(tb, "POST", em.URL()+"/v1/datasets/"+ds+"/watch", em.APIKey(), nil, &raw).StatusCode
	return st, raw.watchBody, raw.errorBody
}

func listWatches(tb testing.TB, em *Emulator) []watchBody {
	tb.Helper()
	var out struct {
		Watches []watchBody `json:"watches"`
	}
	if st := apiGet(tb, em, "/v1/datasets/watches", &out); st != 200 {
		tb.Fatalf("watches: status %d", st)
	}
	return out.Watches
}

// Docs: "Watching a dataset twice changes nothing." docs/wire.md 9: the same
// watchedAt; DELETE answers watching false, also when it was not watched;
// the list carries each dataset's current version and promotedAt.
func TestWatch_AddListRemove(t *testing.T) {
	em := mustEmulator(t)
	st, w, _ := postWatch(t, em, dsPermits)
	if st != 200 || w.DatasetID != dsPermits || w.Version != nil || !w.WatchedAt.Equal(DefaultStart) {
		t.Fatalf("first watch: %d %+v", st, w)
	}
	em.Advance(time.Hour)
	rel := mustPublish(t, em, []Row{permit("P-1", "1.00", -81)})
	st, again, _ := postWatch(t, em, dsPermits)
	if st != 200 || !again.WatchedAt.Equal(w.WatchedAt) || again.Version == nil || *again.Version != rel.PlotiVersion {
		t.Fatalf("second watch: %d %+v, want watchedAt %v and version %d", st, again, w.WatchedAt, rel.PlotiVersion)
	}
	ws := listWatches(t, em)
	if len(ws) != 1 || ws[0].DatasetID != dsPermits || ws[0].Title != "Orange County Building Permits" ||
		ws[0].Version == nil || *ws[0].Version != rel.PlotiVersion || ws[0].PromotedAt == nil ||
		!ws[0].PromotedAt.Equal(DefaultStart.Add(time.Hour)) || !ws[0].WatchedAt.Equal(DefaultStart) {
		t.Fatalf("watches: %+v", ws)
	}
	for range 2 { // also when it was no longer watched
		var del watchBody
		st := call(t, "DELETE", em.URL()+"/v1/datasets/"+dsPermits+"/watch", em.APIKey(), nil, &del).StatusCode
		if st != 200 || del.DatasetID != dsPermits || del.Watching == nil || *del.Watching {
			t.Fatalf("unwatch: %d %+v", st, del)
		}
	}
	if ws := listWatches(t, em); len(ws) != 0 {
		t.Fatalf("watches after unwatch: %+v", ws)
	}
	if got := em.Watches(); len(got) != 0 {
		t.Fatalf("Watches() after unwatch: %+v", got)
	}
}

// docs/wire.md 9: unknown 404; coverage 409 outside_coverage; plan 409
// not_deliverable. Docs: watching "works on any Ploti plan" and is separate
// from Data Feeds: a dataset Data Feeds does not deliver can be watched.
func TestWatch_Errors(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(*Emulator)
		ds     string
		status int
		code   string
	}{
		{"unknown", func(*Emulator) {}, "ds_nope", 404, "not_found"},
		{"outside coverage", func(em *Emulator) { em.SetCoverage([]string{"fl-other"}) }, dsPermits, 409, "outside_coverage"},
		{"plan closed", func(em *Emulator) { em.SetPlanClosed(dsPermits, true) }, dsPermits, 409, "not_deliverable"},
		{"not in Data Feeds", func(em *Emulator) { em.SetDeliverable(dsPermits, false) }, dsPermits, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			em := mustEmulator(t)
			tc.setup(em)
			st, _, eb := postWatch(t, em, tc.ds)
			if st != tc.status || eb.Error.Code != tc.code {
				t.Fatalf("watch: %d %q, want %d %q", st, eb.Error.Code, tc.status, tc.code)
			}
			if tc.status == 200 {
				// watching is separate from Data Feeds: versions of a dataset
				// no subscription delivers are promoted and served
				rel := mustPublish(t, em, []Row{permit("P-1", "1.00", -81)})
				if st, p := getRows(t, em, tc.ds, ""); st != 200 || len(p.Rows) != 1 || *p.Version != rel.PlotiVersion {
					t.Fatalf("rows: %d %+v", st, p)
				}
			}
			for _, path := range []string{"", "/rows", "/changes?version=11"} {
				var eb errorBody
				st := apiGet(t, em, "/v1/datasets/"+tc.ds+path, &eb)
				if tc.status != 200 && (st != tc.status || eb.Error.Code != tc.code) {
					t.Fatalf("GET %s: %d %q, want %d %q", path, st, eb.Error.Code, tc.status, tc.code)
				}
			}
		})
	}
}

// Docs: "A member may watch 100 datasets." docs/wire.md 9: the 101st is 409
// watch_limit; watching one of the 100 again still answers 200.
func TestWatch_Limit(t *testing.T) {
	em := mustEmulator(t)
	for i := range MaxWatches + 1 {
		if err := em.AddDataset(DatasetSpec{ID: fmt.Sprintf("ds_%03d", i), PlaceID: "fl-orange", Columns: permitColumns()}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range MaxWatches {
		if _, err := em.Watch(fmt.Sprintf("ds_%03d", i)); err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
	}
	st, _, eb := postWatch(t, em, fmt.Sprintf("ds_%03d", MaxWatches))
	if st != 409 || eb.Error.Code != "watch_limit" {
		t.Fatalf("101st watch: %d %+v", st, eb)
	}
	if _, err := em.Watch(fmt.Sprintf("ds_%03d", MaxWatches)); !errors.Is(err, ErrWatchLimit) {
		t.Fatalf("101st Watch: %v, want ErrWatchLimit", err)
	}
	if st, _, _ := postWatch(t, em, "ds_000"); st != 200 {
		t.Fatalf("watching a watched dataset at the limit: %d", st)
	}
	if n := len(listWatches(t, em)); n != MaxWatches {
		t.Fatalf("watches: %d", n)
	}
}

// Ploti's own numbers: a released version is promoted (11, 14, 17, ...,
// previousVersion chained), a held one only when released, a discarded one
// never; Data Feeds numbers go on 1, 2, 3 beside them.
func TestPlotiVersions_Promotion(t *testing.T) {
	em := mustEmulator(t)
	rows := []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81), permit("P-3", "3.00", -81)}
	r1 := mustPublish(t, em, rows)
	r2 := mustPublish(t, em, rows[:2], Hold("row_drop"))
	if r2.Held == false || r2.PlotiVersion != 0 {
		t.Fatalf("held release: %+v", r2)
	}
	if err := em.DiscardHeld(dsPermits); err != nil {
		t.Fatal(err)
	}
	r3 := mustPublish(t, em, rows[:2], Hold("row_drop"))
	em.Advance(time.Minute)
	r3, err := em.ReleaseHeld(dsPermits)
	if err != nil {
		t.Fatal(err)
	}
	r4 := mustPublish(t, em, rows)
	got := em.PlotiVersions(dsPermits)
	want := []PlotiVersion{
		{Version: 11, FeedVersion: 1, ChangeLog: "first", Added: 3},
		{Version: 14, PreviousVersion: 11, FeedVersion: 3, ChangeLog: "recorded", Removed: 1},
		{Version: 17, PreviousVersion: 14, FeedVersion: 4, ChangeLog: "recorded", Added: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("PlotiVersions: %+v", got)
	}
	for i := range want {
		g := got[i]
		g.PromotedAt = time.Time{}
		if g != want[i] {
			t.Fatalf("PlotiVersions[%d] = %+v, want %+v", i, g, want[i])
		}
	}
	if !got[1].PromotedAt.Equal(DefaultStart.Add(time.Minute)) {
		t.Fatalf("a held version is promoted when released: %v", got[1].PromotedAt)
	}
	if r1.PlotiVersion != 11 || r3.PlotiVersion != 14 || r4.PlotiVersion != 17 || r4.Version != 4 {
		t.Fatalf("Release.PlotiVersion: %d %d %d (feed v%d)", r1.PlotiVersion, r3.PlotiVersion, r4.PlotiVersion, r4.Version)
	}
}

// docs/wire.md 9: GET /v1/datasets/{id}: kind, version null before the first,
// the columns now (a MINOR column added shows), provenanceUrl.
func TestWatch_GetDataset(t *testing.T) {
	em := mustEmulator(t)
	if err := em.AddDataset(DatasetSpec{ID: "ds_doc", Title: "Minutes", Kind: "document", PlaceID: "fl-orange",
		ProvenanceURL: "https://example.org/minutes", Columns: []Column{{Name: "text", Type: "string"}}}); err != nil {
		t.Fatal(err)
	}
	var body watchDatasetBody
	if st := apiGet(t, em, "/v1/datasets/ds_doc", &body); st != 200 || body.Kind != "document" || body.Version != nil ||
		body.PromotedAt != nil || body.ProvenanceURL != "https://example.org/minutes" || len(body.Columns) != 1 {
		t.Fatalf("document before its first version: %d %+v", st, body)
	}
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81)})
	cols := append(permitColumns(), Column{Name: "units", Type: "integer"})
	rel := mustPublish(t, em, []Row{permit("P-1", "1.00", -81)}, WithSchema(cols, []string{"permit_number"}))
	body = watchDatasetBody{}
	if st := apiGet(t, em, "/v1/datasets/"+dsPermits, &body); st != 200 || body.Kind != "table" ||
		body.Version == nil || *body.Version != rel.PlotiVersion || len(body.Columns) != len(cols) ||
		string(body.Columns[len(cols)-1]) != `{"name":"units","type":"integer"}` || body.KeyColumns[0] != "permit_number" ||
		body.Place["id"] != "fl-orange" {
		t.Fatalf("table after a MINOR change: %d %+v", st, body)
	}
}
