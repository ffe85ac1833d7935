package replica

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// syncLog collects what Run's OnSync is told, for a test to wait on.
type syncLog struct {
	mu   sync.Mutex
	res  []SyncResult
	errs []error
	ping chan struct{}
}

func newSyncLog() *syncLog { return &syncLog{ping: make(chan struct{}, 100)} }

func (l *syncLog) onSync(res SyncResult, err error) {
	l.mu.Lock()
	l.res, l.errs = append(l.res, res), append(l.errs, err)
	l.mu.Unlock()
	l.ping <- struct{}{}
}

// waitFor waits (20 s at most) until some sync's result satisfies ok.
func (l *syncLog) waitFor(t *testing.T, what string, ok func(SyncResult, error) bool) SyncResult {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		for i, res := range l.res {
			if ok(res, l.errs[i]) {
				l.mu.Unlock()
				return res
			}
		}
		n := len(l.res)
		l.mu.Unlock()
		select {
		case <-l.ping:
		case <-deadline:
			t.Fatalf("no sync %s within 20s (%d syncs)", what, n)
		}
	}
}

func (l *syncLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.res)
}

func movedTo(id string, version int) func(SyncResult, error) bool {
	return func(res SyncResult, err error) bool {
		for _, m := range res.Moves {
			if m.DatasetID == id && m.To == version {
				return err == nil
			}
		}
		return false
	}
}

// runInBackground starts r.Run and returns its cancel and its result.
func runInBackground(r *Replica, ro RunOptions) (context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, ro) }()
	return cancel, done
}

// cancelAndWait cancels Run and fails unless it returns nil within a
// second.
func cancelAndWait(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after the cancel = %v, want nil", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not return within a second of the cancel")
	}
}

// Run keeps the replica current on its interval: a version published
// while it runs is applied without a call, OnSync says what moved, and
// Run returns within a second of the cancel.
func TestRun_keepsCurrentOnItsInterval(t *testing.T) {
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	log := newSyncLog()
	cancel, done := runInBackground(r, RunOptions{Interval: 100 * time.Millisecond, OnSync: log.onSync})
	first := log.waitFor(t, "loading ds_permits v1", movedTo("ds_permits", 1))
	if first.Trigger != TriggerStart || !first.Bootstrapped || first.Behind == nil || *first.Behind != 0 {
		t.Fatalf("first sync: trigger %q, bootstrapped %v, behind %v; want start, a bootstrap, 0 behind", first.Trigger, first.Bootstrapped, first.Behind)
	}
	_, err := em.Publish(context.Background(), "ds_permits", permits(1))
	must(t, err)
	res := log.waitFor(t, "moving ds_permits to v2", movedTo("ds_permits", 2))
	if res.Trigger != TriggerInterval || len(res.Moves) != 1 || res.Moves[0].From != 1 || res.Moves[0].Table == "" {
		t.Fatalf("the sync that applied v2: trigger %q, moves %+v; want the interval's, ds_permits 1 → 2 only", res.Trigger, res.Moves)
	}
	cancelAndWait(t, cancel, done)
	assertMatchesTruth(t, r, em, "ds_permits", 2)
}

// A signal starts a sync at once; with a negative interval nothing else
// does.
func TestRun_signalStartsASync(t *testing.T) {
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	log := newSyncLog()
	signal := make(chan struct{}, 1)
	cancel, done := runInBackground(r, RunOptions{Interval: -1, Signal: signal, OnSync: log.onSync})
	log.waitFor(t, "at start", movedTo("ds_permits", 1))
	_, err := em.Publish(context.Background(), "ds_permits", permits(1))
	must(t, err)
	time.Sleep(300 * time.Millisecond)
	if n := log.count(); n != 1 {
		t.Fatalf("%d syncs with no signal and no interval, want 1 (the first)", n)
	}
	signal <- struct{}{}
	if res := log.waitFor(t, "on the signal", movedTo("ds_permits", 2)); res.Trigger != TriggerSignal {
		t.Fatalf("trigger %q, want %q", res.Trigger, TriggerSignal)
	}
	cancelAndWait(t, cancel, done)
}

// Run stops, with the error, on one no retry can mend: the file
// replicates another subscription.
func TestRun_returnsWhatNoRetryMends(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	path := freshReplica(t)
	r := mustOpen(t, em, sub, path)
	mustSync(t, r)
	must(t, r.Close())
	other, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	r = mustOpen(t, em, other, path)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.Run(ctx, RunOptions{Interval: 10 * time.Millisecond, RetryMin: time.Millisecond}); !errors.Is(err, ErrWrongSubscription) {
		t.Fatalf("Run = %v, want ErrWrongSubscription", err)
	}
}

// "Deleting a subscription stops its events and its webhooks": Run
// retries the first 404 (a proxy's could be passing) and returns
// ErrSubscriptionGone at the second.
func TestRun_subscriptionGoneTwiceEndsRun(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, em.DeleteSubscription(sub))
	log := newSyncLog()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := r.Run(ctx, RunOptions{Interval: time.Hour, RetryMin: time.Millisecond, OnSync: log.onSync})
	if !errors.Is(err, ErrSubscriptionGone) {
		t.Fatalf("Run = %v, want ErrSubscriptionGone", err)
	}
	if n := log.count(); n != subscriptionGoneSyncs {
		t.Fatalf("%d syncs before Run gave up, want %d", n, subscriptionGoneSyncs)
	}
}

// StopSync stops the sync under way at its next commit point, and only
// that one: the next Sync of the same Replica runs to the end.
func TestStopSync_doesNotStopTheNextSync(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	var r *Replica
	stops := 0
	r = mustOpen(t, em, sub, "", func(o *Options) {
		o.SpoolLimit = 1 // one load per transaction
		o.Progress = func(p Progress) {
			if p.Phase == PhaseLoad && stops == 0 {
				stops++
				r.StopSync()
			}
		}
	})
	if _, err := r.Sync(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("first Sync = %v, want ErrStopped", err)
	}
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 1 {
		t.Fatalf("the second Sync loaded %d snapshots, want the 1 the stopped one left", res.SnapshotsLoaded)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 1)
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	r.StopSync() // no sync under way: nothing to stop, nothing kept
	mustSync(t, r)
}

// Every call after Close returns ErrClosed, Run and Sync included; a
// second Close does nothing.
func TestClose_laterCallsReturnErrClosed(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, r.Close())
	ctx := context.Background()
	_, syncErr := r.Sync(ctx)
	_, statusErr := r.Status(ctx)
	_, holdsErr := r.Holds(ctx)
	_, changesErr := r.Changes(ctx, "", ChangesOptions{})
	_, verifyErr := r.Verify(ctx, VerifyOptions{})
	for name, err := range map[string]error{"Sync": syncErr, "Status": statusErr, "Holds": holdsErr, "Changes": changesErr,
		"Verify": verifyErr, "Run": r.Run(ctx, RunOptions{}), "Release": r.Release(ctx, "ds_permits")} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if r.Wants("ds_permits") {
		t.Error("Wants after Close = true")
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// Close during a Run stops the sync and Run returns ErrClosed.
func TestClose_duringRunEndsIt(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	path := freshReplica(t)
	opts := Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, Geometry: testGeometry}
	r, err := Open(context.Background(), path, opts)
	must(t, err)
	log := newSyncLog()
	_, done := runInBackground(r, RunOptions{Interval: 10 * time.Millisecond, OnSync: log.onSync})
	log.waitFor(t, "at start", movedTo("ds_permits", 1))
	must(t, r.Close())
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Run after Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run went on after Close")
	}
}

// SyncResult says per dataset what moved, what failed and why, and what
// is held: here a bootstrap, then a version whose file is spoilt (the
// dataset fails, with the reason) while Ploti holds another's new version.
func TestSyncResult_movesFailuresAndHolds(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	res := mustSync(t, r)
	if len(res.Moves) != 2 || res.Moves[0].DatasetID != "ds_parcels" || res.Moves[0].From != 0 || res.Moves[0].To != 1 ||
		res.Moves[1].DatasetID != "ds_permits" || res.Moves[1].To != 1 {
		t.Fatalf("bootstrap moves %+v, want ds_parcels and ds_permits 0 → 1", res.Moves)
	}
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	must(t, em.SpoilFile(ctx, "ds_permits", 2, "changes", 0, truncateHalf))
	_, err = em.Publish(ctx, "ds_parcels", parcels(1)[:3], emulator.Hold("row_drop"))
	must(t, err)
	res, err = r.Sync(ctx)
	if !errors.Is(err, ErrPartial) {
		t.Fatalf("Sync = %v, want ErrPartial", err)
	}
	if len(res.Moves) != 0 {
		t.Fatalf("moves %+v, want none: the failed dataset keeps v1, the held one too", res.Moves)
	}
	if len(res.Failures) != 1 || res.Failures[0].DatasetID != "ds_permits" || res.Failures[0].Reason == "" || res.Failures[0].Reason == "failed" {
		t.Fatalf("failures %+v, want ds_permits with the file's reason", res.Failures)
	}
	held := false
	for _, h := range res.Holds {
		held = held || h.DatasetID == "ds_parcels" && h.Kind == storage.HoldServer
	}
	if !held {
		t.Fatalf("holds %+v, want Ploti's hold of ds_parcels", res.Holds)
	}
}

// Wants is true for the datasets the file keeps from the feed, every
// dataset when it watches, and nothing after Close.
func TestReplica_wants(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	if !r.Wants("ds_permits") || r.Wants("ds_elsewhere") {
		t.Fatalf("Wants(ds_permits) = %v, Wants(ds_elsewhere) = %v; want true, false", r.Wants("ds_permits"), r.Wants("ds_elsewhere"))
	}
	w := mustOpen(t, em, sub, "", func(o *Options) { o.Watch = true })
	if !w.Wants("ds_elsewhere") {
		t.Fatal("a watching replica does not want a dataset.changed of a dataset it does not hold yet")
	}
}
