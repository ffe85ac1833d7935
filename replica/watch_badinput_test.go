package replica

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// changesRewriter is a proxy in front of the emulator that can rewrite its
// changes answers: a server that sends what the docs say it never does.
type changesRewriter struct {
	mu      sync.Mutex
	rewrite func(page map[string]any)
	URL     string
}

func newChangesRewriter(tb testing.TB, em *emulator.Emulator) *changesRewriter {
	tb.Helper()
	cr := &changesRewriter{}
	// Only a changes answer with a rewrite set is decoded and written again.
	match := func(path string) bool { return cr.current() != nil && strings.HasSuffix(path, "/changes") }
	cr.URL = answerRewriter(tb, em, match, func(page map[string]any) {
		if rw := cr.current(); rw != nil {
			rw(page)
		}
	})
	return cr
}

func (cr *changesRewriter) current() func(page map[string]any) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.rewrite
}

func (cr *changesRewriter) set(f func(page map[string]any)) {
	cr.mu.Lock()
	cr.rewrite = f
	cr.mu.Unlock()
}

// firstRow returns the first change that came with its row.
func firstRow(page map[string]any) map[string]any {
	for _, c := range page["changes"].([]any) {
		if row, ok := c.(map[string]any)["row"].(map[string]any); ok {
			return row
		}
	}
	return nil
}

// "Bad input": a changes page whose rows do not fit the schema,
// an id listed twice, a renamed whose old id is not held, a value that
// cannot be cast, an unknown changeLog: the dataset fails with the
// dataset, the version and the problem in its reason, its last good
// version stays, and the next sync repairs it by a whole reload.
func TestWatch_BadInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		publish []emulator.PublishOption
		rename  bool                                                // the version renames k0012's record
		before  func(t *testing.T, r *Replica, cr *changesRewriter) // before the sync that fails
		problem string
	}{
		{name: "an unknown changeLog", publish: []emulator.PublishOption{emulator.WithChangeLog("sideways")},
			problem: `changeLog "sideways", none the docs name`},
		{name: "an id listed twice", before: func(t *testing.T, r *Replica, cr *changesRewriter) {
			cr.set(func(p map[string]any) {
				ch := p["changes"].([]any)
				p["changes"] = append(ch, ch[0])
			})
		}, problem: "twice"},
		{name: "a value that cannot be cast", before: func(t *testing.T, r *Replica, cr *changesRewriter) {
			cr.set(func(p map[string]any) { firstRow(p)["i"] = "twelve" })
		}, problem: "column i: not an integer: twelve"},
		{name: "a row that does not fit the schema", before: func(t *testing.T, r *Replica, cr *changesRewriter) {
			cr.set(func(p map[string]any) {
				firstRow(p)["g"] = map[string]any{"type": "Circle", "coordinates": []any{1, 2}}
			})
		}, problem: "column g: not a GeoJSON geometry: type Circle"},
		{name: "a decimal past its scale", before: func(t *testing.T, r *Replica, cr *changesRewriter) {
			cr.set(func(p map[string]any) { firstRow(p)["d"] = "1.005" })
		}, problem: "column d: not a DECIMAL(14,2) exactly: 1.005"},
		{name: "a row of another record", before: func(t *testing.T, r *Replica, cr *changesRewriter) {
			cr.set(func(p map[string]any) { firstRow(p)["_ploti_record_id"] = "rec_nobody" })
		}, problem: "rows for the"},
		{name: "a renamed whose old id is not held", rename: true,
			before: func(t *testing.T, r *Replica, cr *changesRewriter) {
				table := storage.Ident(datasetRow(t, r, dsWatched).Table)
				if _, err := r.DB().Exec("DELETE FROM " + table + " WHERE _ploti_record_id = (SELECT min(_ploti_record_id) FROM " + table + " WHERE k = 'k0012')"); err != nil {
					t.Fatal(err)
				}
			}, problem: "renamed is not held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			em := mustEmulator(t)
			good := seedWatched(t, em, 30)
			cr := newChangesRewriter(t, em)
			r := mustOpenWatches(t, em, "", func(o *Options) { o.APIURL = cr.URL })
			mustSync(t, r)
			opts := tc.publish
			if tc.rename {
				var id string
				if err := r.DB().QueryRow("SELECT _ploti_record_id FROM " + storage.Ident(datasetRow(t, r, dsWatched).Table) + " WHERE k = 'k0012'").Scan(&id); err != nil {
					t.Fatal(err)
				}
				opts = append(opts, emulator.WithRenames(id))
			}
			bad := mustPublishRows(t, em, dsWatched, watchRows(1, 30), opts...).PlotiVersion
			if tc.before != nil {
				tc.before(t, r, cr)
			}
			res, err := r.Sync(ctx)
			if !errors.Is(err, ErrPartial) || len(res.Failed) != 1 || res.Failed[0] != dsWatched {
				t.Fatalf("sync: %v, failed %v; want %s failed", err, res.Failed, dsWatched)
			}
			d := datasetRow(t, r, dsWatched)
			for _, want := range []string{dsWatched, "v" + strconv.Itoa(bad), tc.problem} {
				if d.Status != storage.StatusFailed || !strings.Contains(d.StatusReason, want) {
					t.Fatalf("status %s, reason %q; want failed, naming %q", d.Status, d.StatusReason, want)
				}
			}
			if d.Version != good {
				t.Fatalf("registry holds v%d after the failure, want the last good v%d", d.Version, good)
			}
			if !tc.rename { // that one's table was spoiled on purpose
				truth, err := em.Truth(ctx, dsWatched, 1)
				if err != nil {
					t.Fatal(err)
				}
				tdb, table := tableForDiff(t, r, d)
				if extra, missing := diffRows(t, tdb, table, "read_parquet("+storage.Literal(truth)+")"); extra != 0 || missing != 0 {
					t.Fatalf("the last good version did not stay: %d rows extra, %d missing", extra, missing)
				}
			}
			cr.set(nil)
			res = mustSync(t, r)
			if res.WatchReloads != 1 {
				t.Fatalf("repair sync = %+v, want a whole reload", res)
			}
			assertWatched(t, r, em, dsWatched, good, bad)
		})
	}
}
