package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// fileSource serves one local snapshot file for every version.
type fileSource struct {
	path   string
	schema *ploti.Schema
}

func (s *fileSource) Version(_ context.Context, id string, version int, _ string) (*ploti.Version, error) {
	return &ploti.Version{DatasetID: id, Version: version, SchemaVersion: s.schema.SchemaVersion}, nil
}
func (s *fileSource) Current(context.Context, string) (int, error) { return 0, ErrNoCurrent }
func (s *fileSource) Schema(context.Context, *ploti.Version) (*ploti.Schema, error) {
	return s.schema, nil
}
func (s *fileSource) Download(_ context.Context, _ *ploti.Version, kind string) ([]string, error) {
	if kind != "snapshot" {
		return nil, errors.New("no " + kind)
	}
	return []string{s.path}, nil
}
func (s *fileSource) Discard([]string) {}

// A replaced table's blocks are reused only after a checkpoint.
// Reloads in one open session must keep the file near twice the table, not
// add the table's size each time.
func TestLoad_ReloadsInOneSessionKeepTheFileBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.parquet")
	db, err := backends.Open(ctx, filepath.Join(dir, "r.duckdb"), storage.Options{Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.SQL().ExecContext(ctx, fmt.Sprintf(`COPY (SELECT 'rec_' || i AS _ploti_record_id, 'p' AS _ploti_place_id,
		md5(CAST(i AS VARCHAR)) AS k, i AS v FROM range(300000) t(i)) TO %s (FORMAT parquet)`, storage.Literal(snap))); err != nil {
		t.Fatal(err)
	}
	src := &fileSource{path: snap, schema: &ploti.Schema{SchemaVersion: "1.0", Columns: []ploti.Column{
		{Name: "k", Type: ploti.Type{Type: ploti.TypeString}}, {Name: "v", Type: ploti.Type{Type: ploti.TypeInteger}}}}}
	x := &Executor{DB: db, Source: src}
	d := &storage.Dataset{ID: "ds_x", Status: storage.StatusPending}
	load := func() int64 {
		t.Helper()
		if _, err := x.LoadVersion(ctx, d, &ploti.Version{DatasetID: "ds_x", Version: 1, SchemaVersion: "1.0"}, false); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(db.Path())
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	first := load()
	for i := 1; i <= 6; i++ {
		// The swap holds the old and the new table until it commits, so the
		// file needs about twice the table; unbounded, it would pass 7x.
		if size := load(); float64(size) > 3*float64(first) {
			t.Fatalf("after %d reloads the file is %d bytes, %.1f times its %d bytes after the first load", i, size, float64(size)/float64(first), first)
		}
	}
}
