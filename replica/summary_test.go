package replica

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// summarized is a replica file with one dataset, closed with its status
// kept beside it; it returns the status readStatus reads from the file.
func summarized(t *testing.T) (string, *Status) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.duckdb")
	db, err := backends.Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		if err := tx.PutSubscription(ctx, &storage.Subscription{ID: "sub_1", APIURL: "http://127.0.0.1:1", Cursor: "c1"}); err != nil {
			return err
		}
		return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a", Table: "ds_a", Title: "A", Status: storage.StatusPending,
			StatusReason: storage.ReasonAwaitingFirstVersion, Source: storage.SourceFeed})
	}); err != nil {
		t.Fatal(err)
	}
	want, err := readStatus(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Engine().(storage.SummaryCloser).CloseWithSummary(ctx, func(ctx context.Context) ([]byte, error) { return summarize(ctx, db) }); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// Decision 51: the kept status is what readStatus reads, words included
// (Detail and Readers are derived again by the reading build).
func TestStoredStatus_isWhatTheFileHolds(t *testing.T) {
	path, want := summarized(t)
	got, ok := StoredStatus(path)
	if !ok {
		t.Fatal("no stored status for the file its writer closed")
	}
	if got.Datasets[0].Detail == "" || got.Readers == "" {
		t.Fatalf("the words are not derived again: %+v", got)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("stored status\n%s\nthe file's\n%s", g, w)
	}
}

// A build whose Status has another shape reads the file instead: the
// summary might lack what it prints.
func TestStoredStatus_notReadInAnotherShape(t *testing.T) {
	path, _ := summarized(t)
	b, err := os.ReadFile(backends.SummaryPath(path))
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	var s storedStatus
	if err := json.Unmarshal(env["summary"], &s); err != nil {
		t.Fatal(err)
	}
	s.Shape = "another build's"
	env["summary"], _ = json.Marshal(s)
	b, _ = json.Marshal(env)
	if err := os.WriteFile(backends.SummaryPath(path), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := StoredStatus(path); ok {
		t.Fatal("read a status kept in another shape")
	}
}
