package fetch

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// fakeClock is a clock whose Sleep advances it and records the wait.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, d)
	f.t = f.t.Add(d)
	return nil
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func (f *fakeClock) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.waits
	f.waits = nil
	return w
}

func TestLimiter_Wait(t *testing.T) {
	ctx := context.Background()
	t.Run("overall bucket", func(t *testing.T) {
		clk := newFakeClock()
		l := newLimiter(60, 12, clk.Now, clk.Sleep) // 1/s, burst 10
		for i := 0; i < 10; i++ {
			if err := l.wait(ctx, false); err != nil {
				t.Fatal(err)
			}
		}
		if w := clk.Waits(); len(w) != 0 {
			t.Fatalf("the burst waited: %v", w)
		}
		l.wait(ctx, false)
		l.wait(ctx, false)
		if got, want := clk.Waits(), []time.Duration{time.Second, time.Second}; !reflect.DeepEqual(got, want) {
			t.Fatalf("waits = %v, want %v", got, want)
		}
		clk.Advance(3 * time.Second) // three tokens come back
		for i := 0; i < 3; i++ {
			l.wait(ctx, false)
		}
		if w := clk.Waits(); len(w) != 0 {
			t.Fatalf("refilled tokens waited: %v", w)
		}
	})
	t.Run("heavy bucket", func(t *testing.T) {
		clk := newFakeClock()
		l := newLimiter(120, 12, clk.Now, clk.Sleep) // heavy: 0.2/s, burst 2
		for i := 0; i < 4; i++ {
			l.wait(ctx, true)
		}
		if got, want := clk.Waits(), []time.Duration{5 * time.Second, 5 * time.Second}; !reflect.DeepEqual(got, want) {
			t.Fatalf("waits = %v, want %v", got, want)
		}
		// A light call is not held back by the heavy bucket.
		l.wait(ctx, false)
		if w := clk.Waits(); len(w) != 0 {
			t.Fatalf("a light call waited: %v", w)
		}
	})
	t.Run("cancelled wait gives its token back", func(t *testing.T) {
		clk := newFakeClock()
		l := newLimiter(6, 6, clk.Now, clk.Sleep) // 0.1/s, burst 1
		l.wait(ctx, false)
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := l.wait(done, false); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		l.wait(ctx, false)
		if got, want := clk.Waits(), []time.Duration{10 * time.Second}; !reflect.DeepEqual(got, want) {
			t.Fatalf("waits = %v, want %v (no debt from the cancelled call)", got, want)
		}
	})
}

// TestClient_RateLimit: the limiter sits in the API client's transport and
// waits on the injected clock; file downloads do not count.
func TestClient_RateLimit(t *testing.T) {
	clk := newFakeClock()
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/file" {
			w.Write([]byte("x"))
			return
		}
		writeJSON(w, 200, map[string]any{"subscriptionId": "sub_1", "eventCursor": "c1", "id": "ds_a"})
	})
	c, _ := MustClient(t, srv.URL, func(o *Options) {
		o.DisableRateLimit = false
		o.CallsPerMinute = 120
		o.HeavyCallsPerMinute = 12
		o.Now = clk.Now
		o.Sleep = clk.Sleep
	})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := c.Manifest(ctx, "sub_1", ""); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := clk.Waits(), []time.Duration{5 * time.Second}; !reflect.DeepEqual(got, want) {
		t.Fatalf("manifest waits = %v, want %v", got, want)
	}
	for i := 0; i < 20; i++ {
		if _, err := c.Dataset(ctx, "ds_a"); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		if _, err := c.Download(ctx, ploti.File{URL: srv.URL + "/file"}, "f.bin", nil); err != nil {
			t.Fatal(err)
		}
	}
	// The 5 s wait refilled the overall bucket (burst 20, 2/s) to full:
	// 20 calls pass, the 21st waits for half a second.
	if w := clk.Waits(); len(w) != 0 {
		t.Fatalf("waits = %v, want none", w)
	}
	if _, err := c.Dataset(ctx, "ds_a"); err != nil {
		t.Fatal(err)
	}
	if got, want := clk.Waits(), []time.Duration{500 * time.Millisecond}; !reflect.DeepEqual(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
}

func TestIsHeavy(t *testing.T) {
	tests := []struct {
		method, path string
		want         bool
	}{
		{"GET", "/v1/feeds/subscriptions/sub_1/manifest", true},
		{"GET", "/prefix/v1/feeds/subscriptions/sub_1/manifest", true},
		{"POST", "/v1/feeds/subscriptions", true},
		{"POST", "/v1/feeds/subscriptions/preview", true},
		{"PATCH", "/v1/feeds/subscriptions/sub_1", true},
		{"GET", "/v1/feeds/subscriptions/sub_1", false},
		{"GET", "/v1/feeds/subscriptions/sub_1/events", false},
		{"DELETE", "/v1/feeds/subscriptions/sub_1", false},
		{"GET", "/v1/feeds/datasets/ds_a/versions/7", false},
		{"POST", "/v1/feeds/datasets/ds_a/versions/7/links", false},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, "http://h.test"+tt.path, nil)
		if got := isHeavy(req); got != tt.want {
			t.Errorf("isHeavy(%s %s) = %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}
