package storage

import (
	"encoding/json"
	"reflect"
	"testing"
)

// LoggedChanges: "one that existed at from and is gone is removed,
// whatever happened in between". A record the older version held as a,
// renamed to b and then to c, then removed, is one removed a; one added
// after from, renamed and removed came and went.
func TestNetChanges_renamedThenRemoved(t *testing.T) {
	row := json.RawMessage(`{}`)
	logged := []RecordChange{
		{RecordID: "b", Change: ChangeRenamed},
		{RecordID: "c", Change: ChangeRenamed},
		{RecordID: "n", Change: ChangeAdded},
		{RecordID: "m", Change: ChangeRenamed},
		{RecordID: "x", Change: ChangeRenamed, Row: row},
	}
	prev := map[string]string{"b": "a", "c": "b", "m": "n", "x": "w"}
	got := NetChanges(logged, prev)
	want := []RecordChange{
		{RecordID: "x", Change: ChangeRenamed, PreviousRecordID: "w", Row: row},
		{RecordID: "a", Change: ChangeRemoved},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("netChanges = %+v, want %+v", got, want)
	}
}
