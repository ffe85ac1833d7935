package replica

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
)

// syncFault is one way a sync fails, for TestSyncErrors_sayEachThingOnce:
// the words its error must carry, once each.
type syncFault struct {
	name string
	// synced makes a first sync, then publishes a v2 of ds_permits, before
	// the fault; otherwise the fault hits the first sync (the bootstrap).
	synced bool
	fault  func(t *testing.T, em *emulator.Emulator)
	is     error // what the error matches (errors.Is)
	// dataset is the dataset that fails (ErrPartial; its LastError is
	// checked), "" when the sync itself fails.
	dataset string
	// once are words (or ids) the text names exactly once as words, not
	// counting paths and file names that contain them; "{sub}" is the
	// subscription id.
	once []string
	// path is the endpoint's URL path, named exactly once; "{sub}" as in
	// once.
	path string
	says []string // further words the text holds
}

const (
	manifestPath = "/v1/feeds/subscriptions/{sub}/manifest"
	eventsPath   = "/v1/feeds/subscriptions/{sub}/events"
)

var syncFaults = []syncFault{
	{name: "manifest 503 after retries", is: fetch.ErrPlanUnavailable, once: []string{"{sub}", "manifest"}, path: manifestPath, says: []string{"503", "gave up"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.FailNext("GET /v1/feeds/subscriptions/*/manifest", http.StatusServiceUnavailable, 100)
		}},
	{name: "manifest 400", is: fetch.ErrInvalidInput, once: []string{"{sub}", "manifest"}, path: manifestPath, says: []string{"400 invalid_input"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.FailNext("GET /v1/feeds/subscriptions/*/manifest", http.StatusBadRequest, 1)
		}},
	{name: "manifest 404", is: ErrSubscriptionGone, once: []string{"{sub}"}, path: manifestPath, says: []string{"404 not_found", "it was deleted"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.FailNext("GET /v1/feeds/subscriptions/*/manifest", http.StatusNotFound, 1)
		}},
	{name: "manifest connection reset", once: []string{"{sub}", "manifest"}, path: manifestPath, says: []string{"connection reset"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/manifest", Kind: emulator.FaultReset, Count: -1})
		}},
	{name: "events page malformed JSON", synced: true, is: fetch.ErrMalformed, once: []string{"{sub}", "events"}, path: eventsPath, says: []string{"malformed response"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultCorrupt})
		}},
	{name: "events refuse the cursor", synced: true, is: ErrForeignCursor, once: []string{"{sub}", "events"}, path: eventsPath, says: []string{"400 invalid_input", "Replica.Rebootstrap"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.FailNext("GET /v1/feeds/subscriptions/*/events", http.StatusBadRequest, 1)
		}},
	{name: "version answer 503 after retries", synced: true, dataset: "ds_permits", once: []string{"ds_permits", "v2"},
		path: "/v1/feeds/datasets/ds_permits/versions/2", says: []string{"503", "gave up"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.FailNext("GET /v1/feeds/datasets/ds_permits/versions/2", http.StatusServiceUnavailable, 100)
		}},
	{name: "snapshot with a wrong sha256", dataset: "ds_permits", once: []string{"ds_permits", "v1", "ds_permits-v1-snapshot-0.parquet"}, says: []string{"sha256 mismatch"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			em.Inject(emulator.Fault{Match: fileMatch(t, em, "ds_permits", 1, "*.parquet"), Kind: emulator.FaultCorrupt, Count: -1})
		}},
	{name: "truncated Parquet snapshot", dataset: "ds_permits", once: []string{"ds_permits", "v1", "ds_permits-v1-snapshot-0.parquet"}, says: []string{"not a parquet file"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFile(context.Background(), "ds_permits", 1, "snapshot", 0, truncateHalf))
		}},
	{name: "unreadable Parquet footer", dataset: "ds_permits", once: []string{"ds_permits", "v1", "ds_permits-v1-snapshot-0.parquet"}, says: []string{"not a readable Parquet snapshot"},
		fault: func(t *testing.T, em *emulator.Emulator) {
			must(t, em.SpoilFile(context.Background(), "ds_permits", 1, "snapshot", 0, corruptFooter))
		}},
}

// A sync's error names what failed, where (the subscription or dataset,
// the version, the file, the endpoint) once each: every layer (replica,
// apply, storage, fetch) adds only what the layers under it did not say.
func TestSyncErrors_sayEachThingOnce(t *testing.T) {
	for _, tc := range syncFaults {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			em := mustEmulator(t)
			sub, permits, _ := seedTwo(t, em)
			r := mustOpen(t, em, sub, "", fastRetries)
			if tc.synced {
				mustSync(t, r)
				_, err := em.Publish(ctx, "ds_permits", permits(1))
				must(t, err)
			}
			tc.fault(t, em)
			_, err := r.Sync(ctx)
			if err == nil || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("sync = %v, want an error matching %v", err, tc.is)
			}
			assertNoStutter(t, err)
			if tc.dataset != "" {
				if !errors.Is(err, ErrPartial) {
					t.Fatalf("sync = %v, want ErrPartial", err)
				}
				err = errors.New(datasetRow(t, r, tc.dataset).LastError)
				assertNoStutter(t, err)
			}
			assertSaysOnce(t, err.Error(), sub, tc)
		})
	}
}

// A watched dataset's failure and the watches list's name the dataset,
// and the call, once.
func TestWatchErrors_sayEachThingOnce(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	r := mustOpenWatches(t, em, "", fastRetries)
	mustSync(t, r)
	mustPublishRows(t, em, dsWatched, watchRows(1, 30))
	em.Inject(emulator.Fault{Match: "GET /v1/datasets/" + dsWatched, Kind: emulator.FaultStatus, Status: 500, Count: -1})
	if _, err := r.Sync(ctx); !errors.Is(err, ErrPartial) {
		t.Fatalf("sync with the dataset's info failing = %v, want ErrPartial", err)
	}
	text := datasetRow(t, r, dsWatched).LastError
	assertNoStutter(t, errors.New(text))
	assertSaysOnce(t, text, "", syncFault{once: []string{dsWatched}, path: "/v1/datasets/" + dsWatched, says: []string{"500"}})
	em.ClearFaults()
	em.Inject(emulator.Fault{Match: "GET /v1/datasets/watches", Kind: emulator.FaultStatus, Status: 500, Count: -1})
	_, err := r.Sync(ctx)
	if !errors.Is(err, fetch.ErrServer) {
		t.Fatalf("sync with the watches list failing = %v, want fetch.ErrServer", err)
	}
	assertNoStutter(t, err)
	assertSaysOnce(t, err.Error(), "", syncFault{once: []string{"watches"}, path: "/v1/datasets/watches"})
}

// assertSaysOnce checks text against tc's once, path and says.
func assertSaysOnce(tb testing.TB, text, sub string, tc syncFault) {
	tb.Helper()
	for _, w := range tc.once {
		w = strings.ReplaceAll(w, "{sub}", sub)
		if n := len(wordRE(w).FindAllStringIndex(text, -1)); n != 1 {
			tb.Errorf("%q names %s %d times, want once", text, w, n)
		}
	}
	if p := strings.ReplaceAll(tc.path, "{sub}", sub); p != "" && strings.Count(text, p) != 1 {
		tb.Errorf("%q names the endpoint %s %d times, want once", text, p, strings.Count(text, p))
	}
	for _, w := range tc.says {
		if !strings.Contains(text, w) {
			tb.Errorf("%q does not say %q", text, w)
		}
	}
}

// wordRE matches w as a word of its own: not inside a URL path or a file
// name that holds it.
func wordRE(w string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[\s(\["'])` + regexp.QuoteMeta(w) + `($|[\s:;,.)\]"'])`)
}

// assertNoStutter fails when err's text says a group of words twice: any
// sequence of three words, or two parts (between ": ") that open with the
// same two words ("list watches: list watches: GET …").
func assertNoStutter(tb testing.TB, err error) {
	tb.Helper()
	if err == nil {
		return
	}
	if s := stutter(err.Error()); s != "" {
		tb.Errorf("%q says %q twice", err, s)
	}
}

// stutter returns a word group s says twice, or "".
func stutter(s string) string {
	norm := func(w string) string { return strings.ToLower(strings.Trim(w, `:;,.()[]"'`)) }
	var words []string
	for _, w := range strings.Fields(s) {
		if w = norm(w); w != "" {
			words = append(words, w)
		}
	}
	seen := map[string]bool{}
	for i := 0; i+3 <= len(words); i++ {
		g := strings.Join(words[i:i+3], " ")
		if seen[g] {
			return g
		}
		seen[g] = true
	}
	heads := map[string]bool{}
	for _, part := range strings.Split(s, ": ") {
		f := strings.Fields(part)
		if len(f) < 2 {
			continue
		}
		h := norm(f[0]) + " " + norm(f[1])
		if heads[h] {
			return h
		}
		heads[h] = true
	}
	return ""
}

// The helper itself: it must catch the stutters this test was written
// against, and pass their fixed wording.
func TestStutter(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want string
	}{
		{"list watches: list watches: GET /v1/datasets/watches: 500 internal server error", "list watches"},
		{"get manifest of sub_1: get manifest sub_1: GET /v1/feeds/subscriptions/sub_1/manifest: 503 plan_unavailable", "get manifest"},
		{"read events of sub_1 after cursor \"c\": stored cursor does not belong to this subscription (the API never gave it to this subscription)", "to this subscription"},
		{"get manifest sub_1: GET /v1/feeds/subscriptions/sub_1/manifest: 503 plan_unavailable", ""},
	} {
		if got := stutter(tc.s); got != tc.want {
			t.Errorf("stutter(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// Labelling and removing a replica say which of the two failed.
func TestLabelAndRemoveErrors_sayWhatFailed(t *testing.T) {
	ctx := context.Background()
	nowhere := t.TempDir() + "/no/such/folder/replica.duckdb"
	if err := SetLabel(ctx, nowhere, "mine"); err == nil || !strings.HasPrefix(err.Error(), "label the replica in ") {
		t.Fatalf("SetLabel in a missing folder: %v, want an error saying the label failed", err)
	}
	if err := Remove(ctx, "postgres://nobody@/nothing?host=/no/such/socket/dir"); err == nil || !strings.HasPrefix(err.Error(), "remove the replica in ") {
		t.Fatalf("Remove of an unreachable database: %v, want an error saying the removal failed", err)
	}
}
