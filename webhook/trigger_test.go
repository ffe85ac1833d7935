package webhook_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/webhook"
)

// wait receives from c or fails after a generous timeout.
func wait(tb testing.TB, c <-chan int, what string) int {
	tb.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		tb.Fatalf("timed out waiting for %s", what)
		return 0
	}
}

// TestTrigger_coalesces runs a sync loop and checks that any number of
// signals sent while a sync runs cause exactly one more sync.
func TestTrigger_coalesces(t *testing.T) {
	tests := []struct {
		name    string
		signals int // sent, concurrently, while the first sync runs
		want    int // syncs in all
	}{
		{name: "none while syncing", signals: 0, want: 1},
		{name: "one while syncing", signals: 1, want: 2},
		{name: "many while syncing", signals: 100, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			trig := webhook.NewTrigger()
			started := make(chan int)   // the loop sends the sync's number
			release := make(chan int)   // the test lets a sync finish
			done := make(chan struct{}) // the loop has returned
			ctx, cancel := context.WithCancel(t.Context())
			syncs := 0
			go func() {
				defer close(done)
				for {
					select {
					case <-ctx.Done():
						return
					case <-trig.C():
						syncs++
						started <- syncs
						<-release
					}
				}
			}()

			trig.Signal()
			if got := wait(t, started, "sync 1"); got != 1 {
				t.Fatalf("sync %d started, want 1", got)
			}
			var wg sync.WaitGroup
			for range tc.signals {
				wg.Go(trig.Signal)
			}
			wg.Wait()
			release <- 1
			if tc.want == 2 {
				if got := wait(t, started, "sync 2"); got != 2 {
					t.Fatalf("sync %d started, want 2", got)
				}
				// Sync 2 took the one pending signal; nothing is left.
				if n := len(trig.C()); n != 0 {
					t.Fatalf("%d signals pending during sync 2, want 0", n)
				}
				release <- 2
			}
			cancel()
			<-done
			if syncs != tc.want {
				t.Fatalf("%d syncs, want %d", syncs, tc.want)
			}
		})
	}
}

// TestTrigger_Signal_neverBlocks signals with nobody receiving.
func TestTrigger_Signal_neverBlocks(t *testing.T) {
	trig := webhook.NewTrigger()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				trig.Signal()
			}
		})
	}
	wg.Wait()
	if got, want := len(trig.C()), 1; got != want {
		t.Fatalf("%d signals pending, want %d", got, want)
	}
	<-trig.C()
	select {
	case <-trig.C():
		t.Fatal("a second signal was pending")
	default:
	}
}

// TestTrigger_handler wires a Handler to a sync loop, as serve does: feed
// events delivered during a sync cause one more sync.
func TestTrigger_handler(t *testing.T) {
	f := mustFixture(t)
	started := make(chan int)
	release := make(chan int)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		defer close(done)
		n := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-f.trig.C():
				n++
				started <- n
				<-release
			}
		}
	}()
	f.serve(t, delivery{id: "msg_0", body: event("evt_0", "feed.dataset.added")}.request(t))
	wait(t, started, "sync 1")
	for i, typ := range []string{"feed.dataset.updated", "ping", "feed.dataset.stale", "dataset.changed"} {
		id := "evt_" + string(rune('a'+i))
		f.serve(t, delivery{id: "msg_" + id, body: event(id, typ)}.request(t))
	}
	release <- 1
	if got := wait(t, started, "sync 2"); got != 2 {
		t.Fatalf("sync %d, want 2", got)
	}
	f.serve(t, delivery{id: "msg_p", body: `{"id":"evt_p2","type":"ping","data":{}}`}.request(t))
	if n := len(f.trig.C()); n != 0 {
		t.Fatalf("a ping left %d signals pending, want 0", n)
	}
	release <- 2
	cancel()
	<-done
}
