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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/storage"
)

// fastRetries makes the API client's waits return at once.
func fastRetries(o *Options) {
	o.FetchOptions = func(fo *fetch.Options) {
		fo.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}
}

// fileMatch is the emulator's fault pattern for the files of one version:
// "/files/<tag>/v<n>/<glob>".
func fileMatch(tb testing.TB, em *emulator.Emulator, datasetID string, version int, glob string) string {
	tb.Helper()
	snaps, err := em.SnapshotFiles(context.Background(), datasetID, version)
	if err != nil || len(snaps) == 0 {
		tb.Fatalf("snapshot files of %s v%d: %v", datasetID, version, err)
	}
	rel, err := filepath.Rel(em.Dir(), filepath.Dir(snaps[0]))
	if err != nil {
		tb.Fatal(err)
	}
	return "/" + filepath.ToSlash(rel) + "/" + glob
}

// badInput is one bad input for TestSync_BadInput.
type badInput struct {
	name string
	// how v2 of ds_permits reaches the replica: "update" (a changes file),
	// "minor" (a changes file with a column added), "resync" (a snapshot)
	// or "idmap" (a snapshot and an id map).
	mode  string
	spoil func(t *testing.T, em *emulator.Emulator)
	// wantFile and wantProblem must both appear in the dataset's reason.
	wantFile, wantProblem string
	// stillBad: the repair on the next sync (reloading v2's snapshot) meets
	// the same bad input; otherwise that repair already recovers.
	stillBad bool
	// repairFile is the file the repair's reason names, when not wantFile.
	repairFile string
}

func truncateHalf(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	return b[:len(b)/2], err
}

// corruptFooter spoils the Parquet footer's metadata and keeps the framing
// (magic at both ends, a footer length that fits), so only reading the
// file finds it.
func corruptFooter(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	n := len(b)
	footer := int(uint32(b[n-8]) | uint32(b[n-7])<<8 | uint32(b[n-6])<<16 | uint32(b[n-5])<<24)
	for i := n - 8 - footer; i < n-8-footer/2; i++ {
		b[i] = 0xfe
	}
	return b, nil
}

var badInputs = []badInput{
	{name: "version answer malformed JSON", mode: "update", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			em.Inject(emulator.Fault{Match: "GET /v1/feeds/datasets/ds_permits/versions/2", Kind: emulator.FaultTruncate, Count: -1})
		},
		wantFile: "GET /v1/feeds/datasets/ds_permits/versions/2", wantProblem: "malformed response: unexpected end of JSON input"},
	// A version of the held schema version is merged with the registry's
	// columns; a MINOR change makes the replica read the schema file.
	{name: "schema file malformed JSON", mode: "minor", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFile(context.Background(), "ds_permits", 2, "schema", 0, truncateHalf))
		},
		wantFile: "ds_permits-v2-schema-0.json", wantProblem: "unexpected end of JSON input"},
	{name: "truncated snapshot", mode: "resync", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFile(context.Background(), "ds_permits", 2, "snapshot", 0, truncateHalf))
		},
		wantFile: "ds_permits-v2-snapshot-0.parquet", wantProblem: "not a parquet file: no PAR1 magic at the end"},
	{name: "corrupt snapshot", mode: "resync", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFile(context.Background(), "ds_permits", 2, "snapshot", 0, corruptFooter))
		},
		wantFile: "ds_permits-v2-snapshot-0.parquet", wantProblem: "not a readable Parquet snapshot"},
	{name: "truncated changes file", mode: "update",
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFile(context.Background(), "ds_permits", 2, "changes", 0, truncateHalf))
		},
		wantFile: "ds_permits-v2-changes-0.parquet", wantProblem: "not a parquet file"},
	{name: "sha256 mismatch", mode: "update", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			em.Inject(emulator.Fault{Match: fileMatch(t, em, "ds_permits", 2, "*.parquet"), Kind: emulator.FaultCorrupt, Count: -1})
		},
		wantFile: "ds_permits-v2-changes-0.parquet", wantProblem: "sha256 mismatch", repairFile: "ds_permits-v2-snapshot-0.parquet"},
	{name: "snapshot with a duplicate record id", mode: "resync", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFileQuery(context.Background(), "ds_permits", 2, "snapshot", 0,
				"SELECT * FROM original UNION ALL (SELECT * FROM original ORDER BY _ploti_record_id LIMIT 1)"))
		},
		wantFile: "ds_permits-v2-snapshot-0.parquet", wantProblem: "snapshot has 0 null and 1 duplicate _ploti_record_id values"},
	{name: "snapshot with a null record id", mode: "resync", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFileQuery(context.Background(), "ds_permits", 2, "snapshot", 0,
				"SELECT * REPLACE (CASE WHEN _ploti_record_id = (SELECT min(_ploti_record_id) FROM original) THEN NULL ELSE _ploti_record_id END AS _ploti_record_id) FROM original"))
		},
		wantFile: "ds_permits-v2-snapshot-0.parquet", wantProblem: "snapshot has 1 null and 0 duplicate _ploti_record_id values"},
	{name: "changes file lacks a schema column", mode: "update",
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFileQuery(context.Background(), "ds_permits", 2, "changes", 0, "SELECT * EXCLUDE (valuation) FROM original"))
		},
		wantFile: "ds_permits-v2-changes-0.parquet", wantProblem: "lacks column(s) valuation the schema names"},
	{name: "changes file has a column the schema lacks", mode: "update",
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFileQuery(context.Background(), "ds_permits", 2, "changes", 0, "SELECT *, 1 AS surprise FROM original"))
		},
		wantFile: "ds_permits-v2-changes-0.parquet", wantProblem: "has column surprise that the table's schema does not"},
	{name: "changes file with a duplicate record id", mode: "update",
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFileQuery(context.Background(), "ds_permits", 2, "changes", 0,
				"SELECT * FROM original UNION ALL (SELECT * FROM original ORDER BY _ploti_record_id LIMIT 1)"))
		},
		wantFile: "ds_permits-v2-changes-0.parquet", wantProblem: "changes file has 0 null and 1 duplicate _ploti_record_id values"},
	{name: "id map maps two ids to one", mode: "idmap", stillBad: true,
		spoil: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFileQuery(context.Background(), "ds_permits", 2, "idMap", 0,
				"SELECT from_id, CASE WHEN to_id = (SELECT max(to_id) FROM original) THEN (SELECT min(to_id) FROM original) ELSE to_id END AS to_id FROM original"))
		},
		wantFile: "ds_permits-v2-idMap-0.parquet", wantProblem: "0 repeated from_id and 1 repeated to_id (two ids mapped to one)"},
}

// Invariant 4, "Bad input": each bad file or answer fails its
// dataset with a reason naming the file and the problem, leaves the last
// good version exactly as it was, lets the other dataset go on, is tried
// again on the next sync and recovers once the input is good.
func TestSync_BadInput(t *testing.T) {
	for _, tc := range badInputs {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			em := mustEmulator(t)
			sub, permits, parcels := seedTwo(t, em)
			r := mustOpen(t, em, sub, "", fastRetries)
			mustSync(t, r)
			var opts []emulator.PublishOption
			switch tc.mode {
			case "resync":
				must(t, em.ReRelease("ds_permits", 1))
			case "idmap":
				opts = append(opts, emulator.WithReplacedIDs(0.5))
			case "minor":
				cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
				opts = append(opts, emulator.WithSchema(cols, []string{"permit"}))
			}
			rel, err := em.Publish(ctx, "ds_permits", permits(1), opts...)
			must(t, err)
			if got := rel.ResyncRequired; got != (tc.mode != "update" && tc.mode != "minor") {
				t.Fatalf("emulator: v2 resync %v (%s), want mode %s", got, rel.ResyncReason, tc.mode)
			}
			_, err = em.Publish(ctx, "ds_parcels", parcels(1))
			must(t, err)
			tc.spoil(t, em)

			res, err := r.Sync(ctx)
			if !errors.Is(err, ErrPartial) || len(res.Failed) != 1 || res.Failed[0] != "ds_permits" {
				t.Fatalf("sync with bad input: %v, failed %v; want ErrPartial naming ds_permits", err, res.Failed)
			}
			if !strings.Contains(err.Error(), "ds_permits") {
				t.Fatalf("sync error %q does not name the dataset", err)
			}
			assertFailed(t, r, tc.wantFile, tc.wantProblem)
			assertMatchesTruth(t, r, em, "ds_permits", 1) // the last good version, untouched
			assertMatchesTruth(t, r, em, "ds_parcels", 2) // the other dataset went on

			res, err = r.Sync(ctx)
			if tc.stillBad {
				if !errors.Is(err, ErrPartial) || len(res.Failed) != 1 || res.SnapshotsLoaded != 0 {
					t.Fatalf("second sync, input still bad: %v, %+v; want the dataset tried again and failed", err, res)
				}
				file := tc.wantFile
				if tc.repairFile != "" {
					file = tc.repairFile
				}
				assertFailed(t, r, file, tc.wantProblem)
				assertMatchesTruth(t, r, em, "ds_permits", 1)
				em.ClearFaults()
				must(t, em.RestoreFiles("ds_permits", 2))
				res = mustSync(t, r)
			} else if err != nil {
				t.Fatalf("second sync: %v; want the repair to reload v2's good snapshot", err)
			}
			if res.SnapshotsLoaded != 1 {
				t.Fatalf("recovering sync loaded %d snapshots, want 1 (the repair of ds_permits)", res.SnapshotsLoaded)
			}
			assertMatchesTruth(t, r, em, "ds_permits", 2)
			assertMatchesTruth(t, r, em, "ds_parcels", 2)
			if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusCurrent || d.LastError != "" || d.FailedAt != nil {
				t.Fatalf("after recovery: %s %q (last error %q)", d.Status, d.StatusReason, d.LastError)
			}
			if em.KeyLeaks() != 0 {
				t.Fatalf("the API key went to the file host %d times", em.KeyLeaks())
			}
		})
	}
}

func assertFailed(tb testing.TB, r *Replica, wantFile, wantProblem string) {
	tb.Helper()
	d := datasetRow(tb, r, "ds_permits")
	if d.Status != storage.StatusFailed || d.Version != 1 || d.FailedAt == nil {
		tb.Fatalf("ds_permits: %s at v%d (failed at %v): %q; want failed at v1", d.Status, d.Version, d.FailedAt, d.StatusReason)
	}
	for _, want := range []string{wantFile, wantProblem} {
		if !strings.Contains(d.StatusReason, want) || !strings.Contains(d.LastError, want) {
			tb.Fatalf("ds_permits reason %q does not say %q", d.StatusReason, want)
		}
	}
}

// Malformed JSON in an answer that is not one dataset's (an events page, a
// manifest) stops the sync with the error; nothing committed is lost and
// the next sync goes on from the same cursor.
func TestSync_MalformedLogAndManifest(t *testing.T) {
	ctx := context.Background()
	t.Run("events page", func(t *testing.T) {
		em := mustEmulator(t)
		sub, permits, parcels := seedTwo(t, em)
		r := mustOpen(t, em, sub, "", fastRetries)
		mustSync(t, r)
		cursor := mustStatus(t, r).Cursor
		_, err := em.Publish(ctx, "ds_permits", permits(1))
		must(t, err)
		_, err = em.Publish(ctx, "ds_parcels", parcels(1))
		must(t, err)
		em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultCorrupt})
		_, err = r.Sync(ctx)
		// Named once: "read events sub_1 after …", not "read events of
		// sub_1: read events sub_1 after …" (errwords_test.go holds every
		// sync error to that).
		if !errors.Is(err, fetch.ErrMalformed) || !strings.Contains(err.Error(), "read events "+sub+" after "+cursor) ||
			strings.Count(err.Error(), "read events") != 1 ||
			!strings.Contains(err.Error(), "/events: malformed response: invalid character") {
			t.Fatalf("sync over a corrupt events page: %v", err)
		}
		if got := mustStatus(t, r).Cursor; got != cursor {
			t.Fatalf("cursor moved from %q to %q", cursor, got)
		}
		assertMatchesTruth(t, r, em, "ds_permits", 1)
		assertMatchesTruth(t, r, em, "ds_parcels", 1)
		mustSync(t, r)
		assertMatchesTruth(t, r, em, "ds_permits", 2)
		assertMatchesTruth(t, r, em, "ds_parcels", 2)
	})
	t.Run("manifest", func(t *testing.T) {
		em := mustEmulator(t)
		sub, _, _ := seedTwo(t, em)
		r := mustOpen(t, em, sub, "", fastRetries)
		em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/manifest", Kind: emulator.FaultTruncate})
		_, err := r.Sync(ctx)
		if !errors.Is(err, fetch.ErrMalformed) || !strings.Contains(err.Error(), "get manifest "+sub) ||
			!strings.Contains(err.Error(), "malformed response: unexpected end of JSON input") {
			t.Fatalf("sync over a truncated manifest: %v", err)
		}
		if st := mustStatus(t, r); st.Cursor != "" || len(st.Datasets) != 0 {
			t.Fatalf("after a bad manifest: cursor %q, %d datasets", st.Cursor, len(st.Datasets))
		}
		mustSync(t, r)
		assertMatchesTruth(t, r, em, "ds_permits", 1)
		assertMatchesTruth(t, r, em, "ds_parcels", 1)
	})
}

func mustStatus(tb testing.TB, r *Replica) *Status {
	tb.Helper()
	st, err := r.Status(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// Bad input during the bootstrap: the dataset has no good version to keep;
// it fails with the reason, holds no table, the other dataset loads, and
// the next sync loads it once its snapshot is good.
func TestSync_BadInputAtBootstrap(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	must(t, em.SpoilFileQuery(ctx, "ds_permits", 1, "snapshot", 0,
		"SELECT * FROM original UNION ALL (SELECT * FROM original ORDER BY _ploti_record_id LIMIT 2)"))
	r := mustOpen(t, em, sub, "", fastRetries)
	res, err := r.Sync(ctx)
	if !errors.Is(err, ErrPartial) || len(res.Failed) != 1 || res.Failed[0] != "ds_permits" || res.SnapshotsLoaded != 1 {
		t.Fatalf("bootstrap with a bad snapshot: %v, %+v", err, res)
	}
	d := datasetRow(t, r, "ds_permits")
	if d.Status != storage.StatusFailed || d.Version != 0 ||
		!strings.Contains(d.StatusReason, "ds_permits-v1-snapshot-0.parquet: snapshot has 0 null and 2 duplicate _ploti_record_id values") {
		t.Fatalf("ds_permits after a bad bootstrap: %s v%d %q", d.Status, d.Version, d.StatusReason)
	}
	var tables int
	must(t, r.DB().QueryRow("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", d.Table).Scan(&tables))
	if tables != 0 {
		t.Fatalf("a table %s was left for a dataset that never loaded", d.Table)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	// Status says what the file holds of it: nothing yet, not "the last
	// good version stays" (there is none).
	st, err := r.Status(ctx)
	must(t, err)
	for _, ds := range st.Datasets {
		if ds.DatasetID == "ds_permits" && (strings.Contains(ds.Detail, "last good version") || !strings.Contains(ds.Detail, "no version loaded yet")) {
			t.Fatalf("status of a dataset that never loaded: %q", ds.Detail)
		}
	}
	must(t, em.RestoreFiles("ds_permits", 1))
	if res := mustSync(t, r); res.SnapshotsLoaded != 1 {
		t.Fatalf("the repair loaded %d snapshots, want 1", res.SnapshotsLoaded)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
}

// A merge that fails in the page's shared transaction makes the walk apply
// the rest of the page again (docs/decisions.md 8). What the page committed
// before it (here a failure and a snapshot load, which commits on its own)
// must still be counted and reported.
func TestSync_PageRetryKeepsWhatCommittedBefore(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", fastRetries)
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	// ds_parcels v2: its version answer is cut short, so it fails.
	em.Inject(emulator.Fault{Match: "GET /v1/feeds/datasets/ds_parcels/versions/2", Kind: emulator.FaultTruncate, Count: -1})
	// ds_permits v2: a resync (a load in its own transaction), then v3: a
	// changes file with a repeated id, refused in the shared transaction.
	must(t, em.ReRelease("ds_permits", 1))
	_, err = em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	must(t, em.SpoilFileQuery(ctx, "ds_permits", 3, "changes", 0,
		"SELECT * FROM original UNION ALL (SELECT * FROM original ORDER BY _ploti_record_id LIMIT 1)"))

	res, err := r.Sync(ctx)
	if !errors.Is(err, ErrPartial) {
		t.Fatalf("sync: %v, want ErrPartial", err)
	}
	slices.Sort(res.Failed)
	if got := strings.Join(res.Failed, ","); got != "ds_parcels,ds_permits" {
		t.Fatalf("failed %q, want ds_parcels,ds_permits (%+v)", got, res)
	}
	if res.SnapshotsLoaded != 1 || res.ChangesMerged != 0 {
		t.Fatalf("loaded %d, merged %d; want the v2 load counted once and no merge (%+v)", res.SnapshotsLoaded, res.ChangesMerged, res)
	}
	if d := datasetRow(t, r, "ds_parcels"); d.Status != storage.StatusFailed || d.Version != 1 {
		t.Fatalf("ds_parcels: %s v%d, want failed at v1", d.Status, d.Version)
	}
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusFailed || d.Version != 2 ||
		!strings.Contains(d.StatusReason, "ds_permits-v3-changes-0.parquet") || !strings.Contains(d.StatusReason, "duplicate _ploti_record_id") {
		t.Fatalf("ds_permits: %s v%d %q; want failed at v2 (the load before the bad merge), naming the file", d.Status, d.Version, d.StatusReason)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
}

// docs/design.md, "Errors and logging": "Return errors with %w context naming
// the dataset, version and event". A reload outside the walk (a release, a
// repair) knows the version it loads: its failure names it, in the error
// and in the dataset's reason, and the last good version and the hold stay.
func TestRelease_BadInputNamesTheVersion(t *testing.T) {
	ctx := context.Background()
	em, r, rel := heldWithASpoiledSnapshot(t)
	err := r.Release(ctx, "ds_permits")
	want := "load ds_permits v" + itoa(rel.Version) + ": "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("release of a bad snapshot: %v; want an error naming %q", err, want)
	}
	if d := datasetRow(t, r, "ds_permits"); !strings.Contains(d.LastError, want) || d.Version != 1 {
		t.Fatalf("after the failed release: v%d, last error %q; want v1 and a reason naming %q", d.Version, d.LastError, want)
	}
	if hs := holdsOf(t, r, "ds_permits"); len(hs) != 1 || hs[0].Kind != storage.HoldLocal {
		t.Fatalf("the review hold should stay after a failed release: %+v", hs)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
}

// A repair that holds its dataset for review instead of loading it (a
// failed release of a MAJOR change: decision 6, "reloads never slip a
// MAJOR change past review") loads no snapshot, and the sync's result
// says none was loaded.
func TestSync_RepairThatHoldsCountsNoSnapshot(t *testing.T) {
	ctx := context.Background()
	_, r, _ := heldWithASpoiledSnapshot(t)
	if err := r.Release(ctx, "ds_permits"); err == nil {
		t.Fatal("release of a bad snapshot succeeded")
	}
	res := mustSync(t, r) // the repair holds ds_permits again
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusHeld || d.Version != 1 {
		t.Fatalf("after the repair: %s v%d, want held at v1", d.Status, d.Version)
	}
	if res.SnapshotsLoaded != 0 {
		t.Fatalf("the repair held the dataset and loaded nothing, but the sync reports %d snapshot(s) loaded", res.SnapshotsLoaded)
	}
}

// heldWithASpoiledSnapshot is a replica holding ds_permits at v1 for
// review of a MAJOR change (rel), whose snapshot is then cut in half: a
// release of it fails on bad input.
func heldWithASpoiledSnapshot(t *testing.T) (*emulator.Emulator, *Replica, emulator.Release) {
	t.Helper()
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", fastRetries)
	mustSync(t, r)
	cols, rows := droppingFinal(permits(1))
	rel, err := em.Publish(ctx, "ds_permits", rows, emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	mustSync(t, r)
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusHeld {
		t.Fatalf("after the MAJOR change: %s, want held", d.Status)
	}
	must(t, em.SpoilFile(ctx, "ds_permits", rel.Version, "snapshot", 0, truncateHalf))
	return em, r, rel
}

// versionRewriter is a proxy in front of the emulator whose answers for
// ds_permits's versions rewrite can change: a server that sends what the
// docs say it never does.
func versionRewriter(tb testing.TB, em *emulator.Emulator, rewrite func(v map[string]any)) string {
	tb.Helper()
	return answerRewriter(tb, em, func(path string) bool { return strings.Contains(path, "/datasets/ds_permits/versions/") }, rewrite)
}

// answerRewriter is a proxy in front of the emulator whose 200 answers to
// the paths match takes rewrite can change, as decoded JSON objects.
func answerRewriter(tb testing.TB, em *emulator.Emulator, match func(path string) bool, rewrite func(v map[string]any)) string {
	tb.Helper()
	target, err := url.Parse(em.URL())
	must(tb, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !match(resp.Request.URL.Path) || resp.StatusCode != http.StatusOK {
			return nil
		}
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return err
		}
		rewrite(v)
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// Invariant 4 and docs/wire.md 5 ("_ploti_record_id ... unique in a
// version"): a version whose changes files (its parts) list the same
// record ids is bad input, as a changes file whose ids repeat is. Each
// merge checked only its own file, so the ids were merged twice and
// logged twice in _ploti.changes; now the dataset fails, keeps its last
// good version, and the other dataset goes on.
func TestSync_ChangesPartsRepeatingIDs(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	var split atomic.Bool
	proxied := versionRewriter(t, em, func(v map[string]any) {
		files, _ := v["files"].(map[string]any)
		if ch, ok := files["changes"].([]any); ok && len(ch) == 1 && split.Load() {
			files["changes"] = []any{ch[0], ch[0]} // every id in both parts
		}
	})
	r := mustOpen(t, em, sub, "", fastRetries, func(o *Options) { o.APIURL = proxied })
	mustSync(t, r)
	// Only changed rows: merged twice, they raise nothing on their own.
	rows := permits(0)
	for _, row := range rows {
		row["valuation"] = "7.77"
	}
	_, err := em.Publish(ctx, "ds_permits", rows)
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	split.Store(true)

	res, err := r.Sync(ctx)
	if !errors.Is(err, ErrPartial) || len(res.Failed) != 1 || res.Failed[0] != "ds_permits" {
		t.Fatalf("sync with repeated ids across changes parts: %v, failed %v; want ErrPartial naming ds_permits", err, res.Failed)
	}
	assertFailed(t, r, "ds_permits-v2-changes-0.parquet, ds_permits-v2-changes-1.parquet", "in more than one file")
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	assertMatchesTruth(t, r, em, "ds_parcels", 2)
	var logged int
	must(t, r.DB().QueryRowContext(ctx, "SELECT count(*) FROM _ploti.changes WHERE dataset_id = 'ds_permits' AND version = 2").Scan(&logged))
	if logged != 0 {
		t.Fatalf("_ploti.changes logged %d changes of the refused version", logged)
	}
}

// A dataset whose version fails (a corrupt changes file) and which a later
// event of the same sync brings to a version ends the sync current: the
// sync is not partial (nothing waits for the next one to retry), and the
// failed event is still counted.
func TestSync_FailedThenRecoveredInOneSyncIsNotPartial(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", fastRetries)
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	rel, err := em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	em.Inject(emulator.Fault{Match: fileMatch(t, em, "ds_permits", 2, "*.parquet"), Kind: emulator.FaultCorrupt, Count: -1})
	res, err := r.Sync(ctx)
	d := datasetRow(t, r, "ds_permits")
	if d.Status != storage.StatusCurrent || d.Version != rel.Version {
		t.Fatalf("the version after the bad one did not bring ds_permits current: %s v%d", d.Status, d.Version)
	}
	if err != nil || len(res.Failed) != 0 || res.EventsFailed != 1 {
		t.Fatalf("sync that failed ds_permits v2 and then loaded v%d: %v, failed %v, %d event(s) failed; want no error, none failed, 1 event failed",
			rel.Version, err, res.Failed, res.EventsFailed)
	}
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
}
