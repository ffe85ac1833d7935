package fetch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
)

// hostile is a proxy in front of the emulator: while its hook is set, the
// hook may answer the API's requests itself (a stall, a Retry-After:
// it returns true); the proxy forwards everything else.
type hostile struct {
	URL   string
	calls atomic.Int32
	mu    sync.Mutex
	hook  func(w http.ResponseWriter, r *http.Request) bool
}

func newHostile(t *testing.T, em *emulator.Emulator) *hostile {
	t.Helper()
	target, err := url.Parse(em.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	h := &hostile{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		h.mu.Lock()
		hook := h.hook
		h.mu.Unlock()
		if hook != nil && strings.HasPrefix(r.URL.Path, "/v1/") && hook(w, r) {
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

func (h *hostile) set(hook func(w http.ResponseWriter, r *http.Request) bool) {
	h.mu.Lock()
	h.hook = hook
	h.mu.Unlock()
}

// retryAfter answers the next n API requests 429 with Retry-After v.
func (h *hostile) retryAfter(v string, n int) {
	var left atomic.Int32
	left.Store(int32(n))
	h.set(func(w http.ResponseWriter, r *http.Request) bool {
		if left.Add(-1) < 0 {
			return false
		}
		w.Header().Set("Retry-After", v)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":{"code":"rate_limited","message":"slow down"}}`))
		return true
	})
}

// stallAfterHeaders sends 200 and its headers, then nothing until the
// client hangs up.
func stallAfterHeaders(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
	return true
}

// stallBeforeHeaders sends nothing at all until the client hangs up.
func stallBeforeHeaders(_ http.ResponseWriter, r *http.Request) bool {
	<-r.Context().Done()
	return true
}

// trickle sends a byte of JSON every 50 ms, never ending it.
func trickle(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("["))
	for {
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return true
		case <-time.After(50 * time.Millisecond):
			w.Write([]byte(" "))
		}
	}
}

func boundedEmulator(t *testing.T) (*emulator.Emulator, string) {
	t.Helper()
	em, err := emulator.New(emulator.Options{Dir: t.TempDir(), NoRateLimit: true})
	if err != nil {
		t.Fatalf("emulator.New: %v", err)
	}
	if err := em.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { em.Close() })
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	if err != nil {
		t.Fatalf("CreateSubscription: %v", err)
	}
	return em, sub
}

// TestClient_APIAnswerTimeouts: an API answer that stalls after its
// headers, before them, or trickles a byte at a time forever ends each try
// at the idle or total limit, is retried within the attempts, and ends the
// call with an error that names the request and the limit.
func TestClient_APIAnswerTimeouts(t *testing.T) {
	em, sub := boundedEmulator(t)
	h := newHostile(t, em)
	c, err := fetch.New(fetch.Options{BaseURL: h.URL, APIKey: em.APIKey(), DisableRateLimit: true,
		APIIdleTimeout: 200 * time.Millisecond, APITotalTimeout: 700 * time.Millisecond,
		MaxAttempts: 2, RetryMinWait: 10 * time.Millisecond, RetryMaxWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Subscription(ctx, sub); err != nil {
		t.Fatalf("through the proxy, untouched: %v", err)
	}
	for _, tt := range []struct {
		name  string
		hook  func(http.ResponseWriter, *http.Request) bool
		want  error
		words string
	}{
		{"headers then nothing", stallAfterHeaders, fetch.ErrIdleTimeout, "no byte for 200ms"},
		{"nothing", stallBeforeHeaders, fetch.ErrIdleTimeout, "no byte for 200ms"},
		{"a byte at a time", trickle, fetch.ErrTotalTimeout, "no whole answer in 700ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.set(tt.hook)
			before := h.calls.Load()
			start := time.Now()
			_, err := c.Subscription(ctx, sub)
			el := time.Since(start)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.words) ||
				!strings.Contains(err.Error(), "GET /v1/feeds/subscriptions/"+sub) {
				t.Fatalf("err = %v, want %v naming the request and %q", err, tt.want, tt.words)
			}
			if got := h.calls.Load() - before; got != 2 {
				t.Errorf("%d tries, want 2 (a timeout is retried within the attempts)", got)
			}
			if el > 3*time.Second {
				t.Errorf("took %v, want about two tries' limits", el)
			}
		})
	}
}

// TestClient_RetryAfterBudget: a Retry-After past the budget ends the call
// at once, wrapping ErrRateLimited, not transient, and saying when Ploti
// asked to come back; the calls of one WithWaitBudget context share the
// budget.
func TestClient_RetryAfterBudget(t *testing.T) {
	em, sub := boundedEmulator(t)
	h := newHostile(t, em)
	var waits []time.Duration
	c, err := fetch.New(fetch.Options{BaseURL: h.URL, APIKey: em.APIKey(), DisableRateLimit: true,
		RetryAfterBudget: 90 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error {
			waits = append(waits, d)
			return ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	retryAfter := h.retryAfter
	retryAfter("315360000", 1) // ten years
	before := h.calls.Load()
	start := time.Now()
	_, err = c.Subscription(context.Background(), sub)
	var rb *fetch.RetryBudgetError
	if !errors.Is(err, fetch.ErrRateLimited) || !errors.As(err, &rb) || fetch.IsTransient(err) {
		t.Fatalf("err = %v, want a RetryBudgetError wrapping ErrRateLimited, not transient", err)
	}
	if rb.At.Before(time.Now().AddDate(9, 0, 0)) || !strings.Contains(err.Error(), "come back at "+rb.At.UTC().Format(time.RFC3339)) {
		t.Fatalf("err = %v: want the time ten years on", err)
	}
	if got := h.calls.Load() - before; got != 1 || len(waits) != 0 || time.Since(start) > 5*time.Second {
		t.Fatalf("%d calls, waits %v: want one call and no wait", got, waits)
	}

	// Two calls sharing a budget: 60 s waited by the first, the second's
	// 60 s is past the 90 s.
	ctx := fetch.WithWaitBudget(context.Background())
	retryAfter("60", 1)
	if _, err := c.Subscription(ctx, sub); err != nil {
		t.Fatalf("first call, one wait of 60s: %v", err)
	}
	retryAfter("60", 1)
	if _, err := c.Subscription(ctx, sub); !errors.As(err, &rb) {
		t.Fatalf("second call of the budget: err = %v, want RetryBudgetError", err)
	}
	if len(waits) != 1 || waits[0] != time.Minute {
		t.Fatalf("waits = %v, want [1m0s]", waits)
	}
	// A call without the shared context has a budget of its own.
	retryAfter("60", 1)
	if _, err := c.Subscription(context.Background(), sub); err != nil {
		t.Fatalf("a call of its own: %v", err)
	}
}

// TestClient_LongWaitHook: before a wait of Options.LongWait or more the
// context's hook is called, and its resume after the wait; a hook that
// refuses ends the call without waiting; a short wait calls no hook.
func TestClient_LongWaitHook(t *testing.T) {
	em, sub := boundedEmulator(t)
	h := newHostile(t, em)
	var steps []string
	c, err := fetch.New(fetch.Options{BaseURL: h.URL, APIKey: em.APIKey(), DisableRateLimit: true,
		LongWait: 2 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error {
			steps = append(steps, "sleep "+d.String())
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	once := func(v string) {
		var done atomic.Bool
		h.set(func(w http.ResponseWriter, r *http.Request) bool {
			if done.Swap(true) {
				return false
			}
			w.Header().Set("Retry-After", v)
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		})
	}
	refuse := false
	ctx := fetch.WithLongWait(context.Background(), func(ctx context.Context, d time.Duration) (func(context.Context) error, error) {
		steps = append(steps, "release "+d.String())
		if refuse {
			return nil, errors.New("inside a transaction")
		}
		return func(context.Context) error { steps = append(steps, "resume"); return nil }, nil
	})
	once("3")
	if _, err := c.Subscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	once("1")
	if _, err := c.Subscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	want := "release 3s,sleep 3s,resume,sleep 1s"
	if got := strings.Join(steps, ","); got != want {
		t.Fatalf("steps %s, want %s", got, want)
	}
	steps, refuse = nil, true
	once("3")
	_, err = c.Subscription(ctx, sub)
	if !errors.Is(err, fetch.ErrRateLimited) || !strings.Contains(err.Error(), "inside a transaction") {
		t.Fatalf("err = %v, want the 429 and the hook's refusal", err)
	}
	if got := strings.Join(steps, ","); got != "release 3s" {
		t.Fatalf("steps %s, want the hook alone, no wait", got)
	}
}
