package replica

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// noRateLimit turns the client's rate limiter off: the walk then merges
// every version, as it used to.
func noRateLimit(o *Options) {
	o.FetchOptions = func(fo *fetch.Options) { fo.DisableRateLimit = true }
}

// fileState is what two replicas must agree on: every table's rows, the
// registry (but its times), the holds and the changes log.
func fileState(t *testing.T, r *Replica) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT dataset_id, table_name, version, schema_version, row_count, status, coalesce(status_reason, ''),
			stale_last_checked_at IS NULL, stale_next_check_by IS NULL FROM _ploti.datasets ORDER BY ALL`,
		`SELECT dataset_id, kind, coalesce(version, 0), reason FROM _ploti.holds ORDER BY ALL`,
		`SELECT dataset_id, version, change, count(*), sum(hash(record_id)) FROM _ploti.changes GROUP BY ALL ORDER BY ALL`,
	} {
		rows, err := r.DB().Query(q)
		must(t, err)
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			must(t, rows.Scan(ptrs...))
			fmt.Fprintln(&b, vals...)
		}
		must(t, rows.Err())
		rows.Close()
	}
	st := mustStatus(t, r)
	for _, d := range st.Datasets {
		var n int64
		var h any
		must(t, r.DB().QueryRow(fmt.Sprintf(`SELECT count(*), sum(hash(t::VARCHAR)) FROM main.%q t`, d.Table)).Scan(&n, &h))
		fmt.Fprintln(&b, d.Table, n, h)
	}
	return b.String()
}

// "Calls per applied version ≤ 1.0 … the manifest where a
// dataset is far behind". Under the client's rate limit, a catch-up that
// would make more calls than the limiter's burst loads the datasets the
// log moved past from one manifest call, and ends where the walk that
// merges each version ends: the same tables, registry, holds and, each
// dataset one version behind, the same changes log (the snapshot's
// difference from the table is that version's changes). The stale events
// before the updates are over, as the walk leaves them.
func TestSync_catchUpFromTheManifest(t *testing.T) {
	c := oneVersionBehind(t, true)
	if c.api.n("version") != 0 || c.api.n("manifest") != 1 || c.api.total() > 3 {
		t.Fatalf("the catch-up of %d updated datasets under the rate limit made %d API calls (%v), want a manifest and the events pages",
			len(c.ids), c.api.total(), c.api.calls)
	}
	if c.res.SnapshotsLoaded != len(c.ids) || c.res.ChangesMerged != 0 {
		t.Fatalf("catch-up: %+v", c.res)
	}
	if res := mustSync(t, c.walked); res.ChangesMerged != len(c.ids) {
		t.Fatalf("the walk without the rate limit: %+v", res)
	}
	for _, id := range c.ids {
		assertMatchesTruth(t, c.limited, c.em, id, 2)
	}
	if a, b := fileState(t, c.limited), fileState(t, c.walked); a != b {
		t.Fatalf("caught up from the manifest:\n%s\nwalked:\n%s", a, b)
	}
}

// caughtUp is a catch-up under the rate limit of datasets one version
// behind, beside a replica that will walk the same log without it.
type caughtUp struct {
	em              *emulator.Emulator
	ids             []string
	limited, walked *Replica
	api             *countingAPI // the limited replica's calls in its catch-up
	res             SyncResult
}

// oneVersionBehind opens two replicas of 30 datasets with opts, the
// second without the rate limit, brings both to version 1, publishes a
// second version of each (after a missed source check each when stale)
// and catches the first up, counting its API calls.
func oneVersionBehind(t *testing.T, stale bool, opts ...func(*Options)) *caughtUp {
	t.Helper()
	onlyInAFile(t, "a catch-up from the manifest (it logs the snapshot's difference inside DuckDB)")
	ctx := context.Background()
	c := &caughtUp{em: mustEmulator(t)}
	var sub string
	sub, c.ids = seedMany(t, c.em, 30)
	c.limited = mustOpen(t, c.em, sub, "", opts...)
	c.walked = mustOpen(t, c.em, sub, "", append(opts, noRateLimit)...)
	mustSync(t, c.limited)
	mustSync(t, c.walked)
	if stale {
		c.em.Advance(49 * time.Hour) // a missed source check each: stale events, then the updates
	}
	for i, id := range c.ids {
		_, err := c.em.PublishQuery(ctx, id, fmt.Sprintf("SELECT 'k' || i AS k, i + (i %% 7 = %d)::INT AS v FROM range(%d) t(i)", i%7, 205+10*i))
		must(t, err)
	}
	c.api = &countingAPI{API: c.limited.api}
	c.limited.api, c.limited.exec.Source = c.api, &source{api: c.api}
	c.res = mustSync(t, c.limited)
	return c
}

// Below the limiter's burst the walk merges each version: the changes log
// keeps each version's changes, and the calls cost no wait.
func TestSync_noCatchUpFromTheManifestWithinTheBurst(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 8)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	for i, id := range ids {
		_, err := em.PublishQuery(ctx, id, fmt.Sprintf("SELECT 'k' || i AS k, i + 1 AS v FROM range(%d) t(i)", 200+10*i))
		must(t, err)
	}
	api := &countingAPI{API: r.api}
	r.api, r.exec.Source = api, &source{api: api}
	if res := mustSync(t, r); res.ChangesMerged != len(ids) || api.n("manifest") != 0 || api.n("version") != len(ids) {
		t.Fatalf("catch-up within the burst: %+v, calls %v", res, api.calls)
	}
}

// A dataset whose events ahead need the walk (here a MINOR schema change,
// whose table keeps null in the new column for unchanged rows) is walked;
// the others are caught up from the manifest.
func TestSync_catchUpFromTheManifestLeavesSchemaChangesToTheWalk(t *testing.T) {
	onlyInAFile(t, "a catch-up from the manifest")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 30)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	for i, id := range ids {
		var opts []emulator.PublishOption
		q := fmt.Sprintf("SELECT 'k' || i AS k, i + 1 AS v FROM range(%d) t(i)", 205+10*i)
		if i == 0 {
			opts = append(opts, emulator.WithSchema([]emulator.Column{{Name: "k", Type: "string"}, {Name: "v", Type: "integer"},
				{Name: "w", Type: "integer"}}, []string{"k"}))
			q = fmt.Sprintf("SELECT 'k' || i AS k, i + 1 AS v, 7 AS w FROM range(%d) t(i)", 205)
		}
		_, err := em.PublishQuery(ctx, id, q, opts...)
		must(t, err)
	}
	api := &countingAPI{API: r.api}
	r.api, r.exec.Source = api, &source{api: api}
	res := mustSync(t, r)
	if api.n("manifest") != 1 || api.n("version") != 1 || res.ChangesMerged != 1 || res.SnapshotsLoaded != len(ids)-1 {
		t.Fatalf("catch-up with one schema change: %+v, calls %v", res, api.calls)
	}
	for _, id := range ids {
		assertMatchesTruth(t, r, em, id, 2)
	}
}

// "the file is 284 MB for those 500k small rows, against 136 MB
// for DuckDB alone". A catch-up that replaces every table from the
// manifest commits them in groups of an eighth of the file, each followed
// by a checkpoint that frees the replaced tables' blocks for the next: the
// file grows by a group, not by itself.
func TestSync_catchUpFromTheManifestKeepsTheFileSize(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 80)
	path := t.TempDir() + "/r.duckdb"
	r := mustOpen(t, em, sub, path)
	mustSync(t, r)
	must(t, r.Close())
	before := fileBytes(t, path)
	for i, id := range ids {
		_, err := em.PublishQuery(ctx, id, fmt.Sprintf("SELECT 'k' || i AS k, i + 1 AS v FROM range(%d) t(i)", 205+10*i))
		must(t, err)
	}
	r = mustOpen(t, em, sub, path)
	if res := mustSync(t, r); res.SnapshotsLoaded != len(ids) {
		t.Fatalf("catch-up: %+v", res)
	}
	must(t, r.Close())
	if after := fileBytes(t, path); float64(after) > 1.5*float64(before) {
		t.Fatalf("the file grew from %d to %d bytes (%.2f times) replacing its %d tables", before, after, float64(after)/float64(before), len(ids))
	}
}

func fileBytes(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	must(t, err)
	return st.Size()
}

// "feed.dataset.resync_required carries one reason. When several apply,
// the first of these wins: 1. record_ids_changed": a version that replaces
// ids never comes as an updated. A catch-up from the manifest that keeps
// history (or logs its reloads for a mark) follows the ids a version
// replaced, but where the log ahead showed every version between the held
// one and the manifest's as updated events chained by previousVersion,
// none did: it asks the API for no version, and the history it records
// is the one the walk records merging each version.
func TestSync_catchUpFromTheManifestKeepingHistoryAsksForNoVersion(t *testing.T) {
	c := oneVersionBehind(t, false, func(o *Options) { o.History = []string{HistoryAll} })
	if c.api.n("version") != 0 || c.api.n("manifest") != 1 || c.res.SnapshotsLoaded != len(c.ids) {
		t.Fatalf("the catch-up of %d updated datasets keeping history: %+v, %d API calls (%v); want a manifest, the events pages and no version",
			len(c.ids), c.res, c.api.total(), c.api.calls)
	}
	if res := mustSync(t, c.walked); res.ChangesMerged != len(c.ids) {
		t.Fatalf("the walk without the rate limit: %+v", res)
	}
	// "A history's versions carry their publishedAt where it can be
	// had": the datasets list gives the manifest's.
	var untimed int
	must(t, c.limited.DB().QueryRow("SELECT count(*) FROM _ploti.history_versions WHERE version = 2 AND published_at IS NULL").Scan(&untimed))
	if untimed != 0 {
		t.Fatalf("%d versions caught up from the manifest recorded in the history without their publishedAt", untimed)
	}
	for _, id := range c.ids {
		assertMatchesTruth(t, c.limited, c.em, id, 2)
		if a, b := historyRows(t, c.limited, id), historyRows(t, c.walked, id); a != b {
			t.Fatalf("%s's history caught up from the manifest:\n%s\nwalked:\n%s", id, a, b)
		}
	}
}

// historyRows prints a dataset's history but for its publishedAt times
// (a manifest's version carries none; the catch-up reads them from the
// datasets list, checked apart).
func historyRows(t *testing.T, r *Replica, datasetID string) string {
	t.Helper()
	var table string
	must(t, r.DB().QueryRow("SELECT table_name FROM _ploti.datasets WHERE dataset_id = ?", datasetID).Scan(&table))
	rows, err := r.DB().Query(fmt.Sprintf(`SELECT k, v, _ploti_valid_from, _ploti_valid_to, _ploti_change, _ploti_origin_id FROM history.%q ORDER BY ALL`, table))
	must(t, err)
	defer rows.Close()
	var b strings.Builder
	n := 0
	for rows.Next() {
		var k, change string
		var v, from int
		var to *int
		var origin *string
		must(t, rows.Scan(&k, &v, &from, &to, &change, &origin))
		fmt.Fprintln(&b, k, v, from, to != nil && *to == 2, change, origin)
		n++
	}
	must(t, rows.Err())
	if n == 0 {
		t.Fatalf("%s has no history", datasetID)
	}
	return b.String()
}

// The log ahead chains a dataset's updated events from the held version by
// previousVersion; a gap ("When it is any other version, reload that
// dataset") or an event without previousVersion breaks the chain, and a
// later event does not mend it. Events at or below the held version are
// not counted.
func TestBehindOf_chainsUpdatesFromTheHeldVersion(t *testing.T) {
	ev := func(id string, v, prev int) ploti.Event {
		e := ploti.Event{ID: fmt.Sprintf("ev_%s_%d", id, v), Type: ploti.EventUpdated, Data: ploti.EventData{DatasetID: id, Version: &v}}
		if prev > 0 {
			e.Data.PreviousVersion = &prev
		}
		return e
	}
	page := &ploti.EventPage{Events: []ploti.Event{
		ev("a", 3, 2), ev("a", 4, 3), ev("a", 6, 4), // held 3: the first is old, then 4 and 6
		ev("b", 4, 3), ev("b", 6, 5), ev("b", 7, 6), // held 3: 6 does not follow 4
		ev("c", 4, 0), // held 3: no previousVersion
		ev("d", 9, 8), // not held
	}}
	reg := map[string]*storage.Dataset{"a": {ID: "a", Version: 3}, "b": {ID: "b", Version: 3}, "c": {ID: "c", Version: 3}}
	r := &Replica{}
	out, calls := r.behindOf([]*ploti.EventPage{page}, reg)
	got := fmt.Sprintf("a %d/%d b %d/%d c %d/%d d %d/%d calls %d", out["a"].versions, out["a"].chain, out["b"].versions, out["b"].chain,
		out["c"].versions, out["c"].chain, out["d"].versions, out["d"].chain, calls)
	if want := "a 2/6 b 3/-1 c 1/-1 d 1/-1 calls 8"; got != want {
		t.Fatalf("behindOf: %s, want %s", got, want)
	}
}
