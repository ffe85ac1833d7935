package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/internal/storagetest"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// A merge that removes the rows at a table's end leaves its last pages
// empty once VACUUM has run. VACUUM would give them back, under the
// table's ACCESS EXCLUSIVE lock, which a hot standby replays: its
// readers of the table would wait, or be cancelled, at any time, with no
// load in sight. The engine's tables keep those pages (vacuum_truncate
// off, tableOptions): a VACUUM while a long query reads the table on the
// standby neither holds the standby's replay back nor makes its other
// readers wait. The same VACUUM with PostgreSQL's default gives the
// pages back: the case is real.
func TestStandby_vacuumTakesNoLockFromReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the standby")
	}
	pgtest.RequireStandby(t)
	ctx := context.Background()
	db, u := mustOpen(t)
	su := pgtest.Standby(t, u)
	duck := mustDuck(t)
	cols := []ploti.Column{col("v", ploti.TypeInteger)}
	const rows = 40000
	snap := mustParquet(t, duck, fmt.Sprintf(`SELECT 'r' || lpad(i::VARCHAR, 6, '0') AS _ploti_record_id, 'p' AS _ploti_place_id, i AS v
		FROM range(%d) t(i) ORDER BY i`, rows))
	tail := mustParquet(t, duck, fmt.Sprintf(`SELECT 'removed' AS _ploti_change, 'r' || lpad(i::VARCHAR, 6, '0') AS _ploti_record_id,
		'p' AS _ploti_place_id, i AS v FROM range(%d, %d) t(i)`, rows/2, rows))
	must(t, db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadSnapshot(ctx, "t", cols, []string{snap}); return err }))
	must(t, db.Update(ctx, func(tx *Tx) error { _, err := tx.MergeChanges(ctx, "ds", 2, "t", cols, tail, rows); return err }))
	pc, sc := storagetest.Reader(t, u), storagetest.Reader(t, su)
	waitFeedback(t, pc)
	pages := relpages(t, pc, "t")

	lc, qc := storagetest.Reader(t, su), storagetest.Reader(t, su)
	_, err := qc.Exec(ctx, "SET lock_timeout = 1000")
	must(t, err)
	longDone := make(chan error, 1)
	go func() {
		var n int64
		longDone <- lc.QueryRow(ctx, "SELECT count(*) FROM t, pg_sleep(5)").Scan(&n)
	}()
	waitSleeping(t, sc, lc.PgConn().PID())
	_, err = pc.Exec(ctx, "VACUUM t")
	must(t, err)
	vacuumed := time.Now()
	// A query of the table on the standby, once the VACUUM's WAL is
	// there: one that waits a second for a lock gives up (lock_timeout).
	time.Sleep(200 * time.Millisecond)
	var n int64
	err = qc.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
	took := time.Since(vacuumed)
	if err != nil || n != rows/2 {
		t.Fatalf("a query on the standby after the VACUUM: %d rows, %v (%s after it)", n, err, took)
	}
	_, err = pgtest.WaitReplay(ctx, pc, sc)
	must(t, err)
	replay := time.Since(vacuumed)
	if err := <-longDone; err != nil {
		t.Fatalf("the long query on the standby: %v", err)
	}
	if replay > 2*time.Second {
		t.Fatalf("the standby replayed the VACUUM in %s, held back by the long query", replay)
	}
	if after := relpages(t, pc, "t"); after != pages {
		t.Fatalf("VACUUM truncated t from %d pages to %d", pages, after)
	}
	t.Logf("VACUUM replayed %s after it ran, a query 200 ms after it answered at %s", replay.Round(time.Millisecond), took.Round(time.Millisecond))

	// The control: with PostgreSQL's default the same VACUUM truncates.
	_, err = pc.Exec(ctx, "ALTER TABLE t RESET (vacuum_truncate)")
	must(t, err)
	_, err = pc.Exec(ctx, "VACUUM t")
	must(t, err)
	if after := relpages(t, pc, "t"); after >= pages*3/4 {
		t.Fatalf("with vacuum_truncate on, VACUUM left t at %d of %d pages: this test does not make a case that truncates", after, pages)
	}
}

func relpages(t *testing.T, c *pgx.Conn, table string) int64 {
	t.Helper()
	var n int64
	must(t, c.QueryRow(context.Background(), "SELECT relpages FROM pg_class WHERE oid = $1::regclass", table).Scan(&n))
	return n
}

// waitFeedback waits until the standby's oldest snapshot, which it tells
// the primary under hot_standby_feedback, is younger than every
// transaction so far: until then VACUUM keeps the rows the standby might
// still read.
func waitFeedback(t *testing.T, pc *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	var now int64
	must(t, pc.QueryRow(ctx, "SELECT pg_current_xact_id()::text::bigint").Scan(&now))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var xmin *int64
		// A standby on a replication slot (.ci/pg's) tells it through the
		// slot's xmin; one without, through its walsender's.
		must(t, pc.QueryRow(ctx, `SELECT max(x) FROM (SELECT backend_xmin::text::bigint AS x FROM pg_stat_replication
			UNION ALL SELECT xmin::text::bigint FROM pg_replication_slots) s`).Scan(&xmin))
		if xmin == nil || *xmin > now {
			return
		}
	}
	t.Fatal("the standby's oldest snapshot did not move past the merge in 30 s (hot_standby_feedback, wal_receiver_status_interval)")
}

// waitSleeping waits until the standby's session pid is in its pg_sleep.
func waitSleeping(t *testing.T, sc *pgx.Conn, pid uint32) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var n int
		must(t, sc.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep'", pid).Scan(&n))
		if n == 1 {
			return
		}
	}
	t.Fatal("the long query on the standby never reached its pg_sleep")
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// A replica is written on the primary: Open refuses a hot standby at
// once, saying so, rather than after a sync's downloads with PostgreSQL's
// "cannot execute … during recovery" at the first write; a reader's
// Open (status) reads it.
func TestStandby_writerIsRefusedReaderIsNot(t *testing.T) {
	pgtest.RequireStandby(t)
	ctx := context.Background()
	db, u := mustOpen(t)
	db.Close()
	su := pgtest.Standby(t, u)
	_, err := Open(ctx, su, Options{LockTimeout: -1})
	if err == nil || !strings.Contains(err.Error(), "hot standby") || !strings.Contains(err.Error(), "primary") {
		t.Fatalf("Open of a standby: %v, want a refusal naming the standby and the primary", err)
	}
	ro, err := Open(ctx, su, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("a reader's Open of a standby: %v", err)
	}
	ro.Close()
}
