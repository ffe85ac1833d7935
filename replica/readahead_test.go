package replica

import (
	"context"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type hookRT struct {
	base http.RoundTripper
	fn   func(*http.Request)
}

func (t hookRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.fn != nil {
		t.fn(req)
	}
	return t.base.RoundTrip(req)
}

// StopSync promises that the transaction under way finishes, and Run
// cancels the sync's ctx only after StopTimeout. The read ahead sits
// between a page's last event and its commit: StopSync called while it waits on
// a slow API must end the read at once and commit the page, before the
// cancel would roll it back (review finding, with its test).
func TestSync_StopDuringReadAheadCommitsThePage(t *testing.T) {
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	var r *Replica
	var armed atomic.Bool
	var events atomic.Int32
	var cancel context.CancelFunc
	rt := hookRT{base: http.DefaultTransport, fn: func(req *http.Request) {
		if !armed.Load() || !strings.HasSuffix(req.URL.Path, "/events") {
			return
		}
		if events.Add(1) == 2 { // the read ahead of the page's commit
			r.StopSync()                                 // shutdown begins (Run: StopSync ...
			time.AfterFunc(300*time.Millisecond, cancel) // ... then cancel after the grace)
			select {                                     // a slow API (or a Retry-After wait)
			case <-req.Context().Done():
			case <-time.After(3 * time.Second):
			}
		}
	}}
	r = mustOpen(t, em, sub, "", func(o *Options) {
		o.HTTPClient = &http.Client{Transport: rt}
	})
	mustSync(t, r)
	_, err := em.Publish(context.Background(), "ds_permits", permits(1))
	must(t, err)
	ctx, c := context.WithCancel(context.Background())
	cancel = c
	defer c()
	armed.Store(true)
	_, err = r.Sync(ctx)
	t.Logf("second sync: %v", err)
	d, derr := r.db.Dataset(context.Background(), "ds_permits")
	must(t, derr)
	if d.Version != 2 {
		t.Fatalf("ds_permits holds v%d after StopSync during the read ahead: the page whose events were all applied before the stop was rolled back (sync: %v)", d.Version, err)
	}
}

// When the sync's last commit fails, SyncResult.Cursor and
// sync_runs.cursor_to name the cursor that is stored, not the one that
// commit would have stored (review finding, with its test).
func TestSync_FailedLastCommitReportsTheStoredCursor(t *testing.T) {
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	var armed atomic.Bool
	var cancel atomic.Pointer[context.CancelFunc]
	r := mustOpen(t, em, sub, "", func(o *Options) {
		o.Now = func() time.Time {
			// Fail the last commit from inside finish (as a signal's
			// cancel, or a failing write, would).
			if armed.Load() && strings.Contains(string(debug.Stack()), "(*Replica).finish(") {
				if c := cancel.Load(); c != nil {
					(*c)()
				}
			}
			return time.Now()
		}
	})
	mustSync(t, r)
	_, err := em.Publish(context.Background(), "ds_permits", permits(1))
	must(t, err)
	ctx, c := context.WithCancel(context.Background())
	defer c()
	cancel.Store(&c)
	armed.Store(true)
	res, err := r.Sync(ctx)
	armed.Store(false)
	if err == nil {
		t.Fatal("sync did not fail")
	}
	st, serr := r.Status(context.Background())
	must(t, serr)
	if res.Cursor != st.Cursor || st.LastRun == nil || st.LastRun.CursorTo != st.Cursor {
		cursorTo := ""
		if st.LastRun != nil {
			cursorTo = st.LastRun.CursorTo
		}
		t.Fatalf("sync failed (%v): SyncResult.Cursor %q, sync_runs.cursor_to %q, stored cursor %q", err, res.Cursor, cursorTo, st.Cursor)
	}
}
