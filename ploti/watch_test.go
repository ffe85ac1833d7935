package ploti

import (
	"encoding/json"
	"testing"
)

func TestIsRequestEvent(t *testing.T) {
	for typ, want := range map[string]bool{
		"data_request.ready": true, "research_request.question": true, "data_request.": false,
		"dataset.changed": false, "feed.dataset.updated": false, "ping": false, "data_requests.ready": false,
	} {
		if got := IsRequestEvent(typ); got != want {
			t.Errorf("IsRequestEvent(%q) = %v, want %v", typ, got, want)
		}
	}
}

// "The added and changed rows of the latest version come with the row
// itself": a null row, an absent one and a spooled one read right.
func TestChange_HasRow(t *testing.T) {
	var p ChangesPage
	in := `{"datasetId":"ds_a","version":3,"changeLog":"recorded","changes":[
		{"change":"added","recordId":"a","row":{"_ploti_record_id":"a"}},
		{"change":"changed","recordId":"b","row":null},
		{"change":"removed","recordId":"c"}]}`
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, false} {
		if got := p.Changes[i].HasRow(); got != want {
			t.Errorf("change %d HasRow = %v, want %v", i, got, want)
		}
	}
	if spooled := (Change{RowInFile: true}); !spooled.HasRow() {
		t.Error("a row moved to a file is a row")
	}
	for _, s := range []string{"recorded", "counts_only", "ids_changed", "full_refresh", "first"} {
		if !KnownChangeLog(s) {
			t.Errorf("%s is a change log the docs name", s)
		}
	}
	if KnownChangeLog("partial") || KnownChangeLog("") {
		t.Error("an unknown change log is known")
	}
}
