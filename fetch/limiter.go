package fetch

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
)

// limiter holds two token buckets: every API call takes a token from all,
// and a heavy call (manifest; subscription create, change, preview) also
// one from heavy. An empty bucket makes the call wait, never fail.
//
// A bucket starts full with a burst of a sixth of its per-minute rate (20
// of 120, 3 of 20, at least 1) and refills continuously, so a steady run
// stays at the rate and a cold start does not overshoot a sliding minute
// by more than the burst; an overshoot is answered 429 and retried.
type limiter struct {
	mu    sync.Mutex
	all   bucket
	heavy bucket
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

type bucket struct {
	perSec float64
	burst  float64
	tokens float64
	last   time.Time
}

func newLimiter(perMin, heavyPerMin int, now func() time.Time, sleep func(context.Context, time.Duration) error) *limiter {
	t := now()
	return &limiter{
		all:   newBucket(perMin, t),
		heavy: newBucket(heavyPerMin, t),
		now:   now,
		sleep: sleep,
	}
}

func newBucket(perMin int, now time.Time) bucket {
	burst := float64(max(1, perMin/6))
	return bucket{perSec: float64(perMin) / 60, burst: burst, tokens: burst, last: now}
}

// take refills the bucket to now, takes one token (possibly going into
// debt) and returns how long until that token exists.
func (b *bucket) take(now time.Time) time.Duration {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(b.burst, b.tokens+el.Seconds()*b.perSec)
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.perSec * float64(time.Second))
}

// wait reserves a call and sleeps until it may go. A cancelled wait gives
// its tokens back.
func (l *limiter) wait(ctx context.Context, heavy bool) error {
	l.mu.Lock()
	now := l.now()
	d := l.all.take(now)
	if heavy {
		d = max(d, l.heavy.take(now))
	}
	l.mu.Unlock()
	if d <= 0 {
		return nil
	}
	if err := l.sleep(ctx, d); err != nil {
		l.mu.Lock()
		l.all.tokens++
		if heavy {
			l.heavy.tokens++
		}
		l.mu.Unlock()
		return err
	}
	return nil
}

// limitTransport is an http.RoundTripper that waits on the limiter before
// each request.
type limitTransport struct {
	base http.RoundTripper
	lim  *limiter
}

// RoundTrip waits for a token, then sends req with the base transport.
func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.lim.wait(req.Context(), isHeavy(req)); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return t.base.RoundTrip(req)
}

// isHeavy reports whether req counts toward the stricter limit: getting a
// manifest, and creating, changing or previewing a subscription.
func isHeavy(req *http.Request) bool {
	p := strings.TrimRight(req.URL.Path, "/")
	const subs = "/v1/feeds/subscriptions"
	switch req.Method {
	case http.MethodGet:
		return strings.HasSuffix(p, "/manifest") && strings.Contains(p, subs+"/")
	case http.MethodPost:
		return strings.HasSuffix(p, subs) || strings.HasSuffix(p, subs+"/preview")
	case http.MethodPatch, http.MethodPut:
		return strings.Contains(p, subs+"/")
	}
	return false
}
