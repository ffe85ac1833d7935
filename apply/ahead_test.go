package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// changesSource is filesSource with a version 2 of each dataset whose
// changes file it copies afresh for every download, counting the
// versions asked, the downloads, and the copies not yet discarded.
type changesSource struct {
	*filesSource
	changes  map[string]string // dataset → its changes file
	dir      string
	versions atomic.Int64
	copies   atomic.Int64
	mu       sync.Mutex
	out      map[string]bool // copies not yet discarded
}

func (s *changesSource) Version(ctx context.Context, id string, version int, link string) (*ploti.Version, error) {
	s.versions.Add(1)
	v, _ := s.filesSource.Version(ctx, id, version, link)
	st, err := os.Stat(s.changes[id])
	if err != nil {
		return nil, err
	}
	n := st.Size()
	v.Files.Changes = []ploti.File{{URL: "file://" + s.changes[id], Bytes: &n}}
	return v, nil
}

func (s *changesSource) Download(ctx context.Context, v *ploti.Version, kind string) ([]string, error) {
	if kind != "changes" {
		return s.filesSource.Download(ctx, v, kind)
	}
	b, err := os.ReadFile(s.changes[v.DatasetID])
	if err != nil {
		return nil, err
	}
	p := filepath.Join(s.dir, fmt.Sprintf("%s-%d-%d.parquet", v.DatasetID, v.Version, s.copies.Add(1)))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.out[p] = true
	s.mu.Unlock()
	return []string{p}, nil
}

func (s *changesSource) Discard(paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		delete(s.out, p)
		os.Remove(p)
	}
}

func (s *changesSource) outstanding() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.out)
}

// aheadFixture loads version 1 of each dataset (sharedLoadFixture) and
// gives each a version 2 whose changes file is changes(i)'s rows, with
// the updated event of each.
func aheadFixture(t *testing.T, ids []string, changes func(i int) string) (*storage.DB, *Executor, *changesSource, []ploti.Event) {
	t.Helper()
	ctx := context.Background()
	db, x := sharedLoadFixture(t, ids...)
	for i, err := range x.LoadPrepared(ctx, prepareAll(t, db, x, ids...)) {
		if err != nil {
			t.Fatalf("load %s: %v", ids[i], err)
		}
	}
	dir := t.TempDir()
	src := &changesSource{filesSource: x.Source.(*filesSource), changes: map[string]string{}, dir: t.TempDir(), out: map[string]bool{}}
	x.Source = src
	var events []ploti.Event
	for i, id := range ids {
		p := filepath.Join(dir, id+"-changes.parquet")
		src.changes[id] = p
		if _, err := db.SQL().ExecContext(ctx, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", changes(i), storage.Literal(p))); err != nil {
			t.Fatal(err)
		}
		events = append(events, feedEvent(ploti.EventUpdated, id, ploti.Int(2), func(d *ploti.EventData) { d.PreviousVersion = ploti.Int(1) }))
		events[i].ID = fmt.Sprintf("evt_%02d", i)
	}
	return db, x, src, events
}

// The walk fetches "the next page's merges' files while
// this page commits", with the spool bounded ("Memory and spool stay
// bounded and configurable"). A page of twenty updates: with no event
// applied yet, Ahead downloads no more than aheadFiles changes files, or
// as many of sharedMergeBytes as Executor.AheadBytes holds (the replica's
// SpoolLimit); applied in order, each update takes its file (each asked
// and downloaded once in all), and once the page commits no file is left.
func TestAhead_fetchesAPagesMergesWithinItsBound(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		want  int64
	}{{0, aheadFiles}, {256 << 20, aheadFiles}, {3*sharedMergeBytes + 1, 3}, {1 << 20, 1}} {
		t.Run(fmt.Sprintf("AheadBytes %d", tc.limit), func(t *testing.T) { aheadWithinBound(t, tc.limit, tc.want) })
	}
}

func aheadWithinBound(t *testing.T, limit, bound int64) {
	ctx := context.Background()
	var ids []string
	for i := range 20 {
		ids = append(ids, fmt.Sprintf("ds_%02d", i))
	}
	db, x, src, events := aheadFixture(t, ids, func(i int) string {
		return fmt.Sprintf(`SELECT * FROM (VALUES ('rec_1', 'p', %d, 'changed'), ('rec_60', 'p', 60, 'added'), ('rec_2', 'p', 2, 'removed'))
			t(_ploti_record_id, _ploti_place_id, v, _ploti_change)`, 100+i)
	})
	x.AheadBytes = limit
	b := NewBatch(db)
	b.Share = true
	b.Scope(ids)
	defer b.Abort()
	if err := x.Ahead(ctx, b, events); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); src.copies.Load() < bound && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a download past the bound would land by now
	if got := src.copies.Load(); got != bound {
		t.Fatalf("before any event applied, %d changes files were downloaded ahead, want %d (the bound)", got, bound)
	}
	for _, ev := range events {
		if _, err := x.Apply(ctx, b, ev); err != nil {
			t.Fatalf("apply %s: %v", ev.Data.DatasetID, err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	b.StopAhead()
	if v, c, o := src.versions.Load(), src.copies.Load(), src.outstanding(); v != int64(len(ids)) || c != int64(len(ids)) || o != 0 {
		t.Fatalf("%d merges asked for %d versions and downloaded %d files, %d left in the spool; want %d, %d and none",
			len(ids), v, c, o, len(ids), len(ids))
	}
	for i, id := range ids {
		d, err := db.Dataset(ctx, id)
		var v int
		if err == nil {
			err = db.SQL().QueryRowContext(ctx, fmt.Sprintf("SELECT v FROM main.%s WHERE _ploti_record_id = 'rec_1'", storage.Ident(d.Table))).Scan(&v)
		}
		if err != nil || d.Version != 2 || d.RowCount != 50 || v != 100+i {
			t.Fatalf("%s after the page: %+v, rec_1 %d, %v", id, d, v, err)
		}
	}
}

// A page left early (an error, a stop) takes nothing: StopAhead ends the
// fetching and removes every file it downloaded.
func TestAhead_stopRemovesWhatNoEventTook(t *testing.T) {
	ctx := context.Background()
	ids := []string{"ds_a", "ds_b", "ds_c"}
	db, x, src, events := aheadFixture(t, ids, func(int) string {
		return "SELECT 'rec_1' AS _ploti_record_id, 'p' AS _ploti_place_id, 7 AS v, 'changed' AS _ploti_change"
	})
	b := NewBatch(db)
	b.Share = true
	defer b.Abort()
	if err := x.Ahead(ctx, b, events); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); src.copies.Load() < int64(len(ids)) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	b.StopAhead()
	if c, o := src.copies.Load(), src.outstanding(); c != int64(len(ids)) || o != 0 {
		t.Fatalf("downloaded %d, %d left after StopAhead; want %d and none", c, o, len(ids))
	}
}
