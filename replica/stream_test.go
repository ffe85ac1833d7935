package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// rangeTap is the replica's HTTP transport in the streamed-load tests: it
// counts the file requests that asked for a range and the 206 answers,
// and, with badSHA, gives every snapshot in an API answer a sha256 that
// its bytes do not have.
type rangeTap struct {
	base http.RoundTripper

	mu      sync.Mutex
	ranged  int // file requests with a Range header
	partial int // 206 answers
	badSHA  bool
}

func (w *rangeTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if req.Header.Get("Range") != "" {
		w.ranged++
	}
	if resp.StatusCode == http.StatusPartialContent {
		w.partial++
	}
	if w.badSHA && !strings.HasPrefix(req.URL.Path, "/files/") && strings.Contains(resp.Header.Get("Content-Type"), "json") {
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		b = spoilSnapshotSHA(b)
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		resp.Header.Del("Content-Length")
	}
	return resp, nil
}

func (w *rangeTap) counts() (ranged, partial int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ranged, w.partial
}

// spoilSnapshotSHA replaces the sha256 of every snapshot file a JSON
// answer lists.
func spoilSnapshotSHA(b []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return b
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if fs, ok := x.([]any); ok && k == "snapshot" {
					for _, f := range fs {
						if m, ok := f.(map[string]any); ok {
							m["sha256"] = strings.Repeat("0", 64)
						}
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// streamSetup is an emulator whose snapshots have row groups of 1,000
// rows, one dataset of 30,000 rows (30 row groups, about 300 KB) in a
// subscription, and a function that publishes its version n.
func streamSetup(t *testing.T) (em *emulator.Emulator, sub string, publish func(n int)) {
	t.Helper()
	onlyInAFile(t, "a snapshot loaded as it downloads (storage.StreamLoader)")
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2, RowGroupRows: 1000})
	must(t, err)
	must(t, em.Start())
	t.Cleanup(func() { em.Close() })
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_big", Title: "Big", PlaceID: "fl-orange", KeyColumns: []string{"k"},
		Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "v", Type: "integer"}, {Name: "note", Type: "string"}}}))
	sub, err = em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	publish = func(n int) {
		t.Helper()
		_, err := em.PublishQuery(context.Background(), "ds_big",
			"SELECT 'k' || i AS k, i * "+strings.Repeat("1", n)+" AS v, repeat('x', i % 50) AS note FROM range(30000) t(i)")
		must(t, err)
	}
	publish(1)
	return em, sub, publish
}

// openStreaming opens a replica that streams any snapshot (StreamMin 1)
// through tap, logging to logs.
func openStreaming(t *testing.T, em *emulator.Emulator, sub string, tap *rangeTap, logs *lockedLog) *Replica {
	return mustOpen(t, em, sub, "", fastRetries, func(o *Options) {
		o.StreamMin = 1
		o.HTTPClient = &http.Client{Transport: tap}
		o.Logger = logs.logger()
	})
}

// streamingAtTwo is a streaming replica that holds ds_big's version 1,
// with version 2 published.
func streamingAtTwo(t *testing.T) (*emulator.Emulator, *Replica, *rangeTap, *lockedLog) {
	t.Helper()
	em, sub, publish := streamSetup(t)
	tap, logs := newTap(), &lockedLog{}
	r := openStreaming(t, em, sub, tap, logs)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_big", 1)
	publish(2)
	return em, r, tap, logs
}

func newTap() *rangeTap {
	return &rangeTap{base: http.DefaultTransport.(*http.Transport).Clone()}
}

// A snapshot loads as it downloads when its link serves byte
// ranges, and whole when it does not (Ploti's documentation does not say
// that signed links serve ranges: "You fetch files yourself with signed
// links from the manifest and from each version"); both load the same
// table, the truth.
func TestStream_rangedAndWholeLoadTheSameTable(t *testing.T) {
	em, sub, _ := streamSetup(t)

	// A slow link (about a second for the file), so that the row groups
	// are read while later ones are still on their way.
	em.SetWire(emulator.Wire{Bandwidth: 300_000})
	tap, logs := newTap(), &lockedLog{}
	r := openStreaming(t, em, sub, tap, logs)
	mustSync(t, r)
	em.SetWire(emulator.Wire{})
	assertMatchesTruth(t, r, em, "ds_big", 1)
	if ranged, partial := tap.counts(); ranged < 2 || partial < 2 {
		t.Fatalf("ranges served: %d requests with a Range, %d answers 206; want the footer's and the body's", ranged, partial)
	}
	if strings.Contains(logs.String(), "snapshot not streamed") || strings.Contains(logs.String(), "rolled back") {
		t.Fatalf("the streamed load fell back:\n%s", logs.String())
	}

	em.SetRanges(false)
	tap2, logs2 := newTap(), &lockedLog{}
	r2 := openStreaming(t, em, sub, tap2, logs2)
	mustSync(t, r2)
	assertMatchesTruth(t, r2, em, "ds_big", 1)
	if ranged, partial := tap2.counts(); ranged != 1 || partial != 0 {
		t.Fatalf("ranges refused: %d requests with a Range, %d answers 206; want the footer's asked once, none served", ranged, partial)
	}
	if !strings.Contains(logs2.String(), "snapshot not streamed") {
		t.Fatalf("no fallback to the whole download logged:\n%s", logs2.String())
	}
}

// docs/design.md: bad input loses nothing, the last good version stays. A
// snapshot whose bytes do not match its sha256 is found out only once the
// stream ends, after its rows were inserted: the load's transaction rolls
// back, the whole download refuses the file, and the table keeps the
// version it held.
func TestStream_wrongSHA256RollsBack(t *testing.T) {
	em, r, tap, logs := streamingAtTwo(t)
	tap.mu.Lock()
	tap.badSHA = true
	tap.mu.Unlock()
	_, err := r.Rebootstrap(context.Background())
	if err == nil {
		t.Fatal("a rebootstrap onto a snapshot that fails its sha256 succeeded")
	}
	if !strings.Contains(logs.String(), "streamed load rolled back") || !strings.Contains(logs.String(), "sha256 mismatch") {
		t.Fatalf("the streamed load did not fail on the sha256:\n%s", logs.String())
	}
	d, derr := r.db.Dataset(context.Background(), "ds_big")
	must(t, derr)
	if d.Version != 1 || d.Status != storage.StatusFailed {
		t.Fatalf("after a refused snapshot: version %d, status %s; want 1, failed", d.Version, d.Status)
	}
	assertMatchesTruth(t, r, em, "ds_big", 1)

	tap.mu.Lock()
	tap.badSHA = false
	tap.mu.Unlock()
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_big", 2)
}

// A body cut off mid-stream is resumed with a Range request and the
// load goes on; a body cut off every time fails the stream, the load
// rolls back (no partial table is committed), and the whole download
// fails too: the dataset fails with nothing loaded, and the next sync
// loads it.
func TestStream_cutMidStream(t *testing.T) {
	em, sub, _ := streamSetup(t)
	snap := fileMatch(t, em, "ds_big", 1, "snapshot*")

	em.Inject(emulator.Fault{Match: snap, Kind: emulator.FaultCutOff, Skip: 1})
	tap, logs := newTap(), &lockedLog{}
	r := openStreaming(t, em, sub, tap, logs)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_big", 1)
	if strings.Contains(logs.String(), "rolled back") || !strings.Contains(logs.String(), "stream again") {
		t.Fatalf("a cut body was not resumed in the stream:\n%s", logs.String())
	}

	em.ClearFaults()
	em.Inject(emulator.Fault{Match: snap, Kind: emulator.FaultCutOff, Skip: 1, Count: -1})
	tap2, logs2 := newTap(), &lockedLog{}
	r2 := openStreaming(t, em, sub, tap2, logs2)
	if _, err := r2.Sync(context.Background()); err == nil {
		t.Fatal("a sync whose snapshot is cut off every time succeeded")
	}
	if !strings.Contains(logs2.String(), "streamed load rolled back") {
		t.Fatalf("the streamed load did not fail:\n%s", logs2.String())
	}
	d, err := r2.db.Dataset(context.Background(), "ds_big")
	must(t, err)
	var tables int
	must(t, r2.DB().QueryRow("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND NOT internal").Scan(&tables))
	if d.Version != 0 || tables != 0 {
		t.Fatalf("a failed streamed load left version %d and %d tables in main", d.Version, tables)
	}
	em.ClearFaults()
	mustSync(t, r2)
	assertMatchesTruth(t, r2, em, "ds_big", 1)
}

// docs/design.md invariant 4 (a row set that violates the key is
// refused) on the streamed path: a snapshot whose record id repeats in a
// row group that arrives last, far from its first, is refused while it
// streams in runs, with a data error naming the file and its count;
// nothing of it is committed, the table keeps the version it held, and
// the next sync loads the good file.
func TestStream_repeatedIDAcrossRunsIsRefused(t *testing.T) {
	em, r, tap, logs := streamingAtTwo(t)
	must(t, em.SpoilFileQuery(context.Background(), "ds_big", 2, "snapshot", 0, "SELECT * FROM original UNION ALL (SELECT * FROM original LIMIT 1)"))
	if _, err := r.Rebootstrap(context.Background()); err == nil {
		t.Fatal("a rebootstrap onto a snapshot with a repeated id succeeded")
	}
	if _, partial := tap.counts(); partial == 0 || !strings.Contains(logs.String(), "streamed load rolled back") {
		t.Fatalf("the snapshot was not refused while it streamed (%d partial answers):\n%s", partial, logs.String())
	}
	d, err := r.db.Dataset(context.Background(), "ds_big")
	must(t, err)
	if d.Version != 1 || d.Status != storage.StatusFailed || !strings.Contains(d.LastError, "0 null and 1 duplicate _ploti_record_id") || !strings.Contains(d.LastError, "snapshot") {
		t.Fatalf("after a snapshot with a repeated id: version %d, status %s, error %q; want 1, failed, the file and the count", d.Version, d.Status, d.LastError)
	}
	assertMatchesTruth(t, r, em, "ds_big", 1)
	must(t, em.RestoreFiles("ds_big", 2))
	if _, err := r.Rebootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertMatchesTruth(t, r, em, "ds_big", 2)
}
