package ploti

import (
	"encoding/json"
	"testing"
)

func TestFiles_acceptListOrObject(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
	}{
		{"list", `{"changes": [{"url": "a"}, {"url": "b"}]}`, 2},
		{"one object", `{"changes": {"url": "a"}}`, 1},
		{"null", `{"changes": null}`, 0},
		{"absent", `{}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Files
			if err := json.Unmarshal([]byte(tc.in), &f); err != nil {
				t.Fatal(err)
			}
			if got := len(f.Changes); got != tc.want {
				t.Fatalf("len(changes) = %d, want %d", got, tc.want)
			}
		})
	}
	var f Files
	if err := json.Unmarshal([]byte(`{"snapshot": "nope"}`), &f); err == nil {
		t.Fatal("a string is neither a file nor a list of files")
	}
}

func TestEvent_decodesDataAndTopLevelLinks(t *testing.T) {
	var e Event
	in := `{"id":"evt_1","type":"feed.dataset.updated","timestamp":"2026-11-20T10:00:01Z","subscriptionId":"sub_1",
		"data":{"datasetId":"ds_x","version":7,"previousVersion":5,"schemaVersion":"2.1"},
		"links":{"version":"https://api.ploti.ai/v1/feeds/datasets/ds_x/versions/7"}}`
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		t.Fatal(err)
	}
	if e.Data.DatasetID != "ds_x" || *e.Data.Version != 7 || *e.Data.PreviousVersion != 5 || e.Data.Links == nil || e.Data.Links.Version == "" {
		t.Fatalf("decoded %+v", e.Data)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	var ping Event
	if err := json.Unmarshal([]byte(`{"id":"p","type":"ping","timestamp":"2026-11-20T10:00:01Z","data":{}}`), &ping); err != nil || ping.IsFeed() {
		t.Fatalf("ping: %v feed=%v", err, ping.IsFeed())
	}
}

// One odd event is its dataset's bad input, not the whole page's: the page
// decodes, the event keeps its id and dataset, and Validate reports it.
func TestEventPage_oddEventDoesNotSpoilThePage(t *testing.T) {
	in := `{"events": [
		{"id": "evt_1", "type": "feed.dataset.updated", "timestamp": "2026-11-20T10:00:01Z", "data": {"datasetId": "ds_a", "version": 2, "previousVersion": 1}},
		{"id": "evt_2", "type": "feed.dataset.updated", "timestamp": "yesterday", "data": {"datasetId": "ds_b", "version": 2}},
		{"id": "evt_3", "type": "feed.dataset.schema_changed", "timestamp": "2026-11-20T10:00:01Z", "data": {"datasetId": "ds_c", "version": "two"}}],
		"nextCursor": "c3"}`
	var p EventPage
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 3 || p.Events[0].Validate() != nil {
		t.Fatalf("page: %+v", p)
	}
	for i, want := range []string{"ds_b", "ds_c"} {
		e := p.Events[i+1]
		if e.Data.DatasetID != want || e.Validate() == nil || e.DecodeErr == nil {
			t.Fatalf("event %s: dataset %q, validate %v", e.ID, e.Data.DatasetID, e.Validate())
		}
	}
}

func TestFiles_singleFilesAcceptAList(t *testing.T) {
	var f Files
	in := `{"snapshot": [{"url": "s"}], "idMap": [{"url": "m", "sha256": "ab"}], "schema": {"url": "x"}, "changes": null}`
	if err := json.Unmarshal([]byte(in), &f); err != nil {
		t.Fatal(err)
	}
	if f.IDMap == nil || f.IDMap.URL != "m" || f.Schema == nil || f.Schema.URL != "x" || len(f.Snapshot) != 1 {
		t.Fatalf("files: %+v", f)
	}
	var none Files
	if err := json.Unmarshal([]byte(`{"idMap": null}`), &none); err != nil || none.IDMap != nil || none.Schema != nil {
		t.Fatalf("null files: %+v %v", none, err)
	}
}
