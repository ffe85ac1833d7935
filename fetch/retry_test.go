package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// answer is one scripted server answer.
type answer struct {
	status     int
	code       string
	retryAfter string
	hangUp     bool // close the connection without an answer
}

// scripted answers each request with the next answer, then 200 with a
// dataset once the script is spent.
func scripted(t *testing.T, script []answer) (*recorder, *atomic.Int32) {
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(script) {
			writeJSON(w, 200, map[string]any{"id": "ds_a"})
			return
		}
		a := script[i]
		if a.hangUp {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		if a.code == "" {
			w.WriteHeader(a.status)
			return
		}
		writeError(w, a.status, a.code, "scripted")
	})
	return srv, &n
}

// TestClient_Retry guards docs/wire.md 8.3: 5xx, 429 and connection errors
// are retried with Retry-After or backoff waits; permanent answers never.
func TestClient_Retry(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	backoffWait := func(d time.Duration) bool { return d >= 50*time.Millisecond && d <= 150*time.Millisecond }
	tests := []struct {
		name      string
		script    []answer
		wantErr   error
		wantCalls int
		wantWaits []time.Duration // exact, when set
		checkWait func(time.Duration) bool
	}{
		{name: "500 then ok", script: []answer{{status: 500}}, wantCalls: 2, checkWait: backoffWait},
		{name: "502 twice then ok", script: []answer{{status: 502}, {status: 502}}, wantCalls: 3},
		{name: "hang up then ok", script: []answer{{hangUp: true}}, wantCalls: 2, checkWait: backoffWait},
		{name: "503 retry-after seconds", script: []answer{{status: 503, retryAfter: "7"}}, wantCalls: 2, wantWaits: []time.Duration{7 * time.Second}},
		{name: "429 retry-after seconds", script: []answer{{status: 429, code: "rate_limited", retryAfter: "12"}}, wantCalls: 2, wantWaits: []time.Duration{12 * time.Second}},
		{name: "429 retry-after date", script: []answer{{status: 429, code: "rate_limited", retryAfter: now.Add(30 * time.Second).Format(http.TimeFormat)}}, wantCalls: 2, wantWaits: []time.Duration{30 * time.Second}},
		{name: "503 retry-after date past", script: []answer{{status: 503, retryAfter: now.Add(-time.Minute).Format(http.TimeFormat)}}, wantCalls: 2, checkWait: backoffWait},
		{name: "plan_unavailable waits the plan wait", script: []answer{{status: 503, code: "plan_unavailable"}}, wantCalls: 2, wantWaits: []time.Duration{42 * time.Second}},
		{name: "plan_unavailable honours retry-after", script: []answer{{status: 503, code: "plan_unavailable", retryAfter: "5"}}, wantCalls: 2, wantWaits: []time.Duration{5 * time.Second}},
		{name: "400 not retried", script: []answer{{status: 400, code: "invalid_input"}}, wantErr: ErrInvalidInput, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "401 not retried", script: []answer{{status: 401}}, wantErr: ErrUnauthorized, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "403 not retried", script: []answer{{status: 403}}, wantErr: ErrUnauthorized, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "404 not retried", script: []answer{{status: 404, code: "not_found"}}, wantErr: ErrNotFound, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "409 not retried", script: []answer{{status: 409, code: "not_subscribed"}}, wantErr: ErrNotSubscribed, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "409 busy not retried", script: []answer{{status: 409, code: "busy"}}, wantErr: ErrBusy, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "410 not retried", script: []answer{{status: 410, code: "expired"}}, wantErr: ErrExpired, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "412 not retried", script: []answer{{status: 412, code: "precondition_failed"}}, wantErr: ErrPreconditionFailed, wantCalls: 1, wantWaits: []time.Duration{}},
		{name: "gives up after max attempts", script: []answer{{status: 500}, {status: 500}, {status: 500}, {status: 500}}, wantErr: ErrServer, wantCalls: 4},
		{name: "gives up on 429 after max attempts", script: []answer{{status: 429, retryAfter: "1"}, {status: 429, retryAfter: "2"}, {status: 429, retryAfter: "3"}, {status: 429, retryAfter: "4"}}, wantErr: ErrRateLimited, wantCalls: 4, wantWaits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, calls := scripted(t, tt.script)
			c, sl := MustClient(t, srv.URL, func(o *Options) {
				o.MaxAttempts = 4
				o.PlanUnavailableWait = 42 * time.Second
				o.Now = func() time.Time { return now }
			})
			_, err := c.Dataset(context.Background(), "ds_a")
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if tt.wantCalls > 1 && !strings.Contains(err.Error(), "gave up after 4 attempts") {
					t.Fatalf("err = %q, want it to say it gave up", err)
				}
			}
			if got := int(calls.Load()); got != tt.wantCalls {
				t.Fatalf("calls = %d, want %d", got, tt.wantCalls)
			}
			waits := sl.Waits()
			if got, want := len(waits), tt.wantCalls-1; got != want {
				t.Fatalf("waits = %v, want %d of them", waits, want)
			}
			if tt.wantWaits != nil && len(tt.wantWaits) > 0 && !reflect.DeepEqual(waits, tt.wantWaits) {
				t.Fatalf("waits = %v, want %v", waits, tt.wantWaits)
			}
			for _, w := range waits {
				if tt.checkWait != nil && !tt.checkWait(w) {
					t.Fatalf("wait %v out of the backoff's first step", w)
				}
				if w > time.Minute {
					t.Fatalf("wait %v over any cap", w)
				}
			}
		})
	}
}

// TestClient_RetryCancel: cancelling the context stops a Retry-After wait
// at once, with the real timer.
func TestClient_RetryCancel(t *testing.T) {
	srv, calls := scripted(t, []answer{{status: 429, code: "rate_limited", retryAfter: "3600"}})
	c, _ := MustClient(t, srv.URL, func(o *Options) { o.Sleep, o.RetryAfterBudget = nil, 2*time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Dataset(ctx, "ds_a")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err = %v, want the deadline and the 429", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("cancel took %v", el)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("calls = %d, want 1", got)
	}
	// A context already done makes no call at all.
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c.Dataset(done, "ds_a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("calls = %d after a cancelled call, want 1", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"17", 17 * time.Second},
		{" 3 ", 3 * time.Second},
		{"99999999999999999", maxRetryAfter},
		{"86400", maxRetryAfter},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), maxRetryAfter},
		{"Fri, 20 Nov 2026 10:00:45 GMT", 45 * time.Second},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestClient_Backoff: waits grow, stay jittered within ±50% and are capped.
func TestClient_Backoff(t *testing.T) {
	c, _ := MustClient(t, "http://127.0.0.1:1", func(o *Options) {
		o.RetryMinWait = 100 * time.Millisecond
		o.RetryMaxWait = 2 * time.Second
	})
	b := c.newBackoff()
	step := 100 * time.Millisecond
	for i := 0; i < 12; i++ {
		d := c.waitFor(errors.New("x"), b)
		lo, hi := step/2, min(step*3/2, 2*time.Second)
		if d < lo || d > hi {
			t.Fatalf("wait %d = %v, want within [%v, %v]", i, d, lo, hi)
		}
		step = min(step*2, 2*time.Second)
	}
}

// TestClient_BadCertificate: a certificate the client does not trust is
// not retried.
func TestClient_BadCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": "ds_a"})
	}))
	defer srv.Close()
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	c, sl := MustClient(t, srv.URL)
	if _, err := c.Dataset(context.Background(), "ds_a"); err == nil || IsTransient(err) {
		t.Fatalf("err = %v, want a permanent certificate error", err)
	}
	if w := sl.Waits(); len(w) != 0 {
		t.Fatalf("waits = %v, want none", w)
	}
	// With the server's own client (its certificate trusted) it works.
	ok, _ := MustClient(t, srv.URL, func(o *Options) { o.HTTPClient = srv.Client() })
	if _, err := ok.Dataset(context.Background(), "ds_a"); err != nil {
		t.Fatalf("trusted: %v", err)
	}
}

func TestIsTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{fmt.Errorf("x: %w: %w", errTransport, io.ErrUnexpectedEOF), true},
		{fmt.Errorf("x: %w", ErrStalled), true},
		{fmt.Errorf("x: %w", ErrChecksum), false},
		{&url.Error{Op: "Get", URL: "http://h", Err: errors.New("connection reset by peer")}, true},
		{&url.Error{Op: "Get", URL: "http://h", Err: fmt.Errorf("%w: to h", ErrRedirect)}, false},
		{&APIError{Status: 500, Err: ErrServer}, true},
		{&APIError{Status: 404, Err: ErrNotFound}, false},
		{errors.New("anything else"), false},
	}
	for _, tt := range tests {
		if got := IsTransient(tt.err); got != tt.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// subscriptions-manifest-files.txt: DELETE "answers 409 busy: try again in
// a moment". The client does, after Retry-After or a backoff, and gives
// ErrBusy only once its attempts are spent; other calls never retry a
// 409 (the table above).
func TestClient_DeleteSubscriptionTriesAgainWhileBusy(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	var busyFor atomic.Int32
	busyFor.Store(2)
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete || r.URL.Path != "/v1/feeds/subscriptions/sub_1" {
			writeError(w, 404, "not_found", "no such path")
			return
		}
		if calls.Add(1) <= busyFor.Load() {
			if calls.Load() == 1 {
				w.Header().Set("Retry-After", "3")
			}
			writeError(w, 409, "busy", "the subscription's datasets are changing")
			return
		}
		writeJSON(w, 200, map[string]any{"deleted": true})
	})
	c, s := MustClient(t, srv.URL, func(o *Options) { o.MaxAttempts = 4 })
	if err := c.DeleteSubscription(ctx, "sub_1"); err != nil {
		t.Fatalf("delete after two busy answers: %v", err)
	}
	waits := s.Waits()
	if got, want := calls.Load(), int32(3); got != want {
		t.Fatalf("calls = %d, want %d", got, want)
	}
	if len(waits) != 2 || waits[0] != 3*time.Second || waits[1] <= 0 || waits[1] > time.Second {
		t.Fatalf("waits = %v, want Retry-After's 3s then a backoff", waits)
	}
	calls.Store(0)
	busyFor.Store(100)
	if err := c.DeleteSubscription(ctx, "sub_1"); !errors.Is(err, ErrBusy) || calls.Load() != 4 {
		t.Fatalf("delete while busy throughout: %v after %d calls, want ErrBusy after 4", err, calls.Load())
	}
}
