package replica

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
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
// on both replicas, checks that it asked for no version and ends where the
// walk ends, and returns them, the one under the rate limit first.
func catchUpPastTheLookAhead(t *testing.T, opts ...func(*Options)) (limited, walked *Replica, ids []string) {
	c := pastTheLookAhead(t, nil, opts...)
	limited, walked, ids, api := c.limited, c.walked, c.ids, c.api
	if api.n("version") != 0 || api.n("manifest") != 1 {
		t.Fatalf("the catch-up of %d updated datasets past %d pages read ahead made %d API calls (%v), want a manifest and the events pages",
			len(ids), limited.lookAheadWindow(), api.total(), api.calls)
	}
	if c.res.SnapshotsLoaded != len(ids) || c.res.ChangesMerged != 0 || c.res.EventsSeen != c.events {
		t.Fatalf("catch-up of %d events: %+v", c.events, c.res)
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
		assertMatchesTruth(t, limited, c.em, id, 2)
	}
	if a, b := fileState(t, limited), fileState(t, walked); a != b {
		t.Fatalf("caught up from the manifest:\n%s\nwalked:\n%s", a, b)
	}
	return limited, walked, ids
}

// lookedPast is a catch-up under the rate limit whose updates lie past the
// pages read ahead, beside a replica that will walk the same log.
type lookedPast struct {
	caughtUp
	events int // the log's events after the replicas' first sync
}

// pastTheLookAhead opens two replicas of 30 datasets with opts, the second
// without the rate limit, brings both to version 1, adds stale events past
// the pages a catch-up reads ahead, then a version of each dataset (and
// what more, when given), and catches the first up, counting its calls.
func pastTheLookAhead(t *testing.T, more func(em *emulator.Emulator, ids []string), opts ...func(*Options)) *lookedPast {
	t.Helper()
	onlyInAFile(t, "a catch-up from the manifest (it logs the snapshot's difference inside DuckDB)")
	ctx := context.Background()
	c := &lookedPast{caughtUp: caughtUp{em: mustEmulator(t)}}
	em := c.em
	var sub string
	sub, c.ids = seedMany(t, em, 30)
	const pageSize = 5
	noWait := func(o *Options) {
		o.PageSize = pageSize
		// The limiter's rate and burst as users have them, its waits
		// skipped: the test counts calls, not minutes.
		o.FetchOptions = func(fo *fetch.Options) {
			fo.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
		}
	}
	c.limited = mustOpen(t, em, sub, "", append(opts, noWait)...)
	c.walked = mustOpen(t, em, sub, "", append(opts, noRateLimit, func(o *Options) { o.PageSize = pageSize })...)
	mustSync(t, c.limited)
	mustSync(t, c.walked)
	from := len(em.Events(sub))
	// Stale events for every dataset, round after round, past the pages
	// read ahead; then an update of each.
	for len(em.Events(sub))-from <= lookAheadPages*pageSize+len(c.ids) {
		for _, id := range c.ids {
			must(t, em.Check(id))
		}
		em.Advance(49 * time.Hour)
	}
	for i, id := range c.ids {
		_, err := em.PublishQuery(ctx, id, fmt.Sprintf("SELECT 'k' || i AS k, i + (i %% 7 = %d)::INT AS v FROM range(%d) t(i)", i%7, 205+10*i))
		must(t, err)
	}
	if more != nil {
		more(em, c.ids)
	}
	c.events = len(em.Events(sub)) - from
	c.api = &countingAPI{API: c.limited.api}
	c.limited.api, c.limited.exec.Source = c.api, &source{api: c.api}
	c.res = mustSync(t, c.limited)
	return c
}

// A dataset whose version past the pages read ahead replaced ids (a
// resync_required, which the log's reader does not chain) is still
// followed back to that version's id map: its history shows the records
// renamed, not removed and added again. The others ask for no version.
func TestSync_catchUpFromTheManifestPastTheLookAheadFollowsReplacedIDs(t *testing.T) {
	c := pastTheLookAhead(t, func(em *emulator.Emulator, ids []string) {
		_, err := em.ReplaceIDs(context.Background(), ids[0], 0.5)
		must(t, err)
	}, func(o *Options) { o.History = []string{HistoryAll} })
	if c.api.n("manifest") != 1 || c.api.n("version") == 0 || c.res.SnapshotsLoaded != len(c.ids) {
		t.Fatalf("the catch-up: %+v, calls %v; want a manifest, every dataset loaded, and versions followed back for %s", c.res, c.api.calls, c.ids[0])
	}
	var table string
	must(t, c.limited.DB().QueryRow("SELECT table_name FROM _ploti.datasets WHERE dataset_id = ?", c.ids[0]).Scan(&table))
	// Without its id map the replaced ids would show as removed and added
	// again, and none as renamed (the version also adds the five records
	// the version before it added).
	var renamed int
	must(t, c.limited.DB().QueryRow(fmt.Sprintf(`SELECT count(*) FROM history.%q WHERE _ploti_valid_from = 3 AND _ploti_change = 'renamed'`, table)).Scan(&renamed))
	if renamed == 0 {
		t.Fatalf("%s's history at the version that replaced ids shows no record renamed", c.ids[0])
	}
}
