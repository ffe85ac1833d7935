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
	onlyInAFile(t, "a catch-up from the manifest (it logs the snapshot's difference inside DuckDB)")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, ids := seedMany(t, em, 30)
	limited := mustOpen(t, em, sub, "")
	walked := mustOpen(t, em, sub, "", noRateLimit)
	mustSync(t, limited)
	mustSync(t, walked)
	em.Advance(49 * time.Hour) // a missed source check each: stale events, then the updates
	for i, id := range ids {
		_, err := em.PublishQuery(ctx, id, fmt.Sprintf("SELECT 'k' || i AS k, i + (i %% 7 = %d)::INT AS v FROM range(%d) t(i)", i%7, 205+10*i))
		must(t, err)
	}
	api := &countingAPI{API: limited.api}
	limited.api, limited.exec.Source = api, &source{api: api}
	res := mustSync(t, limited)
	if api.n("version") != 0 || api.n("manifest") != 1 || api.total() > 3 {
		t.Fatalf("the catch-up of %d updated datasets under the rate limit made %d API calls (%v), want a manifest and the events pages",
			len(ids), api.total(), api.calls)
	}
	if res.SnapshotsLoaded != len(ids) || res.ChangesMerged != 0 {
		t.Fatalf("catch-up: %+v", res)
	}
	if res := mustSync(t, walked); res.ChangesMerged != len(ids) {
		t.Fatalf("the walk without the rate limit: %+v", res)
	}
	for _, id := range ids {
		assertMatchesTruth(t, limited, em, id, 2)
	}
	if a, b := fileState(t, limited), fileState(t, walked); a != b {
		t.Fatalf("caught up from the manifest:\n%s\nwalked:\n%s", a, b)
	}
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
