package replica

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/storage"
)

// feed-events.txt: "A 409 ... or a 404 from links.version while you apply
// older events means the dataset has since left your subscriptions." Only
// there, or for the version the event names (issue 13): a 404 from GET
// dataset, or for a current version later than the event's, while
// reloading from the current version fails the dataset, and the next sync
// repairs it; before, the dataset skipped every event until a
// feed.dataset.removed that never came.
func TestScenario_404OnlyFromTheEventsVersionMeansLeft(t *testing.T) {
	for _, tc := range []struct {
		name, match string
		publish     int  // versions published after v1
		left        bool // the docs' reading: skip until removed
	}{
		{"GET dataset", "GET /v1/feeds/datasets/ds_permits", 2, false},
		{"the current version, later than the event's", "GET /v1/feeds/datasets/ds_permits/versions/4", 3, false},
		{"the version the event names", "GET /v1/feeds/datasets/ds_permits/versions/3", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			em := mustEmulator(t)
			sub, permits, _ := seedTwo(t, em)
			r := mustOpen(t, em, sub, "")
			mustSync(t, r)
			for i := 1; i <= tc.publish; i++ {
				_, err := em.Publish(ctx, "ds_permits", permits(i))
				must(t, err)
			}
			// v2's changes fail to merge; v3 (previousVersion 2, not the v1
			// held) then reloads from the current version, and one answer
			// on the way is a 404.
			must(t, em.SpoilFile(ctx, "ds_permits", 2, "changes", 0, truncateHalf))
			em.FailNext(tc.match, http.StatusNotFound, 1)
			if _, err := r.Sync(ctx); !errors.Is(err, ErrPartial) {
				t.Fatalf("sync = %v, want ErrPartial (v2 failed)", err)
			}
			d := datasetRow(t, r, "ds_permits")
			if d.SkipUntilRemoved != tc.left {
				t.Fatalf("after the 404: %s v%d skip=%v (%s); want skip=%v", d.Status, d.Version, d.SkipUntilRemoved, d.StatusReason, tc.left)
			}
			if tc.left {
				return
			}
			mustSync(t, r)
			assertMatchesTruth(t, r, em, "ds_permits", 1+tc.publish)
		})
	}
}

// The source says "gone" (apply.ErrGone) only for the version an event
// names; a 404 or a 409 from the dataset, its schema or a link refresh is
// an error of the dataset.
func TestSource_onlyTheEventsVersionMeansGone(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	_ = sub
	c, err := fetch.New(fetch.Options{BaseURL: em.URL(), APIKey: em.APIKey(), SpoolDir: t.TempDir(), MaxAttempts: 1})
	must(t, err)
	src := &source{api: c}
	v, err := src.Version(ctx, "ds_permits", 1, "")
	must(t, err)
	noSchemaLink := *v
	noSchemaLink.Files.Schema = nil
	calls := []struct {
		name, match string
		call        func() error
		gone        bool
	}{
		{"the event's version", "GET /v1/feeds/datasets/ds_permits/versions/1", func() error { _, err := src.Version(ctx, "ds_permits", 1, ""); return err }, true},
		{"the dataset", "GET /v1/feeds/datasets/ds_permits", func() error { _, err := src.Current(ctx, "ds_permits"); return err }, false},
		{"a schema read", "GET /v1/feeds/datasets/ds_permits/schema", func() error { _, err := src.Schema(ctx, &noSchemaLink); return err }, false},
		{"a link refresh", "POST /v1/feeds/datasets/ds_permits/versions/1/links", func() error {
			_, err := src.refresh(v, "snapshot", 0)(ctx)
			return err
		}, false},
	}
	for _, c := range calls {
		for _, code := range []string{"not_found", "not_subscribed"} {
			t.Run(c.name+" "+code, func(t *testing.T) {
				status := http.StatusNotFound
				if code != "not_found" {
					status = http.StatusConflict
				}
				em.Inject(emulator.Fault{Match: c.match, Kind: emulator.FaultStatus, Status: status, Code: code})
				defer em.ClearFaults()
				err := c.call()
				if err == nil {
					t.Fatal("no error")
				}
				if got := errors.Is(err, apply.ErrGone); got != c.gone {
					t.Fatalf("errors.Is(%v, ErrGone) = %v, want %v", err, got, c.gone)
				}
			})
		}
	}
}

// subscriptions-manifest-files.txt: "Files being rebuilt: {"datasetId",
// "version", "reason": "rebuilding"}. Ask for the manifest again in a few
// minutes to load it. Its events after eventCursor still apply." The next
// sync asks the manifest again for the datasets still waiting for it
// (CONTRACT.md 8.6), rather than the versions API, which answers 503 while
// the files are rebuilt: before, every sync during a rebuild retried those
// 503s and failed the dataset.
func TestScenario_RebuildingLoadsFromTheManifestAgain(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, parcels := seedTwo(t, em)
	must(t, em.SetRebuilding("ds_parcels", true))
	fast := func(o *Options) {
		o.FetchOptions = func(f *fetch.Options) { f.MaxAttempts, f.RetryMinWait, f.RetryMaxWait = 2, time.Millisecond, time.Millisecond }
	}
	r := mustOpen(t, em, sub, "", fast)
	mustSync(t, r)
	// Still rebuilding: it stays pending, and the sync is not partial.
	res := mustSync(t, r)
	d := datasetRow(t, r, "ds_parcels")
	if d.Status != storage.StatusPending || d.StatusReason != storage.ReasonRebuilding || res.SnapshotsLoaded != 0 {
		t.Fatalf("during the rebuild: %s (%s), %+v", d.Status, d.StatusReason, res)
	}
	must(t, em.SetRebuilding("ds_parcels", false))
	_, err := em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	res = mustSync(t, r)
	if res.SnapshotsLoaded != 1 || res.ChangesMerged != 0 || res.EventsSkipped == 0 {
		t.Fatalf("after the rebuild: %+v, want v2 loaded from the manifest and its event skipped", res)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 2)
	// "Its events after eventCursor still apply."
	_, err = em.Publish(ctx, "ds_parcels", parcels(2))
	must(t, err)
	if res = mustSync(t, r); res.ChangesMerged != 1 {
		t.Fatalf("the next version: %+v, want its changes merged", res)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 3)
}
