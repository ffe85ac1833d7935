package backends

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

// engine is one backend of the seam as a test drives it: a transaction's
// table operations, and a reader's query on another connection.
type engine struct {
	update func(ctx context.Context, fn func(storage.Tables) error) error
	query  func(t *testing.T, q string) string
}

// engines is the table of backends: the DuckDB file and a PostgreSQL
// database, each opened fresh.
var engines = []struct {
	name string
	open func(t *testing.T) engine
}{
	{"duckdb", func(t *testing.T) engine {
		db, err := duckdb.Open(context.Background(), filepath.Join(t.TempDir(), "seam.duckdb"), storage.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return engine{
			update: func(ctx context.Context, fn func(storage.Tables) error) error {
				return db.Update(ctx, func(tx *storage.Tx) error { return fn(tx.Tables()) })
			},
			query: func(t *testing.T, q string) string {
				t.Helper()
				var s sql.NullString
				if err := db.SQL().QueryRow(q).Scan(&s); err != nil {
					t.Fatal(err)
				}
				return s.String
			},
		}
	}},
	{"postgres", func(t *testing.T) engine {
		db, u := mustOpen(t)
		r := mustReader(t, u)
		return engine{
			update: func(ctx context.Context, fn func(storage.Tables) error) error {
				return db.Update(ctx, func(tx *postgres.Tx) error { return fn(tx) })
			},
			query: func(t *testing.T, q string) string {
				t.Helper()
				var s *string
				if err := r.QueryRow(context.Background(), q).Scan(&s); err != nil {
					t.Fatal(err)
				}
				if s == nil {
					return ""
				}
				return *s
			},
		}
	}},
}

// The seam's operations do the same on both engines: the same rows after
// a load, a merge, added columns and a deferred merge, the same log in
// _ploti.changes, and the same refusals in the same words, each leaving
// the table as it was. The files are written once, by DuckDB, and read by
// both.
func TestSeam_sameOnBothEngines(t *testing.T) {
	ctx := context.Background()
	duck := mustDuck(t)
	snap := mustParquet(t, duck, snapQuery)
	changes := mustParquet(t, duck, `SELECT * FROM (VALUES
		('r1', 'changed', 'fl-orange', 'P1x', 9.99::DECIMAL(14,2), TIMESTAMPTZ '2026-02-01 00:00:00+00', ['c'], ST_AsWKB('POINT (7 7)'::GEOMETRY)),
		('r2', 'removed', NULL, NULL, NULL, NULL, NULL, NULL),
		('r9', 'added', 'fl-orange', 'P9', 1.00::DECIMAL(14,2), TIMESTAMPTZ '2026-03-01 00:00:00+00', [], ST_AsWKB('POINT (9 9)'::GEOMETRY)))
		t(_ploti_record_id, _ploti_change, _ploti_place_id, permit, valuation, issued, tags, geometry)`)
	refusals := []struct{ name, query string }{
		{"added id already held", "SELECT 'added' AS _ploti_change, * FROM (" + snapQuery + ") WHERE _ploti_record_id = 'r3'"},
		{"removed id not held", "SELECT 'removed' AS _ploti_change, * REPLACE ('zz' AS _ploti_record_id) FROM (" + snapQuery + ") LIMIT 1"},
		{"missing column", "SELECT 'changed' AS _ploti_change, * EXCLUDE (tags) FROM (" + snapQuery + ") LIMIT 1"},
		{"repeated id", "SELECT 'changed' AS _ploti_change, * REPLACE ('r1' AS _ploti_record_id) FROM (" + snapQuery + ")"},
		{"bad change kind", "SELECT 'moved' AS _ploti_change, * FROM (" + snapQuery + ") LIMIT 1"},
	}
	refusalFiles := make([]string, len(refusals))
	for i, r := range refusals {
		refusalFiles[i] = mustParquet(t, duck, r.query)
	}
	more := append(testCols[:len(testCols):len(testCols)], col("inspector", "string"))
	deferred := mustParquet(t, duck, `SELECT 'changed' AS _ploti_change, * REPLACE ('P3d' AS permit), 'Ann' AS inspector FROM (`+snapQuery+`) WHERE _ploti_record_id = 'r3'`)

	const rowsQ = `SELECT string_agg(_ploti_record_id || ':' || permit || ':' || CAST(valuation AS VARCHAR), ' ' ORDER BY _ploti_record_id) FROM permits`
	const logQ = `SELECT string_agg(version || record_id || change, ' ' ORDER BY version, record_id) FROM _ploti.changes`
	type outcome struct {
		loaded, merged, widened, log string
		stats                        storage.MergeStats
		refused                      []string
	}
	got := map[string]outcome{}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			en := e.open(t)
			var o outcome
			if err := en.update(ctx, func(tb storage.Tables) error {
				_, err := tb.LoadSnapshot(ctx, "permits", testCols, []string{snap})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			o.loaded = en.query(t, rowsQ)
			if err := en.update(ctx, func(tb storage.Tables) error {
				var err error
				o.stats, err = tb.MergeChanges(ctx, "ds", 2, "permits", testCols, changes, 5)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			o.merged = en.query(t, rowsQ)
			for i, f := range refusalFiles {
				err := en.update(ctx, func(tb storage.Tables) error {
					_, err := tb.MergeChanges(ctx, "ds", 3, "permits", testCols, f, -1)
					return err
				})
				if !errors.Is(err, storage.ErrBadData) {
					t.Fatalf("%s: err = %v, want ErrBadData", refusals[i].name, err)
				}
				if after := en.query(t, rowsQ); after != o.merged {
					t.Fatalf("%s: the table after the refusal is %s, was %s", refusals[i].name, after, o.merged)
				}
				o.refused = append(o.refused, err.Error())
			}
			if err := en.update(ctx, func(tb storage.Tables) error {
				if err := tb.AddColumns(ctx, "permits", more[len(testCols):]); err != nil {
					return err
				}
				m, err := tb.MergeDeferred(ctx, "ds", 3, "permits", more, deferred, -1)
				if err != nil {
					return err
				}
				return tb.FinishMerged(ctx, []storage.Merged{m})
			}); err != nil {
				t.Fatal(err)
			}
			o.widened = en.query(t, `SELECT string_agg(_ploti_record_id || ':' || permit || ':' || coalesce(inspector, '-'), ' ' ORDER BY _ploti_record_id) FROM permits`)
			o.log = en.query(t, logQ)
			for _, tc := range []struct {
				table string
				want  bool
			}{{"permits", true}, {"nothing_here", false}} {
				if err := en.update(ctx, func(tb storage.Tables) error {
					ok, err := tb.TableExists(ctx, tc.table)
					if err == nil && ok != tc.want {
						t.Errorf("TableExists(%s) = %v, want %v", tc.table, ok, tc.want)
					}
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			got[e.name] = o
		})
	}
	want := outcome{
		loaded:  "r0:P0:0.00 r1:P1:1.50 r2:P2:3.00 r3:P3:4.50 r4:P4:6.00",
		merged:  "r0:P0:0.00 r1:P1x:9.99 r3:P3:4.50 r4:P4:6.00 r9:P9:1.00",
		widened: "r0:P0:- r1:P1x:- r3:P3d:Ann r4:P4:- r9:P9:-",
		log:     "2r1changed 2r2removed 2r9added 3r3changed",
		stats:   storage.MergeStats{Added: 1, Changed: 1, Removed: 1, Rows: 5},
	}
	for _, e := range engines {
		o, ok := got[e.name]
		if !ok {
			continue // its subtest failed and said why
		}
		if o.loaded != want.loaded || o.merged != want.merged || o.widened != want.widened || o.log != want.log {
			t.Errorf("%s:\n loaded  %s\n merged  %s\n widened %s\n log     %s\nwant\n loaded  %s\n merged  %s\n widened %s\n log     %s",
				e.name, o.loaded, o.merged, o.widened, o.log, want.loaded, want.merged, want.widened, want.log)
		}
		if o.stats.Added != want.stats.Added || o.stats.Changed != want.stats.Changed || o.stats.Removed != want.stats.Removed || o.stats.Rows != want.stats.Rows {
			t.Errorf("%s: merge stats %+v, want %+v", e.name, o.stats, want.stats)
		}
	}
	d, p := got["duckdb"], got["postgres"]
	for i := range refusals {
		if i < len(d.refused) && i < len(p.refused) && d.refused[i] != p.refused[i] {
			t.Errorf("%s: the engines refuse in other words:\n duckdb   %s\n postgres %s", refusals[i].name, d.refused[i], p.refused[i])
		}
	}
}

// A version's changes files (its parts) are checked together on both
// engines: a record id in two of them is refused, in the same words (the
// PostgreSQL engine checked each file alone, and merged such a version).
func TestSeam_changesPartsCheckedTogether(t *testing.T) {
	ctx := context.Background()
	duck := mustDuck(t)
	part := "SELECT 'changed' AS _ploti_change, * FROM (" + snapQuery + ") WHERE _ploti_record_id IN ('r1', 'r2')"
	parts := []string{mustParquet(t, duck, part), mustParquet(t, duck, part)}
	said := map[string]string{}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			err := e.open(t).update(ctx, func(tb storage.Tables) error {
				c, ok := tb.(storage.ChangesIDChecker)
				if !ok {
					t.Fatalf("%T checks each changes file alone", tb)
				}
				if err := c.CheckChangesIDs(ctx, parts[:1]); err != nil {
					t.Fatalf("one part: %v", err)
				}
				return c.CheckChangesIDs(ctx, parts)
			})
			if !errors.Is(err, storage.ErrBadData) {
				t.Fatalf("two parts listing r1 and r2: %v, want ErrBadData", err)
			}
			said[e.name] = err.Error()
		})
	}
	// Without a PostgreSQL server its subtest skips (pgtest), and there is
	// nothing to compare.
	if d, p := said["duckdb"], said["postgres"]; len(said) == len(engines) && d != p {
		t.Errorf("the engines refuse in other words:\n duckdb   %s\n postgres %s", d, p)
	}
}
