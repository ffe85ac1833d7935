package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// filesSource serves each dataset's own local snapshot file.
type filesSource struct {
	paths  map[string]string
	schema *ploti.Schema
}

func (s *filesSource) Version(_ context.Context, id string, version int, _ string) (*ploti.Version, error) {
	return &ploti.Version{DatasetID: id, Version: version, SchemaVersion: s.schema.SchemaVersion}, nil
}
func (s *filesSource) Current(context.Context, string) (int, error) { return 0, ErrNoCurrent }
func (s *filesSource) Schema(context.Context, *ploti.Version) (*ploti.Schema, error) {
	return s.schema, nil
}
func (s *filesSource) Download(_ context.Context, v *ploti.Version, kind string) ([]string, error) {
	if kind != "snapshot" || s.paths[v.DatasetID] == "" {
		return nil, errors.New("no " + kind)
	}
	return []string{s.paths[v.DatasetID]}, nil
}
func (s *filesSource) Discard([]string) {}

// sharedLoadFixture writes a snapshot file per dataset: good ones of 50
// rows, and the bad ones named (ds_dup: a record id twice, ds_junk: not
// Parquet at all, which fails the statement that reads it).
func sharedLoadFixture(t *testing.T, ids ...string) (*storage.DB, *Executor) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := backends.Open(ctx, filepath.Join(dir, "r.duckdb"), storage.Options{Now: func() time.Time { return time.Unix(0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	src := &filesSource{paths: map[string]string{}, schema: &ploti.Schema{SchemaVersion: "1.0", Columns: []ploti.Column{
		{Name: "v", Type: ploti.Type{Type: ploti.TypeInteger}}}}}
	for _, id := range ids {
		p := filepath.Join(dir, id+".parquet")
		src.paths[id] = p
		q := fmt.Sprintf("SELECT 'rec_' || i AS _ploti_record_id, 'p' AS _ploti_place_id, i AS v FROM range(50) t(i)%s", map[string]string{
			"ds_dup": " UNION ALL SELECT 'rec_1', 'p', 1"}[id])
		if id == "ds_junk" {
			if err := os.WriteFile(p, []byte("PAR1 this is not a Parquet file PAR1"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := db.SQL().ExecContext(ctx, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", q, storage.Literal(p))); err != nil {
			t.Fatal(err)
		}
	}
	return db, &Executor{DB: db, Source: src}
}

// prepareAll prepares version 1 of each dataset, with table names chosen
// ahead as a bootstrap chooses them.
func prepareAll(t *testing.T, db *storage.DB, x *Executor, ids ...string) []*Prepared {
	t.Helper()
	ctx := context.Background()
	names, err := db.FreeTableNames(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	var ps []*Prepared
	for _, id := range ids {
		d := &storage.Dataset{ID: id, Status: storage.StatusPending, Table: names[id]}
		p := x.Prepare(ctx, d, &ploti.Version{DatasetID: id, Version: 1}, PrepareOptions{Review: true})
		p.NewTable = true
		ps = append(ps, p)
	}
	return ps
}

// Invariant 4 with shared loads: datasets loaded in one
// transaction still fail one by one. A bad file, whether the check refuses
// it or its statement fails and aborts the transaction, costs only its
// dataset; the others load with their registry rows. Without the junk
// file, the repeated id is refused from the shared read of the ids
// (decision 58), inside the shared transaction.
func TestLoadPrepared_aBadFileCostsOnlyItsDataset(t *testing.T) {
	for _, ids := range [][]string{{"ds_a", "ds_dup", "ds_b", "ds_junk", "ds_c"}, {"ds_a", "ds_dup", "ds_b"}} {
		t.Run(strings.Join(ids, ","), func(t *testing.T) { badFileCostsOnlyItsDataset(t, ids) })
	}
}

func badFileCostsOnlyItsDataset(t *testing.T, ids []string) {
	ctx := context.Background()
	db, x := sharedLoadFixture(t, ids...)
	errs := x.LoadPrepared(ctx, prepareAll(t, db, x, ids...))
	for i, id := range ids {
		bad := id == "ds_dup" || id == "ds_junk"
		var de *storage.DataError
		if bad != (errs[i] != nil) || bad && !errors.As(errs[i], &de) {
			t.Fatalf("%s: %v", id, errs[i])
		}
		d, err := db.Dataset(ctx, id)
		switch {
		case bad && !errors.Is(err, storage.ErrNoDataset):
			t.Fatalf("%s failed but has a registry row: %+v, %v", id, d, err)
		case !bad && (err != nil || d.Status != storage.StatusCurrent || d.Version != 1 || d.RowCount != 50):
			t.Fatalf("%s: %+v, %v", id, d, err)
		}
		var n int
		if err := db.SQL().QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", id).Scan(&n); err != nil || n != map[bool]int{false: 1, true: 0}[bad] {
			t.Fatalf("%s: %d tables, %v", id, n, err)
		}
	}
	if !strings.Contains(errs[1].Error(), "1 duplicate _ploti_record_id") {
		t.Fatalf("ds_dup: %v", errs[1])
	}
}

// A shared load creates new tables under names chosen ahead; a user's
// table made with such a name in between is never replaced: the load
// alone chooses another name.
func TestLoadPrepared_neverReplacesATableMadeSinceItsNameWasChosen(t *testing.T) {
	ctx := context.Background()
	db, x := sharedLoadFixture(t, "ds_a", "ds_b")
	ps := prepareAll(t, db, x, "ds_a", "ds_b")
	if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE ds_b AS SELECT 'mine' AS note"); err != nil {
		t.Fatal(err)
	}
	for i, err := range x.LoadPrepared(ctx, ps) {
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	var note string
	if err := db.SQL().QueryRowContext(ctx, "SELECT note FROM ds_b").Scan(&note); err != nil || note != "mine" {
		t.Fatalf("the user's table ds_b: %q, %v", note, err)
	}
	d, err := db.Dataset(ctx, "ds_b")
	if err != nil || d.Table != "ds_b_2" || d.RowCount != 50 {
		t.Fatalf("ds_b: %+v, %v", d, err)
	}
}

// A checkpoint costs time in the number of tables (0.1–0.3 s at
// 5,000), and a load that replaces no table frees nothing for it to give
// back: first loads leave their commits in the WAL.
func TestLoad_firstLoadsDoNotCheckpoint(t *testing.T) {
	ctx := context.Background()
	ids := []string{"ds_a", "ds_b", "ds_c"}
	db, x := sharedLoadFixture(t, ids...)
	for _, id := range ids {
		d := &storage.Dataset{ID: id, Status: storage.StatusPending}
		if _, err := x.LoadVersion(ctx, d, &ploti.Version{DatasetID: id, Version: 1}, false); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(db.Path() + ".wal")
	if err != nil || st.Size() == 0 {
		t.Fatalf("after three first loads the WAL is %v (%v): a checkpoint ran", st, err)
	}
}
