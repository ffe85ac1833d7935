package emulator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// wireFile publishes a version of the test dataset whose snapshot is one
// file of a few hundred KB, and returns its link from the version answer.
func wireFile(t *testing.T, em *Emulator) fileObj {
	t.Helper()
	mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{dsPermits}})
	_, err := em.PublishQuery(context.Background(), dsPermits, `SELECT 'P-' || i AS permit_number, CAST(i AS DECIMAL(14,2)) AS valuation,
		DATE '2026-01-01' AS issued, TIMESTAMP '2026-01-01' AS updated_at, ['x'] AS tags, true AS final, '{}' AS extra,
		'POINT (' || (i % 1000) || ' ' || (hash(i) % 1000) || ')' AS geometry FROM range(20000) t(i)`)
	if err != nil {
		t.Fatalf("PublishQuery: %v", err)
	}
	var v versionBody
	if code := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", &v); code != 200 || len(v.Files.Snapshot) != 1 {
		t.Fatalf("version: %d, %d snapshot files", code, len(v.Files.Snapshot))
	}
	return v.Files.Snapshot[0]
}

// fetchFile downloads a link and checks its bytes against the sha256.
func fetchFile(t *testing.T, f fileObj) {
	resp, err := http.Get(f.URL)
	if err != nil {
		t.Errorf("get file: %v", err)
		return
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != 200 || n != f.Bytes || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
		t.Errorf("file: status %d, %d of %d bytes, err %v, sha256 match %v", resp.StatusCode, n, f.Bytes, err, hex.EncodeToString(h.Sum(nil)) == f.SHA256)
	}
}

func TestWire_offByDefault(t *testing.T) {
	em := mustEmulator(t)
	if got := em.wire.get(); got != (Wire{}) {
		t.Fatalf("a new emulator's wire is %+v, want none (tests run at loopback speed)", got)
	}
}

// The first item: "the API answers with the same latency" as the
// files, and each request waits it.
func TestWire_latencyOnAPIAndFiles(t *testing.T) {
	em := mustEmulator(t)
	f := wireFile(t, em)
	const lat = time.Second // long beside what a busy machine adds to a loopback call
	em.SetWire(Wire{Latency: lat})
	start := time.Now()
	if code := apiGet(t, em, "/v1/topics", nil); code != 200 {
		t.Fatalf("topics: %d", code)
	}
	if el := time.Since(start); el < lat {
		t.Errorf("an API call took %s under a latency of %s", el, lat)
	}
	start = time.Now()
	fetchFile(t, f)
	if el := time.Since(start); el < lat {
		t.Errorf("a file took %s under a latency of %s", el, lat)
	}
	em.SetWire(Wire{})
	start = time.Now()
	apiGet(t, em, "/v1/topics", nil)
	if el := time.Since(start); el >= lat {
		t.Errorf("with the wire off again an API call took %s", el)
	}
}

// The cap is shared by downloads in flight and exact enough that
// bytes / bandwidth bounds a run: one file takes at least its bytes over
// the cap, two at once at least twice that.
func TestWire_bandwidthIsSharedAndExact(t *testing.T) {
	em := mustEmulator(t)
	f := wireFile(t, em)
	if f.Bytes < 4*wireChunk {
		t.Fatalf("test file of %d bytes is too small to pace", f.Bytes)
	}
	bw := f.Bytes * 4 // a quarter of a second a file
	em.SetWire(Wire{Bandwidth: bw})
	one := time.Duration(float64(f.Bytes) / float64(bw) * float64(time.Second))
	slack := time.Duration(float64(wireChunk) / float64(bw) * float64(time.Second))

	start := time.Now()
	fetchFile(t, f)
	el := time.Since(start)
	if el < one-slack {
		t.Errorf("one file of %d bytes at %d B/s took %s, under its %s", f.Bytes, bw, el, one)
	}
	// Not an upper bound: a busy machine (CI's two cores) slows any
	// transfer; the lower bounds above and below are the cap's own.
	t.Logf("one file of %d bytes at %d B/s took %s (its bytes need %s)", f.Bytes, bw, el, one)

	start = time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { fetchFile(t, f) })
	}
	wg.Wait()
	if el := time.Since(start); el < 2*one-slack {
		t.Errorf("two files at once took %s, under the %s their bytes need at %d B/s: the cap is not shared", el, 2*one, bw)
	}

	// API answers are not capped: at 10 B/s even a small answer would take
	// a minute, far beyond what a busy machine adds.
	em.SetWire(Wire{Bandwidth: 10})
	start = time.Now()
	apiGet(t, em, "/v1/feeds/datasets/"+dsPermits, nil)
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("an API answer took %s at a file cap of 10 B/s: it was paced like a file", el)
	}
}

// Late wake-ups are made up: a writer that asks for each chunk's slot a
// little after the last one ended (Go's timers wake up late) still sends
// the whole run in its bytes over the cap, and a link idle for longer than
// wireIdle starts its schedule again.
func TestWire_lateWakeUpsAreMadeUp(t *testing.T) {
	var s wireState
	const bw = 50_000_000
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now, end := start, start
	const chunks = 1000
	for range chunks {
		end = s.slotAt(now, wireChunk, bw)
		now = end.Add(300 * time.Microsecond) // each wake-up 0.3 ms late
	}
	want := time.Duration(float64(chunks*wireChunk) / bw * float64(time.Second))
	if got := end.Sub(start); got > want+time.Millisecond {
		t.Fatalf("%d chunks of %d bytes at %d B/s, each asked for 0.3 ms late: the link's schedule ends after %s, want %s", chunks, wireChunk, bw, got, want)
	}
	idle := end.Add(time.Second)
	if got := s.slotAt(idle, wireChunk, bw); got.Sub(idle) > time.Millisecond {
		t.Fatalf("after a second idle, the next chunk's slot ends %s later: the idle time was lent to it", got.Sub(idle))
	}
}
