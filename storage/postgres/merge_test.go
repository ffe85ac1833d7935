package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

func state(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	var s *string
	if err := c.QueryRow(context.Background(), q).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s == nil {
		return "<null>"
	}
	return *s
}

// loadedPermits opens a database with the test snapshot loaded as
// permits, a reader's session of it, and a DuckDB to write files with.
func loadedPermits(t *testing.T) (*DB, *pgx.Conn, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	snap := mustParquet(t, duck, snapQuery)
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{snap}); return err }); err != nil {
		t.Fatal(err)
	}
	return db, mustReader(t, u), duck
}

// The same fit checks as the DuckDB engine's (storage's
// TestTx_MergeChanges_refusesWhatDoesNotFit), in its words.
func TestTx_MergeChanges_refusesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	db, r, duck := loadedPermits(t)
	before := state(t, r, "SELECT string_agg(_ploti_record_id || permit, ' ' ORDER BY _ploti_record_id) FROM permits")
	for _, tc := range []struct{ name, query, want string }{
		{"added id already held", "SELECT 'added' AS _ploti_change, * FROM (" + snapQuery + ") WHERE _ploti_record_id = 'r3'", "added id r3 is already held"},
		{"removed id not held", "SELECT 'removed' AS _ploti_change, * REPLACE ('zz' AS _ploti_record_id) FROM (" + snapQuery + ") LIMIT 1", "removed id zz is not held"},
		{"changed id not held, among ids that are", "SELECT CASE WHEN _ploti_record_id = 'r2' THEN 'changed' ELSE 'removed' END AS _ploti_change, * REPLACE (CASE WHEN _ploti_record_id = 'r2' THEN 'r2x' ELSE _ploti_record_id END AS _ploti_record_id) FROM (" + snapQuery + ")", "changed id r2x is not held"},
		{"missing column", "SELECT 'changed' AS _ploti_change, * EXCLUDE (tags) FROM (" + snapQuery + ") LIMIT 1", "lacks column(s) tags"},
		{"extra column", "SELECT 'changed' AS _ploti_change, 1 AS surprise, * FROM (" + snapQuery + ") LIMIT 1", "has column surprise"},
		{"bad change kind", "SELECT 'moved' AS _ploti_change, * FROM (" + snapQuery + ") LIMIT 1", "not added, changed or removed"},
		{"repeated id", "SELECT 'changed' AS _ploti_change, * REPLACE ('r1' AS _ploti_record_id) FROM (" + snapQuery + ")", "0 null and 4 duplicate"},
		{"a value that does not cast", "SELECT 'changed' AS _ploti_change, * REPLACE ('lots' AS valuation) FROM (" + snapQuery + ") LIMIT 1", "Conversion Error"},
		{"a polygon in a point column", "SELECT 'changed' AS _ploti_change, * REPLACE (ST_AsWKB('POLYGON ((0 0, 1 0, 1 1, 0 0))'::GEOMETRY) AS geometry) FROM (" + snapQuery + ") LIMIT 1", "does not match column type (Point)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParquet(t, duck, tc.query)
			err := db.Update(ctx, func(tx *Tx) error { _, err := tx.MergeChanges(ctx, "ds", 2, "permits", testCols, f, -1); return err })
			if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadData saying %q", err, tc.want)
			}
			if after := state(t, r, "SELECT string_agg(_ploti_record_id || permit, ' ' ORDER BY _ploti_record_id) FROM permits"); after != before {
				t.Fatalf("table after the refusal: %s, was %s", after, before)
			}
			if n := count(t, r, "SELECT count(*) FROM _ploti.changes"); n != 0 {
				t.Fatalf("%d changes logged by a refused merge", n)
			}
		})
	}
}

// A load and a merge of the same table in one transaction: the merge acts
// on the table the load built, and both commit together.
func TestTx_MergeChanges_afterALoadInTheSameTransaction(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	snap := mustParquet(t, duck, snapQuery)
	changes := mustParquet(t, duck, "SELECT 'removed' AS _ploti_change, * FROM ("+snapQuery+") WHERE _ploti_record_id IN ('r0', 'r1')")
	err := db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{snap}); err != nil {
			return err
		}
		if _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{snap}); err != nil { // a second load replaces the first
			return err
		}
		_, err := tx.MergeChanges(ctx, "ds", 2, "permits", testCols, changes, 5)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	if got, want := state(t, r, "SELECT string_agg(_ploti_record_id, ' ' ORDER BY _ploti_record_id) FROM permits"), "r2 r3 r4"; got != want {
		t.Fatalf("table = %s, want %s", got, want)
	}
	if got, want := state(t, r, "SELECT string_agg(indexname, ' ' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'permits'"), "permits_geometry_gist permits_pkey"; got != want {
		t.Fatalf("indexes = %s, want %s", got, want)
	}
}

// A MINOR schema change: the column is added, a merge fills it for the
// rows it changes.
func TestTx_AddColumnsThenMerge(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	snap := mustParquet(t, duck, snapQuery)
	cols2 := append(append([]ploti.Column{}, testCols...), col("units", ploti.TypeInteger),
		ploti.Column{Name: "site", Type: ploti.Type{Type: ploti.TypeGeometry}})
	changes := mustParquet(t, duck, "SELECT 'changed' AS _ploti_change, *, 3 AS units, ST_AsWKB('POINT Z (1 2 3)'::GEOMETRY) AS site FROM ("+snapQuery+") WHERE _ploti_record_id = 'r0'")
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{snap}); return err }); err != nil {
		t.Fatal(err)
	}
	err := db.Update(ctx, func(tx *Tx) error {
		if err := tx.AddColumns(ctx, "permits", cols2[len(testCols):]); err != nil {
			return err
		}
		_, err := tx.MergeChanges(ctx, "ds", 2, "permits", cols2, changes, -1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	if got, want := state(t, r, "SELECT count(units) || ' ' || (count(*) - count(units)) || ' ' || string_agg(ST_AsText(site), '') FROM permits"), "1 4 POINT Z (1 2 3)"; got != want {
		t.Fatalf("units filled, null, site = %s, want %s", got, want)
	}
}

// An id map goes to _ploti.id_map (by COPY) and rewrites --id-ref columns;
// one that maps two ids to one is refused.
func TestTx_ApplyIDMap(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	r := mustReader(t, u)
	if _, err := r.Exec(ctx, "CREATE TABLE public.notes (record text, note text); INSERT INTO public.notes VALUES ('r1', 'a'), ('r2', 'b')"); err != nil {
		t.Fatal(err)
	}
	good := mustParquet(t, duck, "SELECT * FROM (VALUES ('r1', 'r1b'), ('r3', 'r3b')) v(from_id, to_id)")
	refs := []storage.IDRef{{Table: "notes", Column: "record", DatasetID: "ds"}}
	var n int64
	err := db.Update(ctx, func(tx *Tx) (err error) { n, err = tx.ApplyIDMap(ctx, "ds", 4, good, refs); return err })
	if err != nil || n != 2 {
		t.Fatalf("n = %d, err = %v", n, err)
	}
	if got, want := state(t, r, "SELECT string_agg(version || ':' || from_id || '>' || to_id, ' ' ORDER BY from_id) FROM _ploti.id_map"), "4:r1>r1b 4:r3>r3b"; got != want {
		t.Fatalf("id map = %s, want %s", got, want)
	}
	if got, want := state(t, r, "SELECT string_agg(record, ' ' ORDER BY note) FROM notes"), "r1b r2"; got != want {
		t.Fatalf("notes = %s, want %s", got, want)
	}
	bad := mustParquet(t, duck, "SELECT * FROM (VALUES ('r5', 'x'), ('r6', 'x')) v(from_id, to_id)")
	err = db.Update(ctx, func(tx *Tx) error { _, err := tx.ApplyIDMap(ctx, "ds", 5, bad, refs); return err })
	if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), "1 repeated to_id") {
		t.Fatalf("err = %v, want a DataError for two ids mapped to one", err)
	}
}

// PostgreSQL cuts a name past 63 bytes without a word, the same way in
// every statement: a long name loads and merges, but two that share their
// first 63 bytes are one column there, and a MINOR change adding the
// second would add nothing. Such a pair is refused, naming both, at a load
// and at the MINOR change alike.
func TestTx_ColumnNamesPastPostgreSQLsIdentifiers(t *testing.T) {
	ctx := context.Background()
	db, _ := mustOpen(t)
	duck := mustDuck(t)
	long := strings.Repeat("permit_valuation_", 4) + "usd" // 71 bytes
	twin := long[:63] + "_eur"
	snap := mustParquet(t, duck, "SELECT *, 7 AS "+long+" FROM ("+snapQuery+")")
	cols := append(append([]ploti.Column{}, testCols...), col(long, ploti.TypeInteger))
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", cols, []string{snap}); return err }); err != nil {
		t.Fatalf("a %d-byte column: %v", len(long), err)
	}
	err := db.Update(ctx, func(tx *Tx) error {
		return tx.AddColumns(ctx, "permits", []ploti.Column{col(twin, ploti.TypeInteger)})
	})
	if err == nil || !strings.Contains(err.Error(), twin) || !strings.Contains(err.Error(), "first 63 bytes") {
		t.Fatalf("adding %s beside %s: %v", twin, long, err)
	}
	third := strings.Repeat("inspection_outcome_", 4) // 76 bytes, its own first 63
	if err := db.Update(ctx, func(tx *Tx) error {
		return tx.AddColumns(ctx, "permits", []ploti.Column{col(third, ploti.TypeInteger), col("units", ploti.TypeInteger)})
	}); err != nil {
		t.Fatalf("adding a long column apart from the others, and a short one: %v", err)
	}
	both := append(append([]ploti.Column{}, testCols...), col(long, ploti.TypeInteger), col(twin, ploti.TypeInteger))
	snap2 := mustParquet(t, duck, "SELECT *, 7 AS "+long+", 8 AS "+twin+" FROM ("+snapQuery+")")
	err = db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits2", both, []string{snap2}); return err })
	if err == nil || !strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), twin) {
		t.Fatalf("loading %s beside %s: %v", twin, long, err)
	}
}

// A table without geometry merges with no savepoint around its COPY (the
// statements of its round trips differ), and a misfit is still refused.
func TestTx_MergeChanges_withoutGeometry(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	cols := testCols[:len(testCols)-1]
	plain := "SELECT * EXCLUDE (geometry) FROM (" + snapQuery + ")"
	snap := mustParquet(t, duck, plain)
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "plain", cols, []string{snap}); return err }); err != nil {
		t.Fatal(err)
	}
	changes := mustParquet(t, duck, "SELECT CASE _ploti_record_id WHEN 'r0' THEN 'removed' ELSE 'changed' END AS _ploti_change, * REPLACE ('Q' AS permit) FROM ("+plain+") WHERE _ploti_record_id IN ('r0', 'r1')")
	var st storage.MergeStats
	err := db.Update(ctx, func(tx *Tx) (err error) {
		st, err = tx.MergeChanges(ctx, "ds", 2, "plain", cols, changes, -1)
		return err
	})
	if err != nil || st.Changed != 1 || st.Removed != 1 || st.Rows != 4 {
		t.Fatalf("merge: %+v, %v", st, err)
	}
	r := mustReader(t, u)
	if got, want := state(t, r, "SELECT string_agg(_ploti_record_id || permit, ' ' ORDER BY _ploti_record_id) FROM plain"), "r1Q r2P2 r3P3 r4P4"; got != want {
		t.Fatalf("table = %s, want %s", got, want)
	}
	if n := count(t, r, "SELECT count(*) FROM _ploti.changes WHERE dataset_id = 'ds' AND version = 2"); n != 2 {
		t.Fatalf("changes logged = %d, want 2", n)
	}
	again := mustParquet(t, duck, "SELECT 'added' AS _ploti_change, * FROM ("+plain+") WHERE _ploti_record_id = 'r2'")
	err = db.Update(ctx, func(tx *Tx) error { _, err := tx.MergeChanges(ctx, "ds", 3, "plain", cols, again, -1); return err })
	if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), "added id r2 is already held") {
		t.Fatalf("err = %v, want the added id refused", err)
	}
}

// Without a unique index on _ploti_record_id checked at once (a user
// dropped the primary key, or made the key deferred to the commit), the
// merge still refuses an added id the table holds: the DELETE's check
// looks the added ids up too.
func TestTx_MergeChanges_addedIdHeldWithoutAnImmediateKey(t *testing.T) {
	for _, tc := range []struct{ name, add string }{
		{"key dropped", ""},
		{"key deferred to the commit", "ALTER TABLE permits ADD CONSTRAINT permits_later UNIQUE (_ploti_record_id) DEFERRABLE INITIALLY DEFERRED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, r, duck := loadedPermits(t)
			pk := state(t, r, "SELECT conname FROM pg_constraint WHERE conrelid = 'permits'::regclass AND contype = 'p'")
			if _, err := r.Exec(ctx, "ALTER TABLE permits DROP CONSTRAINT "+pgx.Identifier{pk}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			if tc.add != "" {
				if _, err := r.Exec(ctx, tc.add); err != nil {
					t.Fatal(err)
				}
			}
			before := state(t, r, "SELECT string_agg(_ploti_record_id || permit, ' ' ORDER BY _ploti_record_id) FROM permits")
			f := mustParquet(t, duck, "SELECT 'added' AS _ploti_change, * FROM ("+snapQuery+") WHERE _ploti_record_id = 'r3'")
			err := db.Update(ctx, func(tx *Tx) error { _, err := tx.MergeChanges(ctx, "ds", 2, "permits", testCols, f, -1); return err })
			if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), "added id r3 is already held") {
				t.Fatalf("err = %v, want ErrBadData saying added id r3 is already held", err)
			}
			if after := state(t, r, "SELECT string_agg(_ploti_record_id || permit, ' ' ORDER BY _ploti_record_id) FROM permits"); after != before {
				t.Fatalf("table after the refusal: %s, was %s", after, before)
			}
		})
	}
}

// The INSERT's refusal by the id's key names the id from PostgreSQL's
// English detail, and still refuses in other words when the server's
// lc_messages translates it; another index's refusal is not the id's.
func TestAddedHeld(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		index      string
		want       string
		wantRefuse bool
	}{
		{"English detail", &pgconn.PgError{Code: "23505", ConstraintName: "permits_pkey", Detail: "Key (_ploti_record_id)=(r3 (a), b) already exists."}, "permits_pkey", "added id r3 (a), b", true},
		{"translated detail", &pgconn.PgError{Code: "23505", ConstraintName: "permits_pkey", Detail: "Schlüssel (_ploti_record_id)=(r3) existiert bereits."}, "permits_pkey", "an added id", true},
		{"another index", &pgconn.PgError{Code: "23505", ConstraintName: "permits_permit_key", Detail: "Key (permit)=(P1) already exists."}, "permits_pkey", "", false},
		{"no key on the id", &pgconn.PgError{Code: "23505", ConstraintName: "permits_pkey"}, "", "", false},
		{"another error", &pgconn.PgError{Code: "23502", ConstraintName: "permits_pkey"}, "permits_pkey", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := addedHeld(fmt.Errorf("batch: %w", tc.err), tc.index)
			if got != tc.want || ok != tc.wantRefuse {
				t.Fatalf("addedHeld = %q, %v; want %q, %v", got, ok, tc.want, tc.wantRefuse)
			}
		})
	}
}

// A changed row is updated where it lies: the table keeps a tenth of each
// page free (fillfactor 90), so the new row stays on the old one's page,
// and with its id and geometry as they were no index gains an entry (a
// HOT update, which the table's statistics count). Deleted and inserted
// again, it would go to the table's last page and into every index.
func TestTx_MergeChanges_updatesAChangedRowOnItsPage(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	duck := mustDuck(t)
	many := strings.Replace(snapQuery, "range(5)", "range(3000)", 1)
	snap := mustParquet(t, duck, many)
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "permits", testCols, []string{snap}); return err }); err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	if got := state(t, r, "SELECT array_to_string(reloptions, ' ') FROM pg_class WHERE oid = 'permits'::regclass"); !strings.Contains(got, "fillfactor=90") {
		t.Fatalf("the table's storage parameters: %s, want fillfactor=90 among them", got)
	}
	page := func(id string) int64 {
		return count(t, r, "SELECT (ctid::text::point)[0]::bigint FROM permits WHERE _ploti_record_id = $1", id)
	}
	if p, last := page("r1"), count(t, r, "SELECT max((ctid::text::point)[0])::bigint FROM permits"); p >= last {
		t.Fatalf("r1 is on page %d of %d: the test needs it before the last", p, last)
	}
	before := page("r1")
	changes := mustParquet(t, duck, "SELECT 'changed' AS _ploti_change, * REPLACE ('P1 again' AS permit) FROM ("+many+") WHERE _ploti_record_id = 'r1'")
	if err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.MergeChanges(ctx, "ds", 2, "permits", testCols, changes, -1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := state(t, r, "SELECT permit FROM permits WHERE _ploti_record_id = 'r1'"); got != "P1 again" {
		t.Fatalf("r1's permit = %s, want P1 again", got)
	}
	if after := page("r1"); after != before {
		t.Fatalf("r1 moved from page %d to page %d: deleted and inserted, not updated in place", before, after)
	}
	// The server counts a session's updates when it flushes the session's
	// statistics; asked to, it does before the next statement's answer.
	if _, err := db.Conn().Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count(t, r, "SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'permits'::regclass") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no HOT update of permits counted: %d updates in all", count(t, r, "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relid = 'permits'::regclass"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A dataset table an earlier build made without the storage parameters
// gets them at the next open, so its merges update rows on their pages
// too; a table of the user's in the same schema is left as it is.
func TestOpen_givesAnEarlierBuildsTablesTheirStorageParameters(t *testing.T) {
	ctx := context.Background()
	u, r := earlierBuildsTables(t)
	options := func(table string) string {
		return state(t, r, fmt.Sprintf("SELECT coalesce(array_to_string(reloptions, ' '), '') || ' xmin ' || xmin FROM pg_class WHERE oid = '%s'::regclass", table))
	}
	reopen := func() string {
		t.Helper()
		var logged strings.Builder
		again, err := Open(ctx, u, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		if err != nil {
			t.Fatal(err)
		}
		again.Close()
		return logged.String()
	}
	// A lock the ALTER waits for (a VACUUM's) leaves the table as it is
	// after upgradeWait, and the open goes on, saying so; the next open
	// sets them.
	held := mustReader(t, u)
	if _, err := held.Exec(ctx, "BEGIN; LOCK TABLE permits, zoning IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	before := options("permits")
	// One warning for both, however many: their count, the first, the reason.
	if logged := reopen(); strings.Count(logged, "level=WARN") != 1 || !strings.Contains(logged, "tables=2") ||
		!strings.Contains(logged, "permits") || !strings.Contains(logged, "error=") || !strings.Contains(logged, "lock timeout") {
		t.Fatalf("the open's log while permits and zoning are locked: %q, want one warning counting both, naming permits and the lock timeout", logged)
	}
	if got := options("permits"); got != before {
		t.Fatalf("permits while locked: %q, want it as it was (%q)", got, before)
	}
	if _, err := held.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if logged := reopen(); !strings.Contains(logged, "level=INFO") || !strings.Contains(logged, "tables=2") {
		t.Fatalf("the open's log: %q, want two tables given their parameters", logged)
	}
	got := options("permits")
	if !strings.HasPrefix(got, "fillfactor=90 vacuum_truncate=off xmin ") {
		t.Fatalf("permits after the open: %q, want fillfactor=90 and vacuum_truncate off", got)
	}
	for _, table := range []string{"mine", "other.permits"} {
		if got := options(table); !strings.HasPrefix(got, " xmin ") {
			t.Fatalf("%s after the open: %q, want it untouched", table, got)
		}
	}
	// Another open finds nothing to change: the catalog row is the same,
	// and it says nothing.
	if logged := reopen(); logged != "" {
		t.Fatalf("another open logged %q, want nothing", logged)
	}
	if again := options("permits"); again != got {
		t.Fatalf("permits after another open: %q, was %q: set again", again, got)
	}
}

// earlierBuildsTables makes a database as an earlier build left it: the
// dataset tables permits and zoning without the storage parameters, registered with
// a table that no longer exists; beside it a user's table in the schema
// and one of the same name in another schema. It returns the database
// and a reader's session on it.
func earlierBuildsTables(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	u := pgtest.DB(t)
	db, err := Open(ctx, u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := mustParquet(t, mustDuck(t), snapQuery)
	for _, table := range []string{"permits", "zoning"} {
		if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, table, testCols, []string{snap}); return err }); err != nil {
			db.Close()
			t.Fatal(err)
		}
	}
	db.Close()
	r := mustReader(t, u)
	for _, q := range []string{
		"ALTER TABLE permits RESET (fillfactor, vacuum_truncate)",
		"ALTER TABLE zoning RESET (fillfactor, vacuum_truncate)",
		"CREATE TABLE mine (a int)",
		"CREATE SCHEMA other",
		"CREATE TABLE other.permits (a int)",
		"INSERT INTO _ploti.datasets (dataset_id, table_name, status, updated_at) VALUES ('ds', 'permits', 'current', now()), ('ds2', 'zoning', 'current', now()), ('gone', 'not_there', 'current', now())",
	} {
		if _, err := r.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return u, r
}
