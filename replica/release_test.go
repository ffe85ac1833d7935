package replica

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
)

// releasing sets ReleaseWhileWaiting with a long wait of one second.
func releasing(o *Options) {
	o.ReleaseWhileWaiting = true
	o.FetchOptions = func(fo *fetch.Options) { fo.LongWait = time.Second }
}

// eventsRetryAfter makes the n-th events read from now on (1: the next)
// answer 429 with a Retry-After of secs.
func eventsRetryAfter(em *emulator.Emulator, n, secs int) {
	em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultStatus, Status: 429,
		Code: "rate_limited", RetryAfter: secs, Skip: n - 1})
}

// waitingSync is a sync of a file with ReleaseWhileWaiting, under way
// and waiting out a 3 s Retry-After on its events read, with version 2
// of ds_permits to apply.
type waitingSync struct {
	em      *emulator.Emulator
	r       *Replica
	path    string
	sub     string
	parcels func(round int) []emulator.Row
	done    chan error // the sync's end
}

func startWaitingSync(t *testing.T) *waitingSync {
	t.Helper()
	onlyInAFile(t, "giving the file up while waiting")
	w := &waitingSync{em: mustEmulator(t), path: freshReplica(t), done: make(chan error, 1)}
	var permits func(int) []emulator.Row
	w.sub, permits, w.parcels = seedTwo(t, w.em)
	w.r = mustOpen(t, w.em, w.sub, w.path, releasing)
	mustSync(t, w.r)
	_, err := w.em.Publish(context.Background(), "ds_permits", permits(1))
	must(t, err)
	eventsRetryAfter(w.em, 1, 3)
	go func() { _, err := w.r.Sync(context.Background()); w.done <- err }()
	waitHit(t, w.em)
	return w
}

// waitHit waits until the emulator answered a fault.
func waitHit(t *testing.T, em *emulator.Emulator) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for em.FaultHits()[emulator.FaultStatus] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sync never met the 429")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With ReleaseWhileWaiting, a sync waiting out a Retry-After leaves the
// file free: a Reader opens it without waiting; the sync then takes it
// back and ends current.
func TestSync_ReleaseWhileWaiting(t *testing.T) {
	ctx := context.Background()
	w := startWaitingSync(t)
	em, r, path, done := w.em, w.r, w.path, w.done
	rd, err := OpenReader(ctx, path, ReaderOptions{LockTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("open a reader while the sync waits out a Retry-After: %v", err)
	}
	must(t, rd.Close())
	if err := <-done; err != nil {
		t.Fatalf("the sync after the wait: %v", err)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
}

// A writer that changed the file while the sync had given it up makes the
// sync fail when it takes the file back, rather than go on from what it
// read before; the next sync ends current.
func TestSync_ReleaseWhileWaitingRefusesAChangedFile(t *testing.T) {
	ctx := context.Background()
	w := startWaitingSync(t)
	em, r, path, sub, done := w.em, w.r, w.path, w.sub, w.done
	_, err := em.Publish(ctx, "ds_parcels", w.parcels(1))
	must(t, err)
	other, err := Open(ctx, path, Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, Geometry: testGeometry, LockTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("a second writer while the sync waits: %v", err)
	}
	mustSync(t, other)
	must(t, other.Close())
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "another process wrote to it meanwhile") {
		t.Fatalf("the sync after another writer changed the file: %v; want it refused", err)
	}
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", 2)
	assertMatchesTruth(t, r, em, "ds_parcels", 2)
}

// The read ahead runs inside a page's transaction: a Retry-After there is
// not waited out (holding the transaction and the file) but gives the read
// ahead up; the walk reads the page itself after the commit.
func TestSync_ReadAheadGivesUpOnALongWait(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", func(o *Options) {
		o.FetchOptions = func(fo *fetch.Options) { fo.LongWait = time.Second }
	})
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	// The catch-up reads the one page ahead of the walk (the log's
	// last); the next events read is the read ahead of its commit.
	eventsRetryAfter(em, 2, 8)
	start := time.Now()
	mustSync(t, r)
	if hits := em.FaultHits()[emulator.FaultStatus]; hits != 1 {
		t.Fatalf("the 429 was met %d times, want once (by the read ahead)", hits)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the sync took %v: the read ahead waited out the Retry-After inside the page's transaction", el)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 2)
}
