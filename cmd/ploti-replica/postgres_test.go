package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
	"github.com/ploti-replica/ploti-replica/storage/postgres"
)

// The demo, status and holds against a PostgreSQL database:
// --db takes a postgres:// URL, and the output says how psql and QGIS
// read it. A second demo replaces the first's replica; a database with a
// replica the demo did not write is refused.
func TestDemo_postgres(t *testing.T) {
	u := pgtest.DB(t)
	code, out, errs := cli(t, nil, "demo", "--db", u)
	if code != exitOK {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"bootstrapped", "3 changes file(s) merged", "issued permits worth", "database:      " + postgres.Redact(u),
		"PostGIS geometry in SRID 4326", "watches: 1 dataset(s) watched, 1 merged", emulator.DemoWatched + "  watch", "psql '", "Add PostGIS Layers"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	if code, out, errs := cli(t, nil, "status", "--db", u); code != exitOK || !strings.Contains(out, "ds_fl_orange_permits       feed    ds_fl_orange_permits       3") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := cli(t, nil, "holds", "list", "--db", u); code != exitOK || !strings.Contains(out, "no holds") {
		t.Fatalf("holds list: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := cli(t, nil, "demo", "--db", u); code != exitOK || !strings.Contains(out, "issued permits worth") {
		t.Fatalf("a second demo on the first's database: exit %d\n%s\n%s", code, out, errs)
	}
	db, err := postgres.Open(context.Background(), u, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Conn().Exec(context.Background(), "COMMENT ON TABLE _ploti.subscription IS NULL")
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, nil, "demo", "--db", u); code != exitUsage || !strings.Contains(errs, "holds a replica that the demo did not write") {
		t.Fatalf("a demo on a replica it did not write: exit %d, want %d\n%s", code, exitUsage, errs)
	}
}

// "One writer per database and subscription: a PostgreSQL advisory lock,
// with the same --lock-timeout message and exit 4".
func TestSync_postgresLocked(t *testing.T) {
	_, _, vars := demoWorld(t)
	// A password in the URL (the test cluster trusts its socket, so any
	// does) never reaches the output, a log line or an error.
	const pw = "s3cret-pw"
	vars["PLOTI_DB"] = strings.Replace(pgtest.DB(t), "ploti@", "ploti:"+pw+"@", 1)
	code, out, errs := cli(t, vars, "sync")
	if code != exitOK || !strings.Contains(out, "3 snapshot(s) loaded") {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errs)
	}
	seen := out + errs
	holder, err := postgres.Open(context.Background(), vars["PLOTI_DB"], postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	code, out, errs = cli(t, vars, "sync", "--lock-timeout", "300ms", "--log-format", "json")
	seen += out + errs
	if code != exitLocked {
		t.Fatalf("exit %d, want %d (locked)\n%s", code, exitLocked, errs)
	}
	for _, want := range []string{"waiting for the file", "Conflicting lock is held by", "gave up after 300ms", "locked by another process"} {
		if !strings.Contains(errs, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, errs)
		}
	}
	holder.Close()
	for _, flag := range [][]string{{"--publish", t.TempDir() + "/copy.duckdb"}, {"--geometry", "wkb"}} {
		if code, _, errs := cli(t, vars, append([]string{"sync"}, flag...)...); code != exitUsage || !strings.Contains(errs, flag[0]+" ") {
			t.Fatalf("sync %s on a database: exit %d, want %d saying why\n%s", flag[0], code, exitUsage, errs)
		}
	}
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync once the holder let go: exit %d\n%s%s", code, out, errs)
	}
	// A release of a dataset the database does not hold names it, not
	// its password.
	code, out, errs = cli(t, vars, "holds", "release", "ds_nope")
	if seen += out + errs; code != exitFailure || !strings.Contains(errs, "holds no dataset ds_nope") {
		t.Fatalf("holds release ds_nope: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, vars, "status")
	if seen += out + errs; code != exitOK || strings.Contains(seen, pw) || !strings.Contains(seen, "ploti@") {
		t.Fatalf("status: exit %d; the output names the database without its password?\n%s", code, seen)
	}
}

// serve keeps a PostgreSQL database current as it keeps a file: the poll
// applies two versions, and the database holds the last one's rows.
func TestServe_postgresPollCatchesUp(t *testing.T) {
	w := newServeWorld(t)
	w.db = pgtest.DB(t)
	w.em.DropDeliveries(-1)
	w.start(t, time.Second, "--poll", "300ms")
	w.publish(t)
	w.publish(t)
	w.awaitApplied(t, 2)
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := backends.Open(ctx, w.db, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := db.Dataset(ctx, serveDataset)
	if err != nil {
		t.Fatal(err)
	}
	var rows, changed int64
	var first string
	if err := db.SQL().QueryRowContext(ctx, "SELECT count(*), count(*) FILTER (WHERE status = 'changed in round 3'), min(permit) FROM "+
		storage.Ident(d.Table)).Scan(&rows, &changed, &first); err != nil {
		t.Fatal(err)
	}
	if d.Version != 3 || rows != 20 || d.RowCount != 20 || changed != 1 || first != "P-003" {
		t.Fatalf("the database holds version %d, %d rows (registry %d), %d changed in round 3, from %s; want version 3's 20 rows from P-003, one changed",
			d.Version, rows, d.RowCount, changed, first)
	}
}

// verify on a database: a row changed, deleted or added and a column
// altered by hand (as a user's stray statement would) are found and said
// in words, and --repair restores each, as in a file (TestVerify).
func TestVerify_postgres(t *testing.T) {
	_, _, vars := demoWorld(t)
	vars["PLOTI_DB"] = pgtest.DB(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cli(t, vars, "verify"); code != exitOK || !strings.Contains(out, "all 3 dataset(s) verified") {
		t.Fatalf("verify on a clean database: exit %d\n%s%s", code, out, errs)
	}
	permits := storage.Ident(emulator.DemoPermits)
	for _, tc := range []struct{ name, stmt, want string }{
		{"a row changed", "UPDATE " + permits + " SET status = 'forged' WHERE permit_number = 'BP-0003'",
			"1 row(s) differ from version 1 in status (e.g. "},
		{"a row deleted", "DELETE FROM " + permits + " WHERE permit_number = 'BP-0004'",
			"1 row(s) of version 1 are missing from the table (e.g. "},
		{"a row added", "CREATE TEMP TABLE x AS SELECT * FROM " + permits + " LIMIT 1; UPDATE x SET _ploti_record_id = 'rec_by_hand', permit_number = 'BP-9999'; INSERT INTO " + permits + " SELECT * FROM x",
			"1 row(s) in the table are not in version 1 (e.g. rec_by_hand)"},
		{"a column altered", "ALTER TABLE " + permits + " ALTER COLUMN units TYPE text",
			"column units is text in the table, bigint in version 1"},
	} {
		db, err := postgres.Open(context.Background(), vars["PLOTI_DB"], postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Conn().Exec(context.Background(), tc.stmt)
		db.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		code, out, errs := cli(t, vars, "verify")
		if code != exitPartial || !strings.Contains(out, emulator.DemoPermits+" v1: DIFFERS") || !strings.Contains(out, tc.want) || !strings.Contains(out, "2 verified, 1 differ") {
			t.Fatalf("%s: verify: exit %d, want 3 and %q\n%s%s", tc.name, code, tc.want, out, errs)
		}
		if code, out, errs := cli(t, vars, "verify", "--repair"); code != exitOK {
			t.Fatalf("%s: verify --repair: exit %d\n%s%s", tc.name, code, out, errs)
		}
		if code, out, errs := cli(t, vars, "verify"); code != exitOK || !strings.Contains(out, "all 3 dataset(s) verified") {
			t.Fatalf("%s: verify after the repair: exit %d\n%s%s", tc.name, code, out, errs)
		}
	}
}

// README: "The URL's password never reaches a log line or an error." serve
// waiting for a database another writer holds says so, naming the
// database without its password.
func TestServe_postgresWaitingForTheLockLogsNoPassword(t *testing.T) {
	const pw = "s3cret-pw"
	w := newServeWorld(t)
	w.db = strings.Replace(pgtest.DB(t), "ploti@", "ploti:"+pw+"@", 1)
	w.start(t, time.Second, "--poll", "0")
	holder, err := postgres.Open(context.Background(), w.db, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	w.publish(t)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.logs.String(), "waiting for the file") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not wait for the database's lock:\n%s", w.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	holder.Close()
	w.awaitApplied(t, 1)
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if logs := w.logs.String(); strings.Contains(logs, pw) || !strings.Contains(logs, "ploti@") {
		t.Fatalf("serve's log gives the database's password, or does not name it:\n%s", logs)
	}
}

// README: serve's request events are "written to disk before the answer
// and recorded by the next sync in _ploti.inbox", and inbox works on a
// database too. With --db a postgres:// URL the queue is a file of its own
// (not the URL taken as a path), and no log line gives the password.
func TestServe_postgresRequestEventsGoToTheInbox(t *testing.T) {
	const pw = "s3cret-pw"
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	w := newMemberServeWorld(t)
	w.db = strings.Replace(pgtest.DB(t), "ploti@", "ploti:"+pw+"@", 1)
	w.start(t, time.Second, "--poll", "0")
	ev, err := w.em.EmitRequestEvent("data_request.ready", map[string]any{"requestId": "req_pg"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(w.em.Deliveries(), func(d emulator.Delivery) bool { return d.EventID == ev && d.OK() }) {
		if time.Now().After(deadline) {
			t.Fatalf("the request event was not answered 2xx: %+v\n%s", w.em.Deliveries(), w.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.waitIdle(t, 2)
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, map[string]string{"PLOTI_DB": w.db}, "inbox")
	if code != exitOK || !strings.Contains(out, "req_pg") {
		t.Fatalf("inbox: exit %d\n%s%s", code, out, errs)
	}
	if logs := w.logs.String(); strings.Contains(logs, pw) {
		t.Fatalf("serve's log gives the database's password:\n%s", logs)
	}
}
