package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// A file's status is kept beside it at each clean close of a writer (the
// DuckDB engine's CloseWithSummary, a storage.SummaryCloser;
// docs/decisions.md 51): `status` reads it instead of opening a file of
// thousands of tables, while the file is in the state it was written for.

// storedStatus is the summary's payload: the Status as readStatus read it
// at the close, less what a reader derives (Detail, Readers), under the
// shape of this build's Status.
type storedStatus struct {
	Shape  string  `json:"shape"`
	Status *Status `json:"status"`
}

// statusShape names every field of Status, and of the types in it, with
// its JSON name and type: a build whose Status differs reads the file.
var statusShape = shapeOf(reflect.TypeOf(Status{}), map[reflect.Type]bool{})

func shapeOf(t reflect.Type, seen map[reflect.Type]bool) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "time" || seen[t] {
		return t.String()
	}
	seen[t] = true
	var b strings.Builder
	b.WriteString(t.String() + "{")
	for i := range t.NumField() {
		f := t.Field(i)
		fmt.Fprintf(&b, "%s %s %q;", f.Name, shapeOf(f.Type, seen), f.Tag.Get("json"))
	}
	return b.String() + "}"
}

// summarize is the payload CloseWithSummary keeps: the file's status now.
func summarize(ctx context.Context, db *storage.DB) ([]byte, error) {
	st, err := readStatus(ctx, db)
	if err != nil {
		return nil, err
	}
	for i := range st.Datasets {
		st.Datasets[i].Detail = ""
	}
	st.Readers = ""
	return json.Marshal(storedStatus{Shape: statusShape, Status: st})
}

// StoredStatus is the status kept beside the DuckDB file at path by its
// last writer, when the file is still in the state it was kept for (see
// backends.ReadSummary); false otherwise, and the caller opens the file
// (Reader.Status). It is what Reader.Status would read from the file.
func StoredStatus(path string) (*Status, bool) {
	b, ok := backends.ReadSummary(path)
	if !ok {
		return nil, false
	}
	var s storedStatus
	if json.Unmarshal(b, &s) != nil || s.Shape != statusShape || s.Status == nil || s.Status.Datasets == nil {
		return nil, false
	}
	st := s.Status
	st.Readers = backends.StorageReaders(st.StorageVersion)
	for i := range st.Datasets {
		st.Datasets[i].Detail = explain(st.Datasets[i])
	}
	return st, true
}
