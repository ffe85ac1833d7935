package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A Reader reads what the writer left, with the writer's errors for a
// missing or foreign file (a locked one: cmd's lock tests, across
// processes), never creates one, and moves a mark only when opened to.
func TestReader_readsWhatTheWriterLeftAndMovesMarksOnlyWhenAskedTo(t *testing.T) {
	onlyInAFile(t, "marks")
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := OpenReader(ctx, filepath.Join(dir, "none.duckdb"), ReaderOptions{}); !errors.Is(err, ErrNoFile) {
		t.Fatalf("a missing file: %v, want ErrNoFile", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.duckdb")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a reader created the file: %v", err)
	}
	text := filepath.Join(dir, "notes.txt")
	must(t, os.WriteFile(text, []byte("not a replica, but long enough to have a header to read"), 0o600))
	if _, err := OpenReader(ctx, text, ReaderOptions{}); !errors.Is(err, ErrNotDuckDB) {
		t.Fatalf("a text file: %v, want ErrNotDuckDB", err)
	}

	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	path := filepath.Join(dir, "r.duckdb")
	w := mustOpen(t, em, sub, path)
	mustSync(t, w)
	must(t, w.Advance(ctx, "m", mustChanges(t, w, "m")))
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	mustSync(t, w)
	want, err := w.Status(ctx)
	must(t, err)
	must(t, w.Close())

	rd, err := OpenReader(ctx, path, ReaderOptions{})
	must(t, err)
	got, err := rd.Status(ctx)
	must(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the reader's status:\n%+v\nthe writer's:\n%+v", got, want)
	}
	cs, err := rd.Changes(ctx, "m", ChangesOptions{Datasets: []string{"ds_permits"}})
	must(t, err)
	if len(cs.Datasets) != 1 || len(cs.Datasets[0].Changes) == 0 {
		t.Fatalf("changes since the mark: %+v, want the permits' v2", cs)
	}
	if err := rd.Advance(ctx, "m", cs); !errors.Is(err, errNoMarks) {
		t.Fatalf("advance on a reader without Marks: %v, want errNoMarks", err)
	}
	if _, err := rd.Forget(ctx, "m"); !errors.Is(err, errNoMarks) {
		t.Fatalf("forget on a reader without Marks: %v, want errNoMarks", err)
	}
	must(t, rd.Close())

	mk, err := OpenReader(ctx, path, ReaderOptions{Marks: true})
	must(t, err)
	must(t, mk.Advance(ctx, "m", cs))
	after, err := mk.Changes(ctx, "m", ChangesOptions{Datasets: []string{"ds_permits"}})
	must(t, err)
	if n := len(after.Datasets[0].Changes); n != 0 {
		t.Fatalf("after the advance: %d changes, want none", n)
	}
	had, err := mk.Forget(ctx, "m")
	must(t, err)
	if !had {
		t.Fatal("forget found no mark m")
	}
	must(t, mk.Close())
}
