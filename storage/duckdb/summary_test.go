package duckdb

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// summaryFixture is a closed replica file with a summary beside it: a
// subscription row, and the payload "kept" (JSON).
func summaryFixture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.duckdb")
	db, err := Open(ctx, path, storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		return tx.PutSubscription(ctx, &storage.Subscription{ID: "sub_1", APIURL: "http://127.0.0.1:1"})
	}); err != nil {
		t.Fatal(err)
	}
	if err := Of(db).CloseWithSummary(ctx, func(context.Context) ([]byte, error) { return []byte(`"kept"`), nil }); err != nil {
		t.Fatal(err)
	}
	if b, ok := ReadSummary(path); !ok || string(b) != `"kept"` {
		t.Fatalf("the summary of the state the writer left: %q %v", b, ok)
	}
	return path
}

// plainUpdate changes the subscription row as DuckDB alone (a user's
// DuckDB CLI) would; with logOnly, the change stays in the write-ahead log
// beside the file, as a process killed after its commit leaves it.
func plainUpdate(t *testing.T, path string, logOnly bool) {
	t.Helper()
	db, err := duckread.OpenPlain(context.Background(), path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if logOnly {
		if _, err := db.Exec("PRAGMA disable_checkpoint_on_shutdown"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("UPDATE _ploti.subscription SET cursor = 'set-by-hand'"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// Decision 51: a summary is read only while the file is in the state it
// was written for. DuckDB alone changing a _ploti row and checkpointing
// it into the file changes the file's stamp and headers.
func TestSummary_notReadAfterDuckDBAloneChangedTheFile(t *testing.T) {
	path := summaryFixture(t)
	plainUpdate(t, path, false)
	if _, err := os.Stat(path + ".wal"); err == nil {
		t.Fatal("DuckDB alone left a log: this test is of a change in the file itself")
	}
	if b, ok := ReadSummary(path); ok {
		t.Fatalf("read the summary %q of a file changed since", b)
	}
}

// The same change left in the write-ahead log only (a crash after the
// commit): the file itself is as the writer left it, and the log beside
// it is what says the state moved.
func TestSummary_notReadWithALogBesideTheFile(t *testing.T) {
	path := summaryFixture(t)
	before, _ := stampOf(path)
	plainUpdate(t, path, true)
	after, _ := stampOf(path)
	if after.WALSize <= 0 {
		t.Fatalf("no log beside the file: %+v", after)
	}
	after.WALSize = before.WALSize
	if after != before {
		t.Fatalf("the file itself changed (%+v, was %+v): this test is of the log alone", after, before)
	}
	if b, ok := ReadSummary(path); ok {
		t.Fatalf("read the summary %q of a file whose log holds a commit", b)
	}
}

// Every writing Open removes the summary before it writes, whatever it
// writes after; a read-only Open leaves it.
func TestSummary_aWritingOpenRemovesIt(t *testing.T) {
	ctx := context.Background()
	path := summaryFixture(t)
	ro, err := Open(ctx, path, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if _, err := os.Stat(SummaryPath(path)); err != nil {
		t.Fatalf("a read-only open removed the summary: %v", err)
	}
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(SummaryPath(path)); !os.IsNotExist(err) {
		t.Fatalf("the summary outlives a writing open: %v", err)
	}
}

// A commit that lands while the summary is read (another goroutine's)
// would make the summary a mix of two states: none is kept.
func TestSummary_noneWhenACommitLandsWhileItIsRead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.duckdb")
	db, err := Open(ctx, path, storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	err = Of(db).CloseWithSummary(ctx, func(ctx context.Context) ([]byte, error) {
		return []byte(`"mixed"`), db.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, "moved") })
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := ReadSummary(path); ok {
		t.Fatalf("kept the summary %q read across a commit", b)
	}
}

// A build at another migration reads the file itself (whose open refuses
// or migrates it), not the summary.
func TestSummary_notReadByABuildAtAnotherMigration(t *testing.T) {
	path := summaryFixture(t)
	b, err := os.ReadFile(SummaryPath(path))
	if err != nil {
		t.Fatal(err)
	}
	var s summaryFile
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s.Migration--
	b, _ = json.Marshal(s)
	if err := os.WriteFile(SummaryPath(path), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadSummary(path); ok {
		t.Fatal("read a summary written at another migration")
	}
}

// The state names DuckDB's headers, which every checkpoint rewrites: a
// change that kept the stamp (a write within the clock's tick) still
// shows there.
func TestSummary_stateNamesDuckDBsHeaders(t *testing.T) {
	path := summaryFixture(t)
	before, _ := stateOf(path)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 4096+9); err != nil { // a database header's iteration
		t.Fatal(err)
	}
	f.Close()
	after, _ := stateOf(path)
	if after.Headers == before.Headers {
		t.Fatalf("the state's headers did not change with them: %s", after.Headers)
	}
}

// The summary holds nothing the file does not, and no one reads it who
// cannot read the file: it takes the file's permissions.
func TestSummary_takesTheFilesPermissions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.duckdb")
	db, err := Open(ctx, path, storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Of(db).CloseWithSummary(ctx, func(context.Context) ([]byte, error) { return []byte(`1`), nil }); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(SummaryPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Fatalf("summary mode %v, want the file's 0640", st.Mode().Perm())
	}
}
