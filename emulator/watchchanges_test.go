package emulator

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// summary renders entries as "change:id[<prev]" with "+row" when a row
// came with it.
func summary(es []changeEntry) string {
	var s []string
	for _, c := range es {
		x := c.Change + ":" + c.RecordID
		if c.PreviousRecordID != nil {
			x += "<" + *c.PreviousRecordID
		}
		if len(c.Row) > 0 && string(c.Row) != "null" {
			x += "+row"
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

// Docs: "datasets changes with the event's version lists exactly the rows
// it added, changed, removed or renamed [...] The added and changed rows of
// the latest version come with the row itself." docs/wire.md 9: row is null for
// an older version; removed carries no row.
func TestWatchChanges_Recorded(t *testing.T) {
	em := mustEmulator(t)
	r1 := mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81), permit("P-3", "3.00", -81)})
	r2 := mustPublish(t, em, []Row{permit("P-1", "1.50", -81), permit("P-3", "3.00", -81), permit("P-4", "4.00", -81)})
	st, ch := getChanges(t, em, dsPermits, r2.PlotiVersion, "")
	if st != 200 || ch.DatasetID != dsPermits || ch.Version != r2.PlotiVersion || ch.PreviousVersion == nil ||
		*ch.PreviousVersion != r1.PlotiVersion || ch.ChangeLog != "recorded" || ch.NextCursor != nil ||
		ch.Counts.Added != 1 || ch.Counts.Changed != 1 || ch.Counts.Removed != 1 || ch.Counts.Renamed != 0 {
		t.Fatalf("changes: %d %+v", st, ch)
	}
	if got, want := summary(ch.Changes), "changed:rec_d1_1+row added:rec_d1_6+row removed:rec_d1_2"; got != want {
		t.Fatalf("entries: %s, want %s", got, want)
	}
	if got := string(ch.Changes[0].Row); !strings.Contains(got, `"valuation":"1.50"`) || !strings.HasPrefix(got, `{"_ploti_record_id":"rec_d1_1","_ploti_place_id":"fl-orange",`) {
		t.Fatalf("changed row: %s", got)
	}
	raw := string(call(t, "GET", em.URL()+"/v1/datasets/"+dsPermits+"/changes?version="+itoa(r2.PlotiVersion), em.APIKey(), nil, nil).Header.Get("Content-Type"))
	if raw != "application/json" {
		t.Fatalf("content type %q", raw)
	}
	mustPublish(t, em, []Row{permit("P-1", "1.50", -81), permit("P-3", "3.00", -81), permit("P-4", "4.00", -81), permit("P-5", "5.00", -81)})
	_, ch = getChanges(t, em, dsPermits, r2.PlotiVersion, "")
	if got, want := summary(ch.Changes), "changed:rec_d1_1 added:rec_d1_6 removed:rec_d1_2"; got != want {
		t.Fatalf("entries of a version no longer the latest: %s, want %s (rows null)", got, want)
	}
	if string(ch.Changes[0].Row) != "null" {
		t.Fatalf("row of an older version: %s, want null", ch.Changes[0].Row)
	}
}

// Docs: "changeLog says what was recorded for the version"; only recorded
// lists rows. The natural kinds: first for a first version, ids_changed
// when staff replace ids; WithChangeLog forces any.
func TestWatchChanges_ChangeLogs(t *testing.T) {
	rows := []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81)}
	next := []Row{permit("P-1", "9.00", -81), permit("P-3", "3.00", -81)}
	cases := []struct {
		name    string
		publish func(*Emulator) Release
		log     string
		counts  string
		noPrev  bool
	}{
		{"first", func(em *Emulator) Release { return mustPublish(t, em, rows) }, "first", "2/0/0/0", true},
		{"first forced recorded", func(em *Emulator) Release { return mustPublish(t, em, rows, WithChangeLog("recorded")) }, "recorded", "2/0/0/0", true},
		{"counts_only", func(em *Emulator) Release {
			mustPublish(t, em, rows)
			return mustPublish(t, em, next, WithChangeLog("counts_only"))
		}, "counts_only", "1/1/1/0", false},
		{"full_refresh", func(em *Emulator) Release {
			mustPublish(t, em, rows)
			return mustPublish(t, em, next, WithChangeLog("full_refresh"))
		}, "full_refresh", "1/1/1/0", false},
		{"ids_changed by staff", func(em *Emulator) Release {
			mustPublish(t, em, rows)
			rel, err := em.ReplaceIDs(t.Context(), dsPermits, 1)
			if err != nil {
				t.Fatal(err)
			}
			return rel
		}, "ids_changed", "0/0/0/2", false},
		{"first forced on a later version", func(em *Emulator) Release {
			mustPublish(t, em, rows)
			return mustPublish(t, em, next, WithChangeLog("first"))
		}, "first", "1/1/1/0", false},
		{"unknown kind served as given", func(em *Emulator) Release {
			mustPublish(t, em, rows)
			return mustPublish(t, em, next, WithChangeLog("sideways"))
		}, "sideways", "1/1/1/0", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			em := mustEmulator(t)
			rel := tc.publish(em)
			st, ch := getChanges(t, em, dsPermits, rel.PlotiVersion, "")
			counts := fmt.Sprintf("%d/%d/%d/%d", ch.Counts.Added, ch.Counts.Changed, ch.Counts.Removed, ch.Counts.Renamed)
			if st != 200 || ch.ChangeLog != tc.log || counts != tc.counts || ch.NextCursor != nil {
				t.Fatalf("changes: %d %s %s %v, want %s %s", st, ch.ChangeLog, counts, ch.NextCursor, tc.log, tc.counts)
			}
			if wantRows := tc.log == "recorded"; (len(ch.Changes) > 0) != wantRows {
				t.Fatalf("%s lists %d entries", tc.log, len(ch.Changes))
			}
			if tc.log == "recorded" && summary(ch.Changes) != "added:rec_d1_1+row added:rec_d1_2+row" {
				t.Fatalf("entries: %s", summary(ch.Changes))
			}
			if tc.noPrev != (ch.PreviousVersion == nil) {
				t.Fatalf("previousVersion %v", ch.PreviousVersion)
			}
		})
	}
}

// Docs: a renamed record "now carries a new id". docs/wire.md 9: recordId is
// the new id, previousRecordId the old; counts.renamed; Data Feeds sends the
// same version as record_ids_changed with an id map.
func TestWatchChanges_Renamed(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81), permit("P-3", "3.00", -81)})
	rel := mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.50", -81), permit("P-4", "4.00", -81)},
		WithRenames("rec_d1_1", "rec_d1_2"))
	st, ch := getChanges(t, em, dsPermits, rel.PlotiVersion, "")
	if st != 200 || ch.ChangeLog != "recorded" || ch.Counts.Renamed != 2 || ch.Counts.Added != 1 || ch.Counts.Removed != 1 || ch.Counts.Changed != 0 {
		t.Fatalf("changes: %d %+v", st, ch)
	}
	if got, want := summary(ch.Changes), "renamed:rec_d1_4<rec_d1_1+row renamed:rec_d1_5<rec_d1_2+row added:rec_d1_6+row removed:rec_d1_3"; got != want {
		t.Fatalf("entries: %s, want %s", got, want)
	}
	if !strings.Contains(string(ch.Changes[1].Row), `"valuation":"2.50"`) {
		t.Fatalf("a renamed row carries its values now: %s", ch.Changes[1].Row)
	}
	if !rel.ResyncRequired || rel.ResyncReason != "record_ids_changed" {
		t.Fatalf("Data Feeds side: %+v", rel)
	}
	if evs := allEvents(t, em, sub); evs[len(evs)-1].Data.Reason != "record_ids_changed" {
		t.Fatalf("feed events: %s", eventTypes(evs))
	}
	if _, err := em.Publish(t.Context(), dsPermits, nil, WithRenames("rec_nope")); err == nil {
		t.Fatal("renaming an id that is not held: no error")
	}
}

// docs/wire.md 9: limit 500 by default, 1,000 at most; version required;
// cursors page; unknown version 404; past 90 days 410.
func TestWatchChanges_PagingAndErrors(t *testing.T) {
	em := mustEmulator(t)
	var rows []Row
	for i := range 1203 {
		rows = append(rows, permit(fmt.Sprintf("P-%04d", i), "1.00", -81))
	}
	r1 := mustPublish(t, em, rows[:2])
	rel := mustPublish(t, em, rows)
	_, ch := getChanges(t, em, dsPermits, rel.PlotiVersion, "")
	if len(ch.Changes) != 500 || ch.NextCursor == nil {
		t.Fatalf("default page: %d entries, next %v", len(ch.Changes), ch.NextCursor)
	}
	if _, ch := getChanges(t, em, dsPermits, rel.PlotiVersion, "&limit=1000"); len(ch.Changes) != 1000 {
		t.Fatalf("limit 1000: %d entries", len(ch.Changes))
	}
	all := allChanges(t, em, dsPermits, rel.PlotiVersion, 7)
	seen := map[string]bool{}
	for _, c := range all {
		if seen[c.RecordID] || c.Change != "added" {
			t.Fatalf("entry %+v twice or not added", c)
		}
		seen[c.RecordID] = true
	}
	if len(all) != 1201 {
		t.Fatalf("paged entries: %d, want 1201", len(all))
	}
	other := url.QueryEscape(*ch.NextCursor)
	for _, tc := range []struct {
		name, query string
		status      int
		code        string
	}{
		{"no version", "/changes", 400, "invalid_input"},
		{"bad version", "/changes?version=x", 400, "invalid_input"},
		{"limit 1001", "/changes?version=" + itoa(rel.PlotiVersion) + "&limit=1001", 400, "invalid_input"},
		{"limit 0", "/changes?version=" + itoa(rel.PlotiVersion) + "&limit=0", 400, "invalid_input"},
		{"unknown version", "/changes?version=12", 404, "not_found"},
		{"Data Feeds number", "/changes?version=2", 404, "not_found"},
		{"cursor of another version", "/changes?version=" + itoa(r1.PlotiVersion) + "&cursor=" + other, 400, "invalid_input"},
		{"garbage cursor", "/changes?version=" + itoa(rel.PlotiVersion) + "&cursor=zz", 400, "invalid_input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var eb errorBody
			if st := apiGet(t, em, "/v1/datasets/"+dsPermits+tc.query, &eb); st != tc.status || eb.Error.Code != tc.code {
				t.Fatalf("%d %q, want %d %q", st, eb.Error.Code, tc.status, tc.code)
			}
		})
	}
	em.Advance(Retention - time.Second)
	if st, _ := getChanges(t, em, dsPermits, r1.PlotiVersion, ""); st != 200 {
		t.Fatalf("just inside 90 days: %d", st)
	}
	em.Advance(2 * time.Second)
	var eb errorBody
	if st := apiGet(t, em, "/v1/datasets/"+dsPermits+"/changes?version="+itoa(r1.PlotiVersion), &eb); st != 410 || eb.Error.Code != "expired" {
		t.Fatalf("past 90 days: %d %q, want 410 expired", st, eb.Error.Code)
	}
}

// WithPreviousPlotiVersion: the chain skips the versions between, and the
// changes are measured from the named one.
func TestWatchChanges_PreviousVersionGap(t *testing.T) {
	em := mustEmulator(t)
	r1 := mustPublish(t, em, []Row{permit("P-1", "1.00", -81)})
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81)})
	r3 := mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81), permit("P-3", "3.00", -81)},
		WithPreviousPlotiVersion(r1.PlotiVersion))
	_, ch := getChanges(t, em, dsPermits, r3.PlotiVersion, "")
	if ch.PreviousVersion == nil || *ch.PreviousVersion != r1.PlotiVersion || summary(ch.Changes) != "added:rec_d1_3+row added:rec_d1_6+row" {
		t.Fatalf("changes: prev %v, %s", ch.PreviousVersion, summary(ch.Changes))
	}
	if _, err := em.Publish(t.Context(), dsPermits, nil, WithPreviousPlotiVersion(12)); err == nil {
		t.Fatal("an unknown previous Ploti version: no error")
	}
}

// SpoilWatch changes the answers of one dataset until it is cleared.
func TestSpoilWatch(t *testing.T) {
	em := mustEmulator(t)
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81)})
	rel := mustPublish(t, em, []Row{permit("P-1", "2.00", -81), permit("P-2", "3.00", -81)})
	var seen []string
	err := em.SpoilWatch(dsPermits, func(endpoint string, answer map[string]any) {
		seen = append(seen, endpoint)
		switch endpoint {
		case "changes":
			cs := answer["changes"].([]any)
			answer["changes"] = append(cs, cs[0]) // an id listed twice
		case "rows":
			answer["rows"].([]any)[0].(map[string]any)["valuation"] = "not a number"
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_, ch := getChanges(t, em, dsPermits, rel.PlotiVersion, "")
	_, rows := getRows(t, em, dsPermits, "")
	if len(ch.Changes) != 3 || ch.Changes[2].RecordID != ch.Changes[0].RecordID || str(t, rows.Rows[0]["valuation"]) != "not a number" ||
		strings.Join(seen, " ") != "changes rows" {
		t.Fatalf("spoiled: %s; row %s; seen %v", summary(ch.Changes), rows.Rows[0]["valuation"], seen)
	}
	if *rows.Version != rel.PlotiVersion || ch.Counts.Added != 1 {
		t.Fatalf("the rest of the answer: %+v %+v", rows.Version, ch.Counts)
	}
	em.SpoilWatch(dsPermits, nil)
	_, ch = getChanges(t, em, dsPermits, rel.PlotiVersion, "")
	if len(ch.Changes) != 2 {
		t.Fatalf("after SpoilWatch(nil): %s", summary(ch.Changes))
	}
	if err := em.SpoilWatch("ds_nope", nil); err == nil {
		t.Fatal("SpoilWatch of an unknown dataset: no error")
	}
}
