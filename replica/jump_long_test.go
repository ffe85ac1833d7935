package replica

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
)

// A national subscription's day of events is longer than the pages a
// catch-up reads before it decides (lookAheadWindow): its updates past
// those pages are caught up from the same manifest call, not one version
// call each (at 10,000 datasets that was hours on the limiter), and the
// pages past them, read in the background while the datasets load, are
// read once, as the walk would read them. The file ends where the walk
// that merges each version ends.
func TestSync_catchUpFromTheManifestPastTheLookAhead(t *testing.T) {
	catchUpPastTheLookAhead(t)
}

// The same keeping history: a dataset's updates past the pages read
// before the catch-up decided are chained by the log's reader (chainBook)
// before its load is prepared, so the loads follow no version back for
// id maps either, and each history is the walk's.
func TestSync_catchUpFromTheManifestPastTheLookAheadKeepingHistory(t *testing.T) {
	limited, walked, ids := catchUpPastTheLookAhead(t, func(o *Options) { o.History = []string{HistoryAll} })
	for _, id := range ids {
		if a, b := historyRows(t, limited, id), historyRows(t, walked, id); a != b {
			t.Fatalf("%s's history caught up from the manifest:\n%s\nwalked:\n%s", id, a, b)
		}
	}
}

// catchUpPastTheLookAhead runs the catch-up past the look-ahead with opts
// on both replicas and returns them, the one under the rate limit first.
func catchUpPastTheLookAhead(t *testing.T, opts ...func(*Options)) (limited, walked *Replica, ids []string) {
	onlyInAFile(t, "a catch-up from the manifest (it logs the snapshot's difference inside DuckDB)")
	ctx := context.Background()
	em := mustEmulator(t)
	var sub string
	sub, ids = seedMany(t, em, 30)
	const pageSize = 5
	noWait := func(o *Options) {
		o.PageSize = pageSize
		// The limiter's rate and burst as users have them, its waits
		// skipped: the test counts calls, not minutes.
		o.FetchOptions = func(fo *fetch.Options) {
			fo.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
		}
	}
	limited = mustOpen(t, em, sub, "", append(opts, noWait)...)
	walked = mustOpen(t, em, sub, "", append(opts, noRateLimit, func(o *Options) { o.PageSize = pageSize })...)
	mustSync(t, limited)
	mustSync(t, walked)
	from := len(em.Events(sub))
	// Stale events for every dataset, round after round, past the pages
	// read ahead; then an update of each.
	for len(em.Events(sub))-from <= lookAheadPages*pageSize+len(ids) {
		for _, id := range ids {
			must(t, em.Check(id))
		}
		em.Advance(49 * time.Hour)
	}
	for i, id := range ids {
		_, err := em.PublishQuery(ctx, id, fmt.Sprintf("SELECT 'k' || i AS k, i + (i %% 7 = %d)::INT AS v FROM range(%d) t(i)", i%7, 205+10*i))
		must(t, err)
	}
	events := len(em.Events(sub)) - from
	api := &countingAPI{API: limited.api}
	limited.api, limited.exec.Source = api, &source{api: api}
	res := mustSync(t, limited)
	if api.n("version") != 0 || api.n("manifest") != 1 {
		t.Fatalf("the catch-up of %d updated datasets past %d pages read ahead made %d API calls (%v), want a manifest and the events pages",
			len(ids), limited.lookAheadWindow(), api.total(), api.calls)
	}
	if res.SnapshotsLoaded != len(ids) || res.ChangesMerged != 0 || res.EventsSeen != events {
		t.Fatalf("catch-up of %d events: %+v", events, res)
	}
	wapi := &countingAPI{API: walked.api}
	walked.api, walked.exec.Source = wapi, &source{api: wapi}
	if res := mustSync(t, walked); res.ChangesMerged != len(ids) {
		t.Fatalf("the walk without the rate limit: %+v", res)
	}
	if api.n("events") != wapi.n("events") {
		t.Fatalf("the catch-up read %d events pages, the walk %d: a page read twice, or one not read", api.n("events"), wapi.n("events"))
	}
	for _, id := range ids {
		assertMatchesTruth(t, limited, em, id, 2)
	}
	if a, b := fileState(t, limited), fileState(t, walked); a != b {
		t.Fatalf("caught up from the manifest:\n%s\nwalked:\n%s", a, b)
	}
	return limited, walked, ids
}
