package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

var permitCols = []emulator.Column{
	{Name: "permit", Type: "string"}, {Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
	{Name: "issued", Type: "date"}, {Name: "updated_at", Type: "timestamp"}, {Name: "final", Type: "boolean"},
	{Name: "geometry", Type: "geometry"},
}

func datasetRow(tb testing.TB, r *Replica, id string) *storage.Dataset {
	tb.Helper()
	d, err := r.db.Dataset(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func holdsOf(tb testing.TB, r *Replica, id string) []storage.Hold {
	tb.Helper()
	hs, err := r.db.Holds(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return hs
}

func withUnits(rows []emulator.Row, every int) []emulator.Row {
	for i, row := range rows {
		if i%every == 0 {
			row["units"] = int64(i)
		}
	}
	return rows
}

// schemas-and-holds.txt: "On a MINOR change, add the column and apply the
// changes" and "Records that did not change keep the value your table gives
// a new column, usually null, until you reload."
func TestScenario_MinorSchemaChange(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
	rel, err := em.Publish(ctx, "ds_permits", withUnits(permits(1), 4), emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	if rel.SchemaBump != "minor" || rel.Held {
		t.Fatalf("emulator: want a released MINOR change, got %+v", rel)
	}
	res := mustSync(t, r)
	if res.ChangesMerged != 1 || res.SnapshotsLoaded != 0 {
		t.Fatalf("a MINOR change arrives with changes to apply, not a reload: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	d := datasetRow(t, r, "ds_permits")
	if d.SchemaVersion != rel.SchemaVersion || d.Columns[len(d.Columns)-1].Name != "units" {
		t.Fatalf("registry: schema %s columns %v, want %s with units last", d.SchemaVersion, d.Columns, rel.SchemaVersion)
	}
	var nulls int
	must(t, r.DB().QueryRow("SELECT count(*) FROM ds_permits WHERE units IS NULL").Scan(&nulls))
	if nulls == 0 {
		t.Fatal("unchanged rows should keep NULL in the new column until a reload")
	}
}

// schemas-and-holds.txt: "On a MAJOR change, hold the dataset at its current
// version until someone on your side has reviewed it." Ploti first holds the
// version itself (feed.dataset.delayed), then releases it.
func TestScenario_MajorSchemaChangeHoldThenRelease(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	cols, rows := droppingFinal(permits(1))
	rel, err := em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	if !rel.Held {
		t.Fatalf("a breaking schema change is held for review by Ploti: %+v", rel)
	}
	mustSync(t, r)
	d := datasetRow(t, r, "ds_permits")
	hs := holdsOf(t, r, "ds_permits")
	if d.Status != storage.StatusCurrent || d.StatusReason != "schema_review" || len(hs) != 1 || hs[0].Kind != storage.HoldServer || hs[0].Version != 1 {
		t.Fatalf("after delayed: status %s (%s), holds %+v; want current (\"stays current meanwhile\") with a server hold at version 1", d.Status, d.StatusReason, hs)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1) // "version is the version you hold, which stays current meanwhile"

	released, err := em.ReleaseHeld("ds_permits")
	must(t, err)
	mustSync(t, r)
	d = datasetRow(t, r, "ds_permits")
	hs = holdsOf(t, r, "ds_permits")
	if d.Status != storage.StatusHeld || d.Version != 1 || len(hs) != 1 || hs[0].Kind != storage.HoldLocal {
		t.Fatalf("after the MAJOR change: status %s v%d holds %+v; want held locally at version 1", d.Status, d.Version, hs)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	if !strings.Contains(string(hs[0].Detail), `"pendingVersion":`+itoa(released.Version)) {
		t.Fatalf("the local hold should name the pending version %d: %s", released.Version, hs[0].Detail)
	}
	// Later versions are deferred while held.
	_, err = em.Publish(ctx, "ds_permits", rows[3:], emulator.SkipReview())
	must(t, err)
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_permits"); d.Version != 1 {
		t.Fatalf("held dataset moved to version %d", d.Version)
	}
	if err := r.Release(ctx, "ds_parcels"); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of a dataset not held: %v, want ErrNotHeld", err)
	}
	must(t, r.Release(ctx, "ds_permits"))
	d = datasetRow(t, r, "ds_permits")
	if d.Status != storage.StatusCurrent || len(holdsOf(t, r, "ds_permits")) != 0 {
		t.Fatalf("after release: %s (%s) holds %v", d.Status, d.StatusReason, holdsOf(t, r, "ds_permits"))
	}
	assertMatchesTruth(t, r, em, "ds_permits", released.Version+1)
	// And the log after the release is skipped as replay: nothing changes.
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 0 || res.ChangesMerged != 0 {
		t.Fatalf("events at or below the reloaded version must be skipped: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", released.Version+1)
}

func TestScenario_MajorSchemaChangeReloadPolicy(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.OnMajor = apply.OnMajorReload })
	mustSync(t, r)
	cols := []emulator.Column{permitCols[0], {Name: "valuation", Type: "number"}, permitCols[2], permitCols[3], permitCols[4], permitCols[5]}
	_, err := em.Publish(ctx, "ds_permits", permits(1), emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 1 {
		t.Fatalf("reload policy: want the resync loaded at once: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	var typ string
	must(t, r.DB().QueryRow("SELECT data_type FROM information_schema.columns WHERE table_name = 'ds_permits' AND column_name = 'valuation'").Scan(&typ))
	if want := map[string]string{"duckdb": "DOUBLE", "postgres": "double precision"}[testBackend]; typ != want {
		t.Fatalf("valuation retyped to number should be %s, is %s", want, typ)
	}
}

// feed-events.txt: "Rows you already loaded from a removed dataset stay
// yours, and stop updating."
func TestScenario_RemovedKeepsRows(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange"}}))
	_, err := em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	_, err = em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	mustSync(t, r)
	d := datasetRow(t, r, "ds_parcels")
	if d.Status != storage.StatusRemoved || d.StatusReason != "subscription_changed" {
		t.Fatalf("parcels: %s (%s), want removed: subscription_changed", d.Status, d.StatusReason)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	// Added back: loaded again at its current version.
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange", "fl-seminole"}}))
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_parcels", 2)
	if d := datasetRow(t, r, "ds_parcels"); d.Status != storage.StatusCurrent {
		t.Fatalf("parcels after being added again: %s", d.Status)
	}
}

// feed-events.txt: "A 409 ... or a 404 from links.version while you apply
// older events means the dataset has since left your subscriptions. Skip
// that dataset's events up to its feed.dataset.removed."
func TestScenario_GoneWhileApplyingOlderEvents(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange"}}))
	res, err := r.Sync(ctx)
	if err != nil {
		t.Fatalf("a dataset that left is not a failure: %v", err)
	}
	d := datasetRow(t, r, "ds_parcels")
	if d.Status != storage.StatusRemoved || d.SkipUntilRemoved || d.Version != 1 {
		t.Fatalf("parcels: %s v%d skip=%v (%s); want removed at version 1", d.Status, d.Version, d.SkipUntilRemoved, d.StatusReason)
	}
	if res.ChangesMerged != 0 {
		t.Fatalf("nothing of a gone dataset should merge: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
}

// feed-events.txt: "its first version arrives as feed.dataset.resync_required
// with reason first_version."
func TestScenario_AddedWithoutVersionThenFirstVersion(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_new", Title: "New", PlaceID: "fl-orange", KeyColumns: []string{"permit"}, Columns: permitCols}))
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_new"); d.Status != storage.StatusPending || d.Version != 0 || d.Title != "New" {
		t.Fatalf("ds_new after added null: %s v%d", d.Status, d.Version)
	}
	_, err := em.Publish(ctx, "ds_new", []emulator.Row{{"permit": "N-1", "valuation": "1.00", "geometry": "POINT (1 2)"}})
	must(t, err)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_new", 1)
}

// feed-events.txt: "feed.dataset.stale is sent once per missed check", and
// delayed: "Nothing needs doing on your side"; the server hold ends when a
// later version is applied.
func TestScenario_StaleAndDelayed(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	em.Advance(49 * time.Hour)
	mustSync(t, r)
	d := datasetRow(t, r, "ds_permits")
	if d.StaleNextCheckBy == nil || d.StatusReason != storage.ReasonStale || d.Status != storage.StatusCurrent {
		t.Fatalf("after a missed check: %s (%s), nextCheckBy %v", d.Status, d.StatusReason, d.StaleNextCheckBy)
	}
	rel, err := em.Publish(ctx, "ds_permits", permits(1), emulator.Hold("data_check"))
	must(t, err)
	if !rel.Held {
		t.Fatalf("emulator did not hold: %+v", rel)
	}
	mustSync(t, r)
	hs := holdsOf(t, r, "ds_permits")
	if len(hs) != 1 || hs[0].Kind != storage.HoldServer || hs[0].Reason != "data_check" || hs[0].Since == nil {
		t.Fatalf("holds after delayed: %+v", hs)
	}
	// Ploti discards it; the next version follows from the one held.
	must(t, em.DiscardHeld("ds_permits"))
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	mustSync(t, r)
	if hs := holdsOf(t, r, "ds_permits"); len(hs) != 0 {
		t.Fatalf("server hold should end when a later version is applied: %+v", hs)
	}
	d = datasetRow(t, r, "ds_permits")
	if d.Status != storage.StatusCurrent || d.StaleNextCheckBy != nil {
		t.Fatalf("after the next version: %s (%s) stale %v", d.Status, d.StatusReason, d.StaleNextCheckBy)
	}
	assertMatchesTruth(t, r, em, "ds_permits", d.Version)
}

// feed-events.txt: "A cursor older than retention ... returns 410 expired
// ... Reload from the subscription's manifest, which gives a fresh cursor."
func TestScenario_ExpiredCursorReloadsFromManifest(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	em.Advance(91 * 24 * time.Hour)
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	res := mustSync(t, r)
	if !res.Bootstrapped {
		t.Fatalf("want a reload from the manifest after 410: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 3)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
}

// feed-events.txt: "A cursor past the subscription's newest event is not one
// it gave, and returns 400 invalid_input."
func TestScenario_ForeignCursor(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, r.db.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, emulator.Cursor(sub, 99999)) }))
	_, err := r.Sync(ctx)
	if !errors.Is(err, ErrForeignCursor) || !strings.Contains(err.Error(), "Replica.Rebootstrap") {
		t.Fatalf("err = %v; want ErrForeignCursor naming Replica.Rebootstrap", err)
	}
}

// feed-events.txt, record_ids_changed: "The version's files include an id
// map from each id you hold to the one it carries now." Users' own columns
// registered as references are rewritten in the same transaction.
func TestScenario_RecordIDsChanged(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	refs := []IDRef{{Table: "my_notes", Column: "permit_record", DatasetID: "ds_permits"}}
	r := mustOpen(t, em, sub, "", func(o *Options) { o.IDReferences = refs })
	mustSync(t, r)
	_, err := r.DB().Exec(`CREATE TABLE my_notes AS SELECT _ploti_record_id AS permit_record, permit, 'note on ' || permit AS note FROM ds_permits`)
	must(t, err)
	rel, err := em.Publish(ctx, "ds_permits", permits(0), emulator.WithReplacedIDs(1))
	must(t, err)
	if rel.ResyncReason != "record_ids_changed" {
		t.Fatalf("emulator: %+v", rel)
	}
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	var dangling, mapped int
	must(t, r.DB().QueryRow(`SELECT count(*) FILTER (WHERE p._ploti_record_id IS NULL OR p.permit <> n.permit), count(*)
		FROM my_notes n LEFT JOIN ds_permits p ON p._ploti_record_id = n.permit_record`).Scan(&dangling, &mapped))
	if dangling != 0 || mapped != 40 {
		t.Fatalf("user references after id replacement: %d of %d dangling or pointing at another permit", dangling, mapped)
	}
	var n int
	must(t, r.DB().QueryRow("SELECT count(*) FROM _ploti.id_map WHERE dataset_id = 'ds_permits' AND version = 2").Scan(&n))
	if n == 0 {
		t.Fatal("_ploti.id_map is empty")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// subscriptions-manifest-files.txt: "Files being rebuilt: {"datasetId",
// "version", "reason": "rebuilding"}. Ask for the manifest again in a few
// minutes to load it." Other datasets load meanwhile (docs/wire.md 8.6).
func TestScenario_ManifestRebuilding(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	must(t, em.SetRebuilding("ds_parcels", true))
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	d := datasetRow(t, r, "ds_parcels")
	if d.Status != storage.StatusPending || d.StatusReason != storage.ReasonRebuilding {
		t.Fatalf("rebuilding dataset: %s (%s), want pending", d.Status, d.StatusReason)
	}
	must(t, em.SetRebuilding("ds_parcels", false))
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
}

// Invariant 2 (feed-events.txt, "Two rules make the log safe to replay"):
// replaying the whole log, even with the applied-event ids forgotten,
// changes nothing.
func TestScenario_ReplayWholeLogChangesNothing(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
	_, err := em.Publish(ctx, "ds_permits", withUnits(permits(1), 3), emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	mustSync(t, r)
	_, err = em.Publish(ctx, "ds_permits", withUnits(permits(2), 3))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(2), emulator.Hold("data_check"))
	must(t, err)
	mustSync(t, r)
	before := snapshotRegistry(t, r)
	must(t, r.db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM _ploti.applied_events"); err != nil {
			return err
		}
		return tx.SetCursor(ctx, emulator.Cursor(sub, 0))
	}))
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 0 || res.ChangesMerged != 0 {
		t.Fatalf("replaying the log loaded or merged: %+v", res)
	}
	if after := snapshotRegistry(t, r); after != before {
		t.Fatalf("replay changed the registry:\nbefore %s\nafter  %s", before, after)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 3)
	assertMatchesTruth(t, r, em, "ds_parcels", 2)
}

// snapshotRegistry renders what a replay must not change.
func snapshotRegistry(tb testing.TB, r *Replica) string {
	tb.Helper()
	var s string
	err := r.DB().QueryRow(`SELECT string_agg(concat_ws('|', dataset_id, version, schema_version, row_count, status, columns::VARCHAR), ';' ORDER BY dataset_id)
		|| ' holds ' || coalesce((SELECT string_agg(concat_ws('|', dataset_id, version, kind, reason), ';' ORDER BY dataset_id, kind) FROM _ploti.holds), '')
		FROM _ploti.datasets`).Scan(&s)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// feed-events.txt, feed.dataset.removed reasons: every reason leaves the
// rows in place and the dataset removed with the reason; its later versions
// do not arrive.
func TestScenario_RemovedEachReason(t *testing.T) {
	for _, tc := range []struct {
		reason string
		leave  func(em *emulator.Emulator, sub string) error
	}{
		{"left_coverage", func(em *emulator.Emulator, _ string) error { em.SetCoverage([]string{"fl-orange"}); return nil }},
		{"plan_changed", func(em *emulator.Emulator, _ string) error { return em.SetPlanClosed("ds_parcels", true) }},
		{"subscription_changed", func(em *emulator.Emulator, _ string) error {
			return em.Refile("ds_parcels", "fl-orange", "zoning-land-use")
		}},
		{"no_longer_deliverable", func(em *emulator.Emulator, _ string) error { return em.SetDeliverable("ds_parcels", false) }},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			ctx := context.Background()
			em := mustEmulator(t)
			sub, _, parcels := seedTwo(t, em)
			em.AddTopic("zoning-land-use", "Zoning")
			must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange", "fl-seminole"}, Topics: []string{"development-activity", "parcels-property"}}))
			r := mustOpen(t, em, sub, "")
			mustSync(t, r)
			must(t, tc.leave(em, sub))
			_, _ = em.Publish(ctx, "ds_parcels", parcels(1)) // may be refused once undeliverable
			mustSync(t, r)
			d := datasetRow(t, r, "ds_parcels")
			if d.Status != storage.StatusRemoved || d.StatusReason != tc.reason || d.Version != 1 {
				t.Fatalf("parcels: %s v%d (%s), want removed (%s) at version 1", d.Status, d.Version, d.StatusReason, tc.reason)
			}
			assertMatchesTruth(t, r, em, "ds_parcels", 1)
			assertMatchesTruth(t, r, em, "ds_permits", 1)
		})
	}
}

// feed-events.txt, previous_unavailable: "a version subscribers already had
// was released again, and there is no id map. After a version is released
// again, the dataset's next version sent is a resync_required".
func TestScenario_ReReleaseSendsPreviousUnavailable(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, em.ReRelease("ds_permits", 1))
	rel, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	if rel.ResyncReason != "previous_unavailable" {
		t.Fatalf("emulator: %+v", rel)
	}
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 1 || res.ChangesMerged != 0 {
		t.Fatalf("a resync loads the snapshot: %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
}

// schemas-and-holds.txt: a key change is MAJOR; it arrives (once Ploti
// releases it) as resync_required key_columns_changed, held for review by
// default.
func TestScenario_KeyColumnsChanged(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	rel, err := em.Publish(ctx, "ds_permits", permits(0), emulator.WithSchema(permitCols, []string{"permit", "issued"}), emulator.SkipReview())
	must(t, err)
	if rel.ResyncReason != "key_columns_changed" {
		t.Fatalf("emulator: %+v", rel)
	}
	mustSync(t, r)
	d := datasetRow(t, r, "ds_permits")
	if d.Status != storage.StatusHeld || d.Version != 1 {
		t.Fatalf("after a key change: %s v%d (%s), want held at 1", d.Status, d.Version, d.StatusReason)
	}
	must(t, r.Release(ctx, "ds_permits"))
	d = datasetRow(t, r, "ds_permits")
	if d.Version != rel.Version || strings.Join(d.KeyColumns, ",") != "permit,issued" {
		t.Fatalf("after release: v%d keys %v", d.Version, d.KeyColumns)
	}
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
}

// Regression (review H1): a dataset that joins with no version and gets its
// first version before the next sync is registered and loaded in one walk.
func TestScenario_AddedAndFirstVersionInOneSync(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_new", Title: "New", PlaceID: "fl-orange", KeyColumns: []string{"permit"}, Columns: permitCols}))
	_, err := em.Publish(ctx, "ds_new", []emulator.Row{{"permit": "N-1", "valuation": "1.00", "geometry": "POINT (1 2)"}})
	must(t, err)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_new", 1)
	if d := datasetRow(t, r, "ds_new"); d.Table != "ds_new" || d.Status != storage.StatusCurrent || d.Title != "New" || d.PlaceID != "fl-orange" {
		t.Fatalf("ds_new: table %q status %s (%s)", d.Table, d.Status, d.StatusReason)
	}
}

// Regression (review L1): the repair of a failed dataset reloads its current
// version, but must not slip a MAJOR schema change past the hold policy.
func TestScenario_RepairKeepsMajorChangeForReview(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	rel, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	must(t, em.SpoilFileQuery(ctx, "ds_permits", rel.Version, "changes", 0, "SELECT * FROM original UNION ALL (SELECT * FROM original LIMIT 1)"))
	if _, err := r.Sync(ctx); !errors.Is(err, ErrPartial) {
		t.Fatalf("a spoiled changes file should fail the dataset: %v", err)
	}
	cols, rows := droppingFinal(permits(2))
	must(t, em.RestoreFiles("ds_permits", rel.Version))
	major, err := em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	mustSync(t, r)
	d := datasetRow(t, r, "ds_permits")
	if d.Status != storage.StatusHeld || d.Version != 1 || d.StatusReason != storage.ReasonMajorSchemaChange {
		t.Fatalf("after repair over a MAJOR change: %s v%d (%s), want held at version 1", d.Status, d.Version, d.StatusReason)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	must(t, r.Release(ctx, "ds_permits"))
	assertMatchesTruth(t, r, em, "ds_permits", major.Version)
}

// Invariant 4: one event the client cannot read fails its dataset only; the
// others go on, and the next sync repairs it. A proxy in front of the
// emulator spoils the parcels' updated event in the log.
func TestScenario_UnreadableEventFailsItsDatasetOnly(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	target, _ := url.Parse(em.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, "/events") || resp.StatusCode != http.StatusOK {
			return nil
		}
		var page map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			return err
		}
		for _, e := range page["events"].([]any) {
			ev := e.(map[string]any)
			if data, _ := ev["data"].(map[string]any); data["datasetId"] == "ds_parcels" && ev["type"] == "feed.dataset.updated" {
				data["version"] = "two" // not a number
			}
		}
		b, _ := json.Marshal(page)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	path := freshReplica(t)
	r := mustOpen(t, em, sub, path, func(o *Options) { o.APIURL = srv.URL })
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	res, err := r.Sync(ctx)
	if !errors.Is(err, ErrPartial) || len(res.Failed) != 1 || res.Failed[0] != "ds_parcels" {
		t.Fatalf("sync: %v, failed %v; want only ds_parcels failed", err, res.Failed)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	if d := datasetRow(t, r, "ds_parcels"); d.Status != storage.StatusFailed || !strings.Contains(d.StatusReason, "evt_") {
		t.Fatalf("parcels: %s (%s)", d.Status, d.StatusReason)
	}
	r.Close()
	direct := mustOpen(t, em, sub, path)
	mustSync(t, direct)
	assertMatchesTruth(t, direct, em, "ds_parcels", 2)
}

// Regression (review M3): a first sync with a mistyped subscription fails
// and does not tie the file to it.
func TestSync_MistypedSubscriptionDoesNotBindTheFile(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	path := freshReplica(t)
	typo := mustOpen(t, em, "sub_typo", path)
	if _, err := typo.Sync(context.Background()); err == nil {
		t.Fatal("a sync of an unknown subscription should fail")
	}
	typo.Close()
	r := mustOpen(t, em, sub, path)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", 1)
}

// Review L3: a reload that jumps over a record_ids_changed version (here,
// the release of a review hold) still rewrites the user's references with
// that version's id map.
func TestScenario_ReleaseAppliesSkippedIDMaps(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	refs := []IDRef{{Table: "my_notes", Column: "permit_record", DatasetID: "ds_permits"}}
	r := mustOpen(t, em, sub, "", func(o *Options) { o.IDReferences = refs })
	mustSync(t, r)
	_, err := r.DB().Exec(`CREATE TABLE my_notes AS SELECT _ploti_record_id AS permit_record, permit FROM ds_permits`)
	must(t, err)
	cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "note", Type: "string"})
	cols = append(cols[:4:4], cols[5:]...) // drop final, add note: MAJOR
	rows := permits(0)
	for _, row := range rows {
		delete(row, "final")
	}
	_, err = em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	mustSync(t, r) // held for review at version 1
	replaced, err := em.Publish(ctx, "ds_permits", rows, emulator.WithReplacedIDs(1))
	must(t, err)
	last, err := em.Publish(ctx, "ds_permits", rows[1:])
	must(t, err)
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_permits"); d.Version != 1 || d.Status != storage.StatusHeld {
		t.Fatalf("want held at 1, got %s v%d", d.Status, d.Version)
	}
	if replaced.ResyncReason != "record_ids_changed" {
		t.Fatalf("emulator: %+v", replaced)
	}
	must(t, r.Release(ctx, "ds_permits"))
	assertMatchesTruth(t, r, em, "ds_permits", last.Version)
	var wrong, total int
	must(t, r.DB().QueryRow(`SELECT count(*) FILTER (WHERE p._ploti_record_id IS NULL OR p.permit <> n.permit), count(*)
		FROM my_notes n LEFT JOIN ds_permits p ON p._ploti_record_id = n.permit_record WHERE n.permit <> 'P-000'`).Scan(&wrong, &total))
	if wrong != 0 || total != 39 {
		t.Fatalf("references after a release over an id replacement: %d of %d wrong", wrong, total)
	}
}

// countingTransport counts the API requests a replica makes, by method and
// path.
type countingTransport struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.calls[req.Method+" "+req.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (c *countingTransport) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = map[string]int{}
	return out
}

// subscriptions-manifest-files.txt: "A check that finds nothing new
// publishes no version but still moves lastCheckedAt. A day past
// nextCheckBy, the dataset is stale": a later check ends the staleness a
// feed.dataset.stale recorded, with no version and no event to tell of it;
// a dataset no check has reached since stays stale, and a missed check
// after the good one makes it stale again. A stale dataset is asked about
// once its registry row has rested an hour (never in the sync that
// recorded it: a state-only event makes no call): two stale datasets from
// the subscription's datasets list (one page), one by its own call.
func TestScenario_StaleEndsWithALaterCheck(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	tap := &countingTransport{calls: map[string]int{}}
	r := mustOpen(t, em, sub, "", func(o *Options) {
		o.Now = em.Now
		o.HTTPClient = &http.Client{Transport: tap}
	})
	mustSync(t, r)
	stale := func(id string) bool {
		d := datasetRow(t, r, id)
		if (d.StaleNextCheckBy != nil) != (d.StatusReason == storage.ReasonStale) || d.Status != storage.StatusCurrent {
			t.Fatalf("%s: %s (%s), stale nextCheckBy %v", id, d.Status, d.StatusReason, d.StaleNextCheckBy)
		}
		return d.StaleNextCheckBy != nil
	}
	asked := func(what string, list, own int) {
		t.Helper()
		calls := tap.take()
		if calls["GET /v1/feeds/datasets"] != list || calls["GET /v1/feeds/datasets/ds_permits"]+calls["GET /v1/feeds/datasets/ds_parcels"] != own {
			t.Fatalf("%s: want %d datasets list and %d dataset calls, got %v", what, list, own, calls)
		}
	}
	em.Advance(49 * time.Hour) // a missed check each: feed.dataset.stale
	tap.take()
	mustSync(t, r)
	if !stale("ds_permits") || !stale("ds_parcels") {
		t.Fatal("a missed check did not make the datasets stale")
	}
	asked("the sync that recorded them stale", 0, 0)
	em.Advance(61 * time.Minute)
	mustSync(t, r)
	asked("an hour later, two stale datasets of two", 1, 0)
	if !stale("ds_permits") || !stale("ds_parcels") {
		t.Fatal("no check since, yet no longer stale")
	}
	mustSync(t, r)
	asked("right after asking", 0, 0)

	must(t, em.Check("ds_permits")) // Ploti checks one source again: nothing new
	em.Advance(61 * time.Minute)
	mustSync(t, r)
	asked("an hour later, after a check", 1, 0)
	if stale("ds_permits") {
		t.Fatal("ds_permits: still stale after a check that moved lastCheckedAt")
	}
	if !stale("ds_parcels") {
		t.Fatal("ds_parcels: no check reached it, yet it is no longer stale")
	}
	st, err := r.Status(context.Background())
	must(t, err)
	for _, d := range st.Datasets {
		if want := d.DatasetID == "ds_parcels"; d.Stale != want {
			t.Fatalf("status of %s: stale %v, want %v", d.DatasetID, d.Stale, want)
		}
	}
	em.Advance(61 * time.Minute)
	mustSync(t, r)
	asked("one stale dataset of two", 0, 1)

	em.Advance(49 * time.Hour) // the checked source is missed again
	mustSync(t, r)
	if !stale("ds_permits") {
		t.Fatal("ds_permits: a missed check after the good one did not make it stale again")
	}

	// "Ploti checks a source on schedule while a subscription includes
	// its dataset": one that leaves while stale is removed, not stale.
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange"}}))
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_parcels"); d.Status != storage.StatusRemoved || d.StaleNextCheckBy != nil || d.StaleLastCheckedAt != nil {
		t.Fatalf("ds_parcels left while stale: %s (%s), stale %v %v", d.Status, d.StatusReason, d.StaleLastCheckedAt, d.StaleNextCheckBy)
	}
	st, err = r.Status(context.Background())
	must(t, err)
	for _, d := range st.Datasets {
		if d.DatasetID == "ds_parcels" && d.Stale {
			t.Fatal("status: a removed dataset shows stale")
		}
	}
}
