package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// The migrations run once, one row a file, and a reopen finds them done.
// That the number is the DuckDB file's is storage/backends' test of the
// same name.
func TestOpen_migratesOnceAndReopens(t *testing.T) {
	db, u := mustOpen(t)
	db.Close()
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		db, err := Open(ctx, u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n, rows int64
		if err := db.Conn().QueryRow(ctx, "SELECT max(version), count(*) FROM _ploti.schema_migrations").Scan(&n, &rows); err != nil {
			t.Fatal(err)
		}
		ms, _ := migrations()
		if got, want := n, int64(MigrationVersion()); got != want || rows != int64(len(ms)) {
			t.Fatalf("migration = %d (%d rows), want %d (%d rows, one a file)", got, rows, want, len(ms))
		}
		db.Close()
	}
}

func TestTx_LoadSnapshotAndMerge(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	snap := mustParquet(t, duck, snapQuery)
	changes := mustParquet(t, duck, `SELECT * FROM (VALUES
		('r1', 'changed', 'fl-orange', 'P1x', 9.99::DECIMAL(14,2), TIMESTAMPTZ '2026-02-01 00:00:00+00', ['c'], ST_AsWKB('POINT (7 7)'::GEOMETRY)),
		('r2', 'removed', NULL, NULL, NULL, NULL, NULL, NULL),
		('r9', 'added', 'fl-orange', 'P9', 1.00::DECIMAL(14,2), TIMESTAMPTZ '2026-03-01 00:00:00+00', [], ST_AsWKB('POINT (9 9)'::GEOMETRY)))
		v(_ploti_record_id, _ploti_change, _ploti_place_id, permit, valuation, issued, tags, geometry)`)
	err := db.Update(ctx, func(tx *Tx) error {
		n, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{snap})
		if err == nil && n != 5 {
			t.Fatalf("rows = %d, want 5", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	var typ string
	if err := r.QueryRow(ctx, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'public.permits'::regclass AND attname = 'geometry'").Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "geometry(Point,4326)" {
		t.Fatalf("geometry column type = %q", typ)
	}
	var st storage.MergeStats
	err = db.Update(ctx, func(tx *Tx) error {
		st, err = tx.MergeChanges(ctx, "ds", 2, "permits", testCols, changes, -1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Added != 1 || st.Changed != 1 || st.Removed != 1 || st.Rows != 5 {
		t.Fatalf("stats = %+v", st)
	}
	var permit, wkt, val, tags string
	if err := r.QueryRow(ctx, "SELECT permit, ST_AsText(geometry), valuation::text, tags::text FROM permits WHERE _ploti_record_id = 'r1'").Scan(&permit, &wkt, &val, &tags); err != nil {
		t.Fatal(err)
	}
	if permit != "P1x" || wkt != "POINT(7 7)" || val != "9.99" || tags != "{c}" {
		t.Fatalf("r1 = %q %q %q %q", permit, wkt, val, tags)
	}
	if n := count(t, r, "SELECT count(*) FROM _ploti.changes WHERE dataset_id = 'ds' AND version = 2"); n != 3 {
		t.Fatalf("changes logged = %d, want 3", n)
	}
}

func TestTx_LoadSnapshot_refusesBadFilesAndKeepsOldTable(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	good := mustParquet(t, duck, snapQuery)
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{good}); return err }); err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	for _, tc := range []struct{ name, query, want string }{
		{"repeated id", "SELECT * REPLACE ('r1' AS _ploti_record_id) FROM (" + snapQuery + ")", "snapshot has 0 null and 4 duplicate _ploti_record_id values"},
		{"null id", "SELECT * REPLACE (NULL AS _ploti_record_id) FROM (" + snapQuery + ") LIMIT 1", "snapshot has 1 null"},
		{"missing column", "SELECT * EXCLUDE (tags) FROM (" + snapQuery + ")", "lacks column(s) tags"},
		{"a value that does not cast", "SELECT * REPLACE ('lots' AS valuation) FROM (" + snapQuery + ")", "Conversion Error"},
		{"a line in a point column", "SELECT * REPLACE (ST_AsWKB('LINESTRING (0 0, 1 1)'::GEOMETRY) AS geometry) FROM (" + snapQuery + ")", "does not match column type (Point)"},
		{"not WKB", "SELECT * REPLACE ('\\x00\\x01'::BLOB AS geometry) FROM (" + snapQuery + ")", "load:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParquet(t, duck, tc.query)
			err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{f}); return err })
			if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadData saying %q", err, tc.want)
			}
			if n := count(t, r, "SELECT count(DISTINCT _ploti_record_id) FROM permits"); n != 5 {
				t.Fatalf("old table lost: %d distinct ids", n)
			}
		})
	}
	f := mustParquet(t, duck, "SELECT 1 AS x")
	err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{f + ".missing"})
		return err
	})
	if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), "not a readable Parquet snapshot") {
		t.Fatalf("err = %v, want a DataError for an unreadable file", err)
	}
	if n := count(t, r, "SELECT count(*) FROM pg_tables WHERE tablename LIKE '_ploti_load%'"); n != 0 {
		t.Fatalf("%d built tables left behind", n)
	}
}

func TestTx_CreateSnapshot_refusesATableThatExists(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	snap := mustParquet(t, duck, snapQuery)
	if _, err := mustReader(t, u).Exec(ctx, "CREATE TABLE public.permits (mine int)"); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, func(tx *Tx) error { _, err := tx.CreateSnapshot(ctx, "permits", testCols, []string{snap}); return err })
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("err = %v, want already exists", err)
	}
}
