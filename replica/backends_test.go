package replica

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

// testBackends is the table of storage engines the tests' replicas can be
// kept in: each gives a fresh place for one. PLOTI_TEST_BACKEND picks the
// one mustOpen uses (default duckdb); .ci/run runs the scenarios again
// with postgres.
var testBackends = map[string]func(tb testing.TB) string{
	"duckdb":   func(tb testing.TB) string { return tb.TempDir() + "/replica.duckdb" },
	"postgres": func(tb testing.TB) string { return pgtest.DB(tb) },
}

var testBackend = func() string {
	if b := os.Getenv("PLOTI_TEST_BACKEND"); b != "" {
		return b
	}
	return "duckdb"
}()

// freshReplica is a new place for a replica in the tests' backend.
func freshReplica(tb testing.TB) string {
	tb.Helper()
	open, ok := testBackends[testBackend]
	if !ok {
		tb.Fatalf("PLOTI_TEST_BACKEND=%s: want duckdb or postgres", testBackend)
	}
	return open(tb)
}

// onlyInAFile skips, on another backend, a test of what only a DuckDB
// file has so far (docs/decisions.md 48 lists it), saying what.
func onlyInAFile(tb testing.TB, what string) {
	tb.Helper()
	if testBackend != "duckdb" {
		tb.Skip(what + ": a DuckDB file's only, not yet " + testBackend + "'s (docs/decisions.md 48)")
	}
}

// tableForDiff is a dataset's table where the emulator's Diff (DuckDB SQL)
// can read it: the replica's own file, or, for a PostgreSQL replica, a
// copy of the table's rows in an in-memory DuckDB, each value passed as
// PostgreSQL's text of it (geometry as WKT, lists and JSON as JSON) and
// cast back to the schema's DuckDB type.
func tableForDiff(tb testing.TB, r *Replica, d *storage.Dataset) (*sql.DB, string) {
	tb.Helper()
	if isFile(r.db) {
		return r.DB(), storage.AsGeometry(r.db.Geometry(), d.Table, d.Columns)
	}
	ctx := context.Background()
	duck, err := duckread.OpenPlain(ctx, "", storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { duck.Close() })
	cols := append([]ploti.Column{{Name: storage.ColRecordID, Type: ploti.Type{Type: ploti.TypeString}},
		{Name: storage.ColPlaceID, Type: ploti.Type{Type: ploti.TypeString}}}, d.Columns...)
	var defs, sel, casts []string
	for _, c := range cols {
		t, err := duckread.DuckType(c.Type)
		if err != nil {
			tb.Fatal(err)
		}
		q := storage.Ident(c.Name)
		defs = append(defs, q+" "+t)
		switch c.Type.Type {
		case ploti.TypeGeometry:
			sel = append(sel, "ST_AsText("+q+")")
		case ploti.TypeList, ploti.TypeJSON:
			sel = append(sel, "to_json("+q+")::text")
		default:
			sel = append(sel, q+"::text")
		}
		if c.Type.Type == ploti.TypeList {
			casts = append(casts, "CAST(CAST(? AS JSON) AS "+t+")")
		} else {
			casts = append(casts, "CAST(? AS "+t+")")
		}
	}
	if _, err := duck.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s (%s)", storage.Ident(d.Table), strings.Join(defs, ", "))); err != nil {
		tb.Fatal(err)
	}
	rows, err := r.DB().QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+storage.Ident(d.Table))
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	ins := fmt.Sprintf("INSERT INTO %s VALUES (%s)", storage.Ident(d.Table), strings.Join(casts, ", "))
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		args := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatal(err)
		}
		for i, v := range vals {
			if v.Valid {
				args[i] = v.String
			}
		}
		if _, err := duck.ExecContext(ctx, ins, args...); err != nil {
			tb.Fatalf("copy a row of %s: %v", d.Table, err)
		}
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return duck, storage.Ident(d.Table)
}

// A replica kept in PostgreSQL: replica.Open takes a postgres:// URL, and
// a sync loads and then merges the datasets as it does into a file.
func TestPostgres_syncLoadsAndMerges(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	u := pgtest.DB(t)
	if !postgres.IsURL(u) {
		t.Fatalf("pgtest URL %s is not a postgres:// URL", u)
	}
	r := mustOpen(t, em, sub, u)
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 2 {
		t.Fatalf("first sync: %+v, want 2 snapshots loaded", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	res = mustSync(t, r)
	if res.ChangesMerged != 2 {
		t.Fatalf("second sync: %+v, want 2 merges", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	assertMatchesTruth(t, r, em, "ds_parcels", 2)
}

// What only a DuckDB file has so far is refused in words on a database,
// never half done: history and marks (storage.ErrFileOnly).
func TestPostgres_fileOnlyFeaturesAreRefused(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	u := pgtest.DB(t)
	if _, err := Open(ctx, u, Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, History: []string{HistoryAll}}); !errors.Is(err, storage.ErrFileOnly) {
		t.Fatalf("open with history: %v, want ErrFileOnly", err)
	}
	r := mustOpen(t, em, sub, u)
	mustSync(t, r)
	if _, err := r.Changes(ctx, "me", ChangesOptions{}); !errors.Is(err, storage.ErrFileOnly) {
		t.Fatalf("changes since a mark: %v, want ErrFileOnly", err)
	}
	if _, err := r.Story(ctx, "ds_permits", "x"); !errors.Is(err, storage.ErrFileOnly) {
		t.Fatalf("a story: %v, want ErrFileOnly", err)
	}
}

// A reader that moves marks opens a database as its writer, and so gives
// the dataset tables an earlier build made their storage parameters: it
// says so in the reader's log, as a writer's open does.
func TestPostgres_aMarksReaderLogsTheTablesItUpgrades(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	u := pgtest.DB(t)
	r := mustOpen(t, em, sub, u)
	mustSync(t, r)
	_, err := r.DB().ExecContext(ctx, "ALTER TABLE ds_permits RESET (fillfactor, vacuum_truncate)")
	must(t, err)
	must(t, r.Close())
	var logged strings.Builder
	rd, err := OpenReader(ctx, u, ReaderOptions{Marks: true, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	must(t, err)
	must(t, rd.Close())
	if !strings.Contains(logged.String(), "level=INFO") || !strings.Contains(logged.String(), " tables=1 ") {
		t.Fatalf("the reader's log: %q, want one table given its storage parameters", logged.String())
	}
}

// The tables go in the schema the URL names (?schema=feeds; public
// without it), _ploti beside them, and readers find them there.
func TestPostgres_schemaFromURL(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	u := pgtest.DB(t) + "&schema=feeds"
	r := mustOpen(t, em, sub, u)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	var n int
	must(t, r.DB().QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'feeds' AND table_name IN ('ds_permits', 'ds_parcels')`).Scan(&n))
	if n != 2 {
		t.Fatalf("%d dataset tables in schema feeds, want 2", n)
	}
	if !strings.Contains(r.Path(), "schema=feeds") {
		t.Fatalf("the database's name %s does not say its schema", r.Path())
	}
}

// isFile tells whether db is kept in a local file (a DuckDB file), whose
// folder, spool and attachments folder are beside it.
func isFile(db *storage.DB) bool {
	_, ok := db.Engine().(storage.File)
	return ok
}
