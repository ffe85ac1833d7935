package replica

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// feed-events.txt: "A 409 ... or a 404 from links.version while you apply
// older events means the dataset has since left your subscriptions." Only
// there, or for the version the event names: a 404 from GET
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
			_, err := r.Sync(ctx)
			d := datasetRow(t, r, "ds_permits")
			// v2 failed; a later event of the same sync may bring the
			// dataset current again, and the sync is then not partial.
			recovered := d.Status == storage.StatusCurrent && d.Version == 1+tc.publish
			if !errors.Is(err, ErrPartial) && !(err == nil && recovered && !tc.left) {
				t.Fatalf("sync = %v with ds_permits %s v%d, want ErrPartial (v2 failed) or nil with it current at v%d", err, d.Status, d.Version, 1+tc.publish)
			}
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
	seedTwo(t, em)
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
// (docs/wire.md 8.6), rather than the versions API, which answers 503 while
// the files are rebuilt: before, every sync during a rebuild retried those
// 503s and failed the dataset.
func TestScenario_RebuildingLoadsFromTheManifestAgain(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, parcels := seedTwo(t, em)
	must(t, em.SetRebuilding("ds_parcels", true))
	fast := func(o *Options) {
		o.FetchOptions = func(f *fetch.Options) {
			f.MaxAttempts, f.RetryMinWait, f.RetryMaxWait = 2, time.Millisecond, time.Millisecond
		}
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

// docs/wire.md 8.6: "A manifest rebuilding dataset: an event for it is
// applied through the versions API when its files can be had; otherwise it
// stays pending and the next sync's manifest loads it." Before, an event
// after the manifest's cursor whose version still answered 503 while the
// files were rebuilt failed the dataset and made the sync partial.
func TestScenario_RebuildingEventWithoutFilesStaysPending(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, parcels := seedTwo(t, em)
	must(t, em.SetRebuilding("ds_parcels", true))
	fast := func(o *Options) {
		o.FetchOptions = func(f *fetch.Options) {
			f.MaxAttempts, f.RetryMinWait, f.RetryMaxWait = 2, time.Millisecond, time.Millisecond
		}
	}
	r := mustOpen(t, em, sub, "", fast)
	mustSync(t, r)
	// A version published during the rebuild: its event follows the
	// manifest's cursor, and its files cannot be had yet.
	_, err := em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	res, err := r.Sync(ctx)
	if err != nil || len(res.Failed) != 0 || res.EventsFailed != 0 {
		t.Fatalf("sync during the rebuild: %v, %+v; want no failure", err, res)
	}
	if d := datasetRow(t, r, "ds_parcels"); d.Status != storage.StatusPending || d.StatusReason != storage.ReasonRebuilding || d.Version != 0 {
		t.Fatalf("during the rebuild: %s (%s) v%d, want pending (rebuilding)", d.Status, d.StatusReason, d.Version)
	}
	must(t, em.SetRebuilding("ds_parcels", false))
	if res = mustSync(t, r); res.SnapshotsLoaded != 1 {
		t.Fatalf("after the rebuild: %+v, want the manifest's version loaded", res)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 2)
}

// feed-events.txt: "A cursor past the subscription's newest event is not
// one it gave, and returns 400 invalid_input." The sync says to run
// --rebootstrap, which reloads every dataset from a fresh manifest into
// the same file: the user's tables and --id-ref columns (rewritten through
// the id map of a version the reload passes) and Ploti's holds stay.
func TestScenario_RebootstrapAfterAForeignCursor(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	refs := []IDRef{{Table: "my_notes", Column: "permit_record", DatasetID: "ds_permits"}}
	r := mustOpen(t, em, sub, "", func(o *Options) { o.IDReferences = refs })
	mustSync(t, r)
	_, err := r.DB().Exec(`CREATE TABLE my_notes AS SELECT _ploti_record_id AS permit_record, permit FROM ds_permits`)
	must(t, err)
	// Ploti holds parcels' next version (a column dropped: schema_review).
	rows := parcels(1)
	for _, row := range rows {
		delete(row, "units")
	}
	rel, err := em.Publish(ctx, "ds_parcels", rows, emulator.WithSchema([]emulator.Column{{Name: "parcel", Type: "string"}, {Name: "acres", Type: "number"},
		{Name: "uses", Type: "list", Items: &emulator.Column{Type: "string"}}, {Name: "geometry", Type: "geometry"}}, []string{"parcel"}))
	must(t, err)
	if !rel.Held {
		t.Fatalf("emulator: want a held version: %+v", rel)
	}
	mustSync(t, r)
	if hs := holdsOf(t, r, "ds_parcels"); len(hs) != 1 || hs[0].Kind != storage.HoldServer {
		t.Fatalf("holds of parcels = %+v, want Ploti's", hs)
	}
	// Ploti replaces the permits' ids; then the file's cursor turns foreign.
	_, err = em.Publish(ctx, "ds_permits", permits(0), emulator.WithReplacedIDs(1))
	must(t, err)
	must(t, r.db.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, emulator.Cursor(sub, 99999)) }))
	_, err = r.Sync(ctx)
	if !errors.Is(err, ErrForeignCursor) || !strings.Contains(err.Error(), "Replica.Rebootstrap") {
		t.Fatalf("sync = %v; want ErrForeignCursor naming Replica.Rebootstrap", err)
	}
	res, err := r.Rebootstrap(ctx)
	if err != nil {
		t.Fatalf("rebootstrap: %v", err)
	}
	if !res.Bootstrapped || res.SnapshotsLoaded != 2 {
		t.Fatalf("rebootstrap = %+v, want both datasets reloaded", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	if hs := holdsOf(t, r, "ds_parcels"); len(hs) != 1 || hs[0].Kind != storage.HoldServer || hs[0].Version != 1 {
		t.Fatalf("holds of parcels after the rebootstrap = %+v, want Ploti's hold kept", hs)
	}
	var dangling, n int
	must(t, r.DB().QueryRow(`SELECT count(*) FILTER (WHERE p._ploti_record_id IS NULL OR p.permit <> n.permit), count(*)
		FROM my_notes n LEFT JOIN ds_permits p ON p._ploti_record_id = n.permit_record`).Scan(&dangling, &n))
	if dangling != 0 || n != 40 {
		t.Fatalf("my_notes after the rebootstrap: %d of %d dangling or pointing at another permit", dangling, n)
	}
	// The walk goes on from the fresh cursor.
	_, err = em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	if res := mustSync(t, r); res.ChangesMerged != 1 {
		t.Fatalf("the next version: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 3)
}

// A dataset held here for review (a major schema change, decision 4) that
// a reload from the manifest finds "Files being rebuilt" stays held for
// its reason: its release loads Ploti's version, so it does not wait for
// the files, and no later sync asks the manifest again for it ("Ask for
// the manifest again in a few minutes to load it" is for datasets the
// reload would load; the manifest is a heavy call, 20 a minute).
func TestScenario_HeldDatasetKeepsItsReasonThroughARebuild(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	fast := func(o *Options) {
		o.FetchOptions = func(f *fetch.Options) {
			f.MaxAttempts, f.RetryMinWait, f.RetryMaxWait = 2, time.Millisecond, time.Millisecond
		}
	}
	r := mustOpen(t, em, sub, "", fast)
	api := &countingAPI{API: r.api}
	r.api, r.exec.Source = api, &source{api: api}
	mustSync(t, r)
	cols, rows := droppingFinal(permits(1))
	major, err := em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	mustSync(t, r)
	held := func(when string) {
		t.Helper()
		if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusHeld || d.Version != 1 || d.StatusReason != storage.ReasonMajorSchemaChange {
			t.Fatalf("%s: %s v%d (%s), want held at version 1 (%s)", when, d.Status, d.Version, d.StatusReason, storage.ReasonMajorSchemaChange)
		}
	}
	held("after the major change")
	// The cursor expires while Ploti rebuilds the permits' files: the sync
	// reloads from a manifest that lists them as unavailable.
	must(t, em.SetRebuilding("ds_permits", true))
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	em.Advance(91 * 24 * time.Hour)
	_, err = em.Publish(ctx, "ds_parcels", parcels(2))
	must(t, err)
	if res := mustSync(t, r); !res.Bootstrapped {
		t.Fatalf("want a reload from the manifest after 410: %+v", res)
	}
	held("after the reload during the rebuild")
	must(t, em.SetRebuilding("ds_permits", false))
	before := api.n("manifest")
	mustSync(t, r)
	mustSync(t, r)
	if n := api.n("manifest") - before; n != 0 {
		t.Fatalf("two syncs after the rebuild asked the manifest %d times for a dataset held for review", n)
	}
	held("after the rebuild")
	must(t, r.Release(ctx, "ds_permits"))
	assertMatchesTruth(t, r, em, "ds_permits", major.Version)
}

// subscriptions-manifest-files.txt: "No released version yet:
// {"datasetId","reason"}, with its status as the reason: building, held,
// failed or awaiting_release." A bootstrap registers such a dataset as
// pending with that reason, and later syncs neither fail nor repair it.
func TestScenario_ManifestUnavailableReasonsArePendingReasons(t *testing.T) {
	ctx := context.Background()
	for _, status := range []string{"building", "held", "failed", "awaiting_release"} {
		t.Run(status, func(t *testing.T) {
			em := mustEmulator(t)
			sub, _, _ := seedTwo(t, em)
			must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_new", Title: "New", PlaceID: "fl-orange", KeyColumns: []string{"permit"}, Columns: permitCols}))
			must(t, em.SetDatasetStatus("ds_new", status))
			r := mustOpen(t, em, sub, "")
			for i := range 2 {
				res, err := r.Sync(ctx)
				if err != nil || len(res.Failed) != 0 {
					t.Fatalf("sync %d: %v, failed %v", i+1, err, res.Failed)
				}
				if d := datasetRow(t, r, "ds_new"); d.Status != storage.StatusPending || d.StatusReason != status || d.Version != 0 {
					t.Fatalf("sync %d: ds_new %s v%d (%s), want pending (%s)", i+1, d.Status, d.Version, d.StatusReason, status)
				}
			}
			assertMatchesTruth(t, r, em, "ds_permits", 1)
		})
	}
}

// subscriptions-manifest-files.txt: "A dataset is listed only while the
// subscription still delivers it and your workspace's coverage and plan
// still open it." A reload from the manifest (after a 410) that no longer
// lists a dataset marks it removed, not_in_manifest, and keeps its rows.
func TestScenario_ReloadMarksADatasetNoLongerListedRemoved(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	var before int
	must(t, r.DB().QueryRow("SELECT count(*) FROM ds_parcels").Scan(&before))
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	em.Advance(91 * 24 * time.Hour)
	must(t, em.SetDeliverable("ds_parcels", false))
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	if res := mustSync(t, r); !res.Bootstrapped {
		t.Fatalf("want a reload from the manifest after 410: %+v", res)
	}
	d := datasetRow(t, r, "ds_parcels")
	if d.Status != storage.StatusRemoved || d.StatusReason != storage.ReasonNotInManifest {
		t.Fatalf("ds_parcels: %s (%s), want removed (%s)", d.Status, d.StatusReason, storage.ReasonNotInManifest)
	}
	var after int
	must(t, r.DB().QueryRow("SELECT count(*) FROM ds_parcels").Scan(&after))
	if after != before || before == 0 {
		t.Fatalf("ds_parcels rows: %d, want the %d it held", after, before)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 3)
}

// unavailable leaves a dataset held here for review as it is, whatever the
// manifest says of its files; one skipped until its removed (it had left)
// is delivered again, still held for its review.
func TestUnavailable_heldForReview(t *testing.T) {
	held := func(skip bool) *storage.Dataset {
		return &storage.Dataset{ID: "ds_a", Version: 1, Status: storage.StatusHeld, StatusReason: storage.ReasonMajorSchemaChange, SkipUntilRemoved: skip}
	}
	skipped := held(true)
	skipped.StatusReason = storage.ReasonLeftSubscription
	got := unavailable(skipped, ploti.Unavailable{DatasetID: "ds_a", Reason: storage.ReasonRebuilding})
	if got == nil || got.SkipUntilRemoved || got.Status != storage.StatusHeld || got.StatusReason != storage.ReasonMajorSchemaChange {
		t.Fatalf("held and skipped: %+v, want delivered again, held (%s)", got, storage.ReasonMajorSchemaChange)
	}
	for _, reason := range []string{storage.ReasonRebuilding, "failed"} {
		if got := unavailable(held(false), ploti.Unavailable{DatasetID: "ds_a", Reason: reason}); got != nil {
			t.Fatalf("held, %s: %+v, want the row left as it is", reason, got)
		}
	}
}

// feed-events.txt, feed.dataset.removed: the dataset has left and its rows
// stay. A dataset that failed (a spoiled changes file) and then left fails
// its repair at the next sync's start, before the walk reaches its
// removed: that sync ends clean, not partial, with the dataset removed.
func TestScenario_AFailedDatasetThatLeftDoesNotMakeTheSyncPartial(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	rel, err := em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	must(t, em.SpoilFile(ctx, "ds_parcels", rel.Version, "changes", 0, truncateHalf))
	if _, err := r.Sync(ctx); !errors.Is(err, ErrPartial) {
		t.Fatalf("a spoiled changes file should fail the dataset: %v", err)
	}
	must(t, em.SetDeliverable("ds_parcels", false))
	res, err := r.Sync(ctx)
	d := datasetRow(t, r, "ds_parcels")
	if err != nil || len(res.Failed) != 0 || d.Status != storage.StatusRemoved {
		t.Fatalf("after it left: %v, failed %v, ds_parcels %s (%s); want a clean sync and ds_parcels removed", err, res.Failed, d.Status, d.StatusReason)
	}
	var result string
	must(t, r.DB().QueryRow("SELECT result FROM _ploti.sync_runs ORDER BY run_id DESC LIMIT 1").Scan(&result))
	if result != "ok" {
		t.Fatalf("the run's row says %q, want ok", result)
	}
}
