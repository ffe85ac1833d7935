package duckdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Deferred merges refuse what MergeChanges refuses, only later:
// FinishMerged reads every file once and names the first that does not
// fit (a repeated id, an unknown kind, a changed id not held), and the
// caller rolls back. Files that fit are logged as MergeChanges logs them.
func TestTx_FinishMerged(t *testing.T) {
	bg := context.Background()
	snap := func(db *storage.DB) {
		t.Helper()
		if err := db.Update(bg, func(tx *storage.Tx) error {
			_, err := tx.Tables().LoadSnapshot(bg, "permits", testCols, []string{mustParquet(t, db, snapQuery)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	changes := func(db *storage.DB, q string) string { return mustParquet(t, db, q) }
	const good = `SELECT CASE WHEN i = 0 THEN 'removed' WHEN i = 1 THEN 'changed' ELSE 'added' END AS _ploti_change,
		* REPLACE (CASE WHEN i > 1 THEN 'n' || i ELSE _ploti_record_id END AS _ploti_record_id)
		FROM (SELECT *, row_number() OVER () - 1 AS i FROM (` + snapQuery + `)) WHERE i < 4`
	strip := func(q string) string { return "SELECT * EXCLUDE (i) FROM (" + q + ")" }
	for _, tc := range []struct{ name, bad, want string }{
		{"a repeated added id", strip(good) + " UNION ALL (SELECT * FROM (" + strip(good) + ") WHERE _ploti_change = 'added' LIMIT 1)", "1 duplicate _ploti_record_id"},
		{"an unknown kind", "SELECT * REPLACE ('renamed' AS _ploti_change) FROM (" + strip(good) + ")", "whose _ploti_change is not added, changed or removed"},
		{"a changed id not held", "SELECT * REPLACE ('zz' || _ploti_record_id AS _ploti_record_id) FROM (" + strip(good) + ") WHERE _ploti_change = 'changed'", "does not fit the held version"},
	} {
		for _, v := range []struct {
			inspected bool
			rows      int64 // 5: a small merge, checked at FinishMerged; -1: a large one, whose checks read aside
			conns     int   // a caller's limit on the pool; 1 leaves none for a read aside
		}{{false, 5, 0}, {true, 5, 0}, {false, -1, 0}, {true, -1, 0}, {false, -1, 1}} {
			inspected := v.inspected
			t.Run(fmt.Sprintf("%s, inspected ahead %v, rows before %d, connections %d", tc.name, inspected, v.rows, v.conns), func(t *testing.T) {
				db := mustOpen(t)
				snap(db)
				ok, bad := changes(db, strip(good)), changes(db, tc.bad)
				if inspected { // InspectChanges's columns stand in for the merge's probe
					Of(db).InspectChanges(bg, []string{ok, bad})
					if _, kept := Of(db).facts.get(bad); !kept {
						t.Fatal("InspectChanges kept nothing of the file")
					}
				}
				// The good file touches the table first, the bad one a copy.
				if _, err := db.SQL().Exec("CREATE TABLE main.permits2 AS SELECT * FROM main.permits"); err != nil {
					t.Fatal(err)
				}
				if v.conns > 0 {
					db.SQL().SetMaxOpenConns(v.conns)
				}
				err := db.Update(bg, func(tx *storage.Tx) error {
					var ms []storage.Merged
					for _, m := range [][2]string{{"permits", ok}, {"permits2", bad}} {
						got, err := tx.Tables().MergeDeferred(bg, "ds_"+m[0], 2, m[0], testCols, m[1], v.rows)
						if err != nil {
							return err
						}
						// Aside when large and a connection is to spare.
						if aside, want := eng(tx).aside[m[1]] != nil, v.rows < 0 && v.conns == 0; aside != want {
							t.Errorf("counts of %s read aside: %v, want %v", m[0], aside, want)
						}
						ms = append(ms, got)
					}
					return tx.Tables().FinishMerged(bg, ms)
				})
				if n := Of(db).asides.Load(); n != 0 {
					t.Errorf("%d reads aside outlived the transaction", n)
				}
				var de *storage.DataError
				if !errors.As(err, &de) || de.File != filepath.Base(bad) || !strings.Contains(de.Detail, tc.want) {
					t.Fatalf("FinishMerged = %v, want a DataError naming %s: %s", err, filepath.Base(bad), tc.want)
				}
			})
		}
	}
	// What InspectChanges read is for the file as it was: one written again
	// under its name (a download repaired in place) is read again, here a
	// column the schema does not have.
	t.Run("a file written again after it was inspected", func(t *testing.T) {
		db := mustOpen(t)
		snap(db)
		f := changes(db, strip(good))
		Of(db).InspectChanges(bg, []string{f})
		if _, kept := Of(db).facts.get(f); !kept {
			t.Fatal("InspectChanges kept nothing of the file")
		}
		if _, err := db.SQL().Exec("COPY (SELECT *, 1 AS surprise FROM (" + strip(good) + ")) TO " + storage.Literal(f) + " (FORMAT parquet)"); err != nil {
			t.Fatal(err)
		}
		err := db.Update(bg, func(tx *storage.Tx) error {
			m, err := tx.Tables().MergeDeferred(bg, "ds", 2, "permits", testCols, f, 5)
			if err != nil {
				return err
			}
			return tx.Tables().FinishMerged(bg, []storage.Merged{m})
		})
		var de *storage.DataError
		if !errors.As(err, &de) || !strings.Contains(de.Detail, "has column surprise") {
			t.Fatalf("merge = %v, want the rewritten file's extra column refused", err)
		}
	})
	t.Run("files that fit", func(t *testing.T) {
		deferred, direct := mustOpen(t), mustOpen(t)
		var logs [2]string
		for i, db := range []*storage.DB{deferred, direct} {
			snap(db)
			f := changes(db, strip(good))
			err := db.Update(bg, func(tx *storage.Tx) error {
				if i == 1 {
					_, err := tx.Tables().MergeChanges(bg, "ds", 2, "permits", testCols, f, 5)
					return err
				}
				m, err := tx.Tables().MergeDeferred(bg, "ds", 2, "permits", testCols, f, 5)
				if err != nil {
					return err
				}
				if m.Rows != 6 || m.Deleted != 2 || m.Inserted != 3 {
					t.Errorf("merged: %+v, want 6 rows after, 2 deleted, 3 inserted", m)
				}
				return tx.Tables().FinishMerged(bg, []storage.Merged{m})
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.SQL().QueryRow(`SELECT string_agg(dataset_id || ' ' || version || ' ' || record_id || ' ' || change, ', ' ORDER BY record_id)
				FROM _ploti.changes`).Scan(&logs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if logs[0] != logs[1] || logs[0] == "" {
			t.Fatalf("deferred merge logged %q, MergeChanges %q", logs[0], logs[1])
		}
	})
}
