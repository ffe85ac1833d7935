package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/internal/storagetest"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Readers on a hot standby of a replica's PostgreSQL database (streaming
// replication; .ci/pg start-standby): each query sees a dataset's table
// at one version whole, with the registry's row of that version, through
// loads (a table swapped in) and merges alike, and once the standby has
// replayed a sync it holds that version exactly as the primary does.

// standbyDataset is the dataset of the standby tests: each version k
// holds rowsAt(k) rows, every one with v = k, so a reader that saw part
// of two versions would see two values of v or a count of neither.
const standbyDataset = "ds_standby"

// standbyWorld is an emulator publishing standbyDataset, a replica of it
// in a PostgreSQL database, and that database on the cluster's standby.
type standbyWorld struct {
	em        *emulator.Emulator
	r         *Replica
	primary   string // the replica's database
	standby   string // the same database on the standby
	table     string // the dataset's table, quoted
	version   int    // the last version published
	mu        sync.Mutex
	truth     map[int]standbyTruth // what each published version holds
	pc, sc    *pgx.Conn            // the test's own sessions
	lastRound int                  // the last round published: v of its rows
}

type standbyTruth struct{ rows, v int64 }

// rowsAt is how many rows round k publishes: 12,000 to 16,000, a count
// of its own each round.
func rowsAt(k int) int64 { return 12000 + int64(k*7919%4001) }

func newStandbyWorld(t *testing.T) *standbyWorld {
	t.Helper()
	pgtest.RequireStandby(t) // before the emulator and the first sync
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-leon", Name: "Leon County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	must(t, em.AddDataset(emulator.DatasetSpec{ID: standbyDataset, Title: "Standby", PlaceID: "fl-leon", Topic: "development-activity",
		KeyColumns: []string{"k"}, Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "v", Type: "integer"},
			{Name: "geometry", Type: "geometry"}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-leon"}})
	must(t, err)
	w := &standbyWorld{em: em, primary: pgtest.DB(t), truth: map[int]standbyTruth{}}
	w.publish(t, false)
	w.r = mustOpen(t, em, sub, w.primary)
	if res := mustSync(t, w.r); res.SnapshotsLoaded != 1 {
		t.Fatalf("first sync: %+v, want its snapshot loaded", res)
	}
	d, err := w.r.db.Dataset(ctx, standbyDataset)
	must(t, err)
	w.table = storage.Ident(d.Table)
	w.standby = pgtest.Standby(t, w.primary)
	w.pc, w.sc = storagetest.Reader(t, w.primary), storagetest.Reader(t, w.standby)
	return w
}

// publish publishes the next round's version, as a resync (the replica
// reloads it: a table swapped in) when reload is set, else as an update
// (merged: every row changed, some added or removed), and returns it.
func (w *standbyWorld) publish(t *testing.T, reload bool) int {
	t.Helper()
	ctx := context.Background()
	if reload {
		must(t, w.em.ReRelease(standbyDataset, w.version))
	}
	w.lastRound++
	k := w.lastRound
	rel, err := w.em.PublishQuery(ctx, standbyDataset, fmt.Sprintf(standbyRows, k, rowsAt(k)))
	must(t, err)
	if w.version > 0 && rel.ResyncRequired != reload {
		t.Fatalf("round %d: %+v, want resync %v", k, rel, reload)
	}
	w.mu.Lock()
	w.truth[rel.Version] = standbyTruth{rows: rowsAt(k), v: int64(k)}
	w.mu.Unlock()
	w.version = rel.Version
	return rel.Version
}

// standbySeen is what one query saw: the registry's version and the
// table's count and least and greatest v.
type standbySeen struct {
	version      int
	rows, lo, hi int64
}

// lookQuery reads the registry's row and the table in one statement (one
// snapshot); extra is more of its select list (a pg_sleep).
func (w *standbyWorld) lookQuery(extra string) string {
	return fmt.Sprintf(`SELECT d.version, t.n, t.lo, t.hi%s FROM _ploti.datasets d,
		(SELECT count(*), coalesce(min(v), -1), coalesce(max(v), -1) FROM %s) t(n, lo, hi)
		WHERE d.dataset_id = '%s'`, extra, w.table, standbyDataset)
}

func (w *standbyWorld) look(ctx context.Context, c *pgx.Conn) (standbySeen, error) {
	var s standbySeen
	err := c.QueryRow(ctx, w.lookQuery("")).Scan(&s.version, &s.rows, &s.lo, &s.hi)
	return s, err
}

// whole says why s is not one published version whole, or "".
func (w *standbyWorld) whole(s standbySeen) string {
	w.mu.Lock()
	want, ok := w.truth[s.version]
	w.mu.Unlock()
	switch {
	case !ok:
		return fmt.Sprintf("the registry names version %d, never published", s.version)
	case s.rows != want.rows || s.lo != want.v || s.hi != want.v:
		return fmt.Sprintf("version %d: %d rows, v from %d to %d; the version has %d rows, every v %d",
			s.version, s.rows, s.lo, s.hi, want.rows, want.v)
	}
	return ""
}

// standbyRows is round k's rows, as publish gives them to the emulator.
const standbyRows = `SELECT 'K-' || i AS k, %d AS v,
	'POINT (' || (i %% 360 - 180) || ' ' || (i %% 170 - 85) || ')' AS geometry FROM range(%d) t(i)`

// checksum is the MD5 of the rows of the table (with their record ids,
// when ids is set), ordered, and their count.
func (w *standbyWorld) checksum(t *testing.T, c *pgx.Conn, ids bool) string {
	t.Helper()
	row, order := "k || ' ' || v || ' ' || ST_AsText(geometry)", "k"
	if ids {
		row, order = "_ploti_record_id || ' ' || "+row, "_ploti_record_id"
	}
	return w.md5(t, c, fmt.Sprintf("SELECT count(*), md5(string_agg(%s, ',' ORDER BY %s)) FROM %s", row, order, w.table))
}

// truthChecksum is checksum's answer without ids for round k's rows as
// published, computed from the rows' own formula.
func (w *standbyWorld) truthChecksum(t *testing.T, c *pgx.Conn, k int) string {
	t.Helper()
	rows := strings.Replace(fmt.Sprintf(standbyRows, k, rowsAt(k)), "range(", "generate_series(0, -1 + ", 1)
	return w.md5(t, c, fmt.Sprintf(`SELECT count(*), md5(string_agg(k || ' ' || v || ' ' || ST_AsText(ST_GeomFromText(geometry, 4326)),
		',' ORDER BY k)) FROM (%s) r`, rows))
}

func (w *standbyWorld) md5(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	var n int64
	var sum string
	must(t, c.QueryRow(context.Background(), q).Scan(&n, &sum))
	return fmt.Sprintf("%d rows, md5 %s", n, sum)
}

// checkReplayed waits until the standby has replayed all the primary
// wrote, then checks that the standby holds version whole, row for row
// what the primary holds, and returns how long replay took.
func (w *standbyWorld) checkReplayed(t *testing.T, version int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lag, err := pgtest.WaitReplay(ctx, w.pc, w.sc)
	must(t, err)
	s, err := w.look(ctx, w.sc)
	must(t, err)
	if s.version != version {
		t.Fatalf("replayed, the standby holds version %d, want %d", s.version, version)
	}
	if why := w.whole(s); why != "" {
		t.Fatalf("replayed, the standby's table is not a version whole: %s", why)
	}
	if p, s := w.checksum(t, w.pc, true), w.checksum(t, w.sc, true); p != s {
		t.Fatalf("version %d: the primary has %s, the standby %s", version, p, s)
	}
	if have, want := w.checksum(t, w.sc, false), w.truthChecksum(t, w.sc, int(w.truth[version].v)); have != want {
		t.Fatalf("version %d: the standby has %s, the version's rows are %s", version, have, want)
	}
	return lag
}

// standbyReads is what one reader on the standby saw.
type standbyReads struct {
	queries  int
	versions []int // the versions seen, each once
	slowest  time.Duration
	err      error
}

// startReaders starts n readers querying the standby in a loop, each on
// a session of its own; stop ends them and returns what they saw.
func (w *standbyWorld) startReaders(t *testing.T, n int) (stop func() []standbyReads) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reads := make([]standbyReads, n)
	var wg sync.WaitGroup
	for i := range reads {
		c := storagetest.Reader(t, w.standby)
		wg.Add(1)
		go func(r *standbyReads) {
			defer wg.Done()
			r.err = w.read(ctx, c, r)
		}(&reads[i])
	}
	return func() []standbyReads {
		cancel()
		wg.Wait()
		return reads
	}
}

// read queries until ctx ends; any error, and any answer that is not a
// version whole, ends it.
func (w *standbyWorld) read(ctx context.Context, c *pgx.Conn, r *standbyReads) error {
	for ctx.Err() == nil {
		start := time.Now()
		s, err := w.look(ctx, c)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("query %d: %w", r.queries+1, err)
		}
		r.queries++
		r.slowest = max(r.slowest, time.Since(start))
		if why := w.whole(s); why != "" {
			return fmt.Errorf("query %d: %s", r.queries, why)
		}
		if !slices.Contains(r.versions, s.version) {
			r.versions = append(r.versions, s.version)
		}
	}
	return nil
}

// A real sync on a replica in PostgreSQL, loads (a table swapped in) and
// merges in turn, while readers query its hot standby in a loop: every
// answer is one version whole, never an error, and once the standby has
// replayed a sync it holds that version row for row as the primary does.
func TestStandby_readersSeeEachVersionWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("ten syncs of 12,000 to 16,000 rows")
	}
	w := newStandbyWorld(t)
	w.checkReplayed(t, w.version)
	stop := w.startReaders(t, 2)
	const rounds = 10
	var lags []time.Duration
	for round := 1; round <= rounds; round++ {
		reload := round%2 == 1
		version := w.publish(t, reload)
		res := mustSync(t, w.r)
		if reload && (res.SnapshotsLoaded != 1 || res.ChangesMerged != 0) || !reload && (res.ChangesMerged != 1 || res.SnapshotsLoaded != 0) {
			t.Fatalf("round %d (reload %v): %+v", round, reload, res)
		}
		lags = append(lags, w.checkReplayed(t, version))
	}
	reads := stop()
	for i, r := range reads {
		if r.err != nil {
			t.Fatalf("reader %d on the standby: %v", i, r.err)
		}
		// Fewer versions seen than half the syncs would mean the readers
		// did not read across the swaps this test is about.
		if len(r.versions) < rounds/2 {
			t.Fatalf("reader %d saw only versions %v in %d queries", i, r.versions, r.queries)
		}
		t.Logf("reader %d: %d queries, %d versions seen, slowest %s", i, r.queries, len(r.versions), r.slowest.Round(time.Millisecond))
	}
	t.Logf("replay after each sync: %v", roundAll(lags))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// isRecoveryConflict tells whether err is the standby cancelling a query
// that held back the replay of a lock (SQLSTATE 40001, "canceling
// statement due to conflict with recovery").
func isRecoveryConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}

// acrossReload is what happened on the standby when a reload replayed
// while a long query read the table.
type acrossReload struct {
	old, new  int           // the versions before and after the reload
	long      standbySeen   // what the long query saw, when it finished
	longErr   error         // why it did not
	longTook  time.Duration // from its start to its answer or error
	short     standbySeen   // a short query's answer, started after the sync
	shortErr  error
	shortWait time.Duration // how long the short query took
	replayed  time.Duration // from the sync's end to the standby holding new
	longEnd   time.Duration // from the sync's end to the long query's end
}

// longReaderAcrossReload runs a query on the standby that reads the
// table for hold, reloads the dataset on the primary meanwhile (a table
// swapped in), starts a short query on the standby 200 ms after the sync,
// and tells what each saw and when the standby had the new version.
func (w *standbyWorld) longReaderAcrossReload(t *testing.T, hold time.Duration) acrossReload {
	t.Helper()
	ctx := context.Background()
	a := acrossReload{old: w.version}
	w.checkReplayed(t, a.old)
	a.new = w.publish(t, true) // the replica sees it at its sync
	lc, qc := storagetest.Reader(t, w.standby), storagetest.Reader(t, w.standby)
	longDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(longDone)
		var slept any
		a.longErr = lc.QueryRow(ctx, w.lookQuery(fmt.Sprintf(", pg_sleep(%g)", hold.Seconds()))).Scan(
			&a.long.version, &a.long.rows, &a.long.lo, &a.long.hi, &slept)
		a.longTook = time.Since(start)
	}()
	end := func() time.Time { return start.Add(a.longTook) } // once longDone is closed
	w.waitSleeping(t, lc.PgConn().PID())
	if res := mustSync(t, w.r); res.SnapshotsLoaded != 1 {
		t.Fatalf("the reload: %+v, want its snapshot loaded", res)
	}
	synced := time.Now()
	time.Sleep(200 * time.Millisecond)
	shortStart := time.Now()
	a.short, a.shortErr = w.look(ctx, qc)
	a.shortWait = time.Since(shortStart)
	_, err := pgtest.WaitReplay(ctx, w.pc, w.sc)
	must(t, err)
	a.replayed = time.Since(synced)
	<-longDone
	a.longEnd = end().Sub(synced)
	return a
}

// waitSleeping waits until the standby's session pid is in its pg_sleep,
// holding the table it read.
func (w *standbyWorld) waitSleeping(t *testing.T, pid uint32) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var n int
		must(t, w.sc.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep'", pid).Scan(&n))
		if n == 1 {
			return
		}
	}
	t.Fatal("the long query on the standby never reached its pg_sleep")
}

// A long query on the standby while a reload (a table swapped in, the old
// one dropped) replays. Within max_standby_streaming_delay (30 s, the
// standby's setting .ci/pg start-standby and the README give) the replay
// waits for it: it finishes with the old version whole, and the standby
// has the new version only after it ends; a query started meanwhile
// waits for it too, then sees the new version whole. Beyond the delay
// (1 s here, set on the standby for the subtest) the standby cancels it
// with SQLSTATE 40001 ("conflict with recovery"), never answering from
// half a table, and the same query again sees the new version whole.
func TestStandby_aLongReaderDuringAReload(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for long queries on the standby")
	}
	w := newStandbyWorld(t)
	t.Run("within max_standby_streaming_delay", func(t *testing.T) {
		const hold = 3 * time.Second
		if d := w.streamingDelay(t); d >= 0 && d < 2*hold {
			t.Skipf("the standby's max_standby_streaming_delay is %s: this case needs at least %s", d, 2*hold)
		}
		a := w.longReaderAcrossReload(t, hold)
		t.Logf("long query %s; short query waited %s; the standby had the new version %s after the sync, the long query ended %s after it",
			a.longTook.Round(time.Millisecond), a.shortWait.Round(time.Millisecond), a.replayed.Round(time.Millisecond), a.longEnd.Round(time.Millisecond))
		if a.longErr != nil {
			t.Fatalf("the long query: %v, want it to finish", a.longErr)
		}
		if why := w.whole(a.long); why != "" || a.long.version != a.old {
			t.Fatalf("the long query saw version %d (%s), want %d whole", a.long.version, why, a.old)
		}
		// Both instants are seen from here, by two sessions: a quarter
		// of a second of slack for a busy machine's scheduling, against
		// the seconds a replay that did not wait would be early by.
		if a.replayed+250*time.Millisecond < a.longEnd {
			t.Fatalf("the standby had the new version %s after the sync, before the long query on the old one ended (%s)", a.replayed, a.longEnd)
		}
		w.checkShort(t, a)
	})
	t.Run("beyond max_standby_streaming_delay", func(t *testing.T) {
		w.setStreamingDelay(t, "1s")
		a := w.longReaderAcrossReload(t, 8*time.Second)
		t.Logf("long query %s (%v); short query waited %s; the standby had the new version %s after the sync",
			a.longTook.Round(time.Millisecond), a.longErr, a.shortWait.Round(time.Millisecond), a.replayed.Round(time.Millisecond))
		if !isRecoveryConflict(a.longErr) {
			t.Fatalf("the long query: %v (saw %+v), want it cancelled with SQLSTATE 40001", a.longErr, a.long)
		}
		w.checkShort(t, a)
		again, err := w.look(context.Background(), w.sc)
		must(t, err)
		if why := w.whole(again); why != "" || again.version != a.new {
			t.Fatalf("the long query again saw version %d (%s), want %d whole", again.version, why, a.new)
		}
	})
}

// checkShort checks that the short query during the reload saw the old
// or the new version whole.
func (w *standbyWorld) checkShort(t *testing.T, a acrossReload) {
	t.Helper()
	if a.shortErr != nil {
		t.Fatalf("the short query: %v", a.shortErr)
	}
	if why := w.whole(a.short); why != "" || a.short.version != a.old && a.short.version != a.new {
		t.Fatalf("the short query saw version %d (%s), want %d or %d whole", a.short.version, why, a.old, a.new)
	}
}

// streamingDelay is the standby's max_standby_streaming_delay (-1 when
// it waits for ever).
func (w *standbyWorld) streamingDelay(t *testing.T) time.Duration {
	t.Helper()
	var ms int64
	must(t, w.sc.QueryRow(context.Background(),
		"SELECT setting::bigint FROM pg_settings WHERE name = 'max_standby_streaming_delay'").Scan(&ms))
	if ms < 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

// setStreamingDelay sets the standby's max_standby_streaming_delay for
// the rest of the test (ALTER SYSTEM on the standby; .ci/pg start-standby
// keeps its settings where ALTER SYSTEM reaches them) and puts it back.
func (w *standbyWorld) setStreamingDelay(t *testing.T, d string) {
	t.Helper()
	ctx := context.Background()
	var was string
	must(t, w.sc.QueryRow(ctx, "SELECT setting || coalesce(unit, '') FROM pg_settings WHERE name = 'max_standby_streaming_delay'").Scan(&was))
	set := func(v string) error {
		if _, err := w.sc.Exec(ctx, "ALTER SYSTEM SET max_standby_streaming_delay = '"+v+"'"); err != nil {
			return err
		}
		_, err := w.sc.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	}
	must(t, set(d))
	t.Cleanup(func() {
		if err := set(was); err != nil {
			t.Errorf("put back max_standby_streaming_delay %s: %v", was, err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var now string
		must(t, w.sc.QueryRow(ctx, "SHOW max_standby_streaming_delay").Scan(&now))
		if now == d {
			return
		}
	}
	t.Fatalf("max_standby_streaming_delay did not become %s (set on the command line, where ALTER SYSTEM does not reach?)", d)
}
