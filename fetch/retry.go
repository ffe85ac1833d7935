package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/ploti-replica/ploti-replica/logs"
)

// retry runs fn until it succeeds, fails permanently (IsTransient false),
// the context ends or c.maxAttempts tries are spent; it returns the last
// error. Between tries it waits the answer's Retry-After, the plan wait
// for a 503 plan_unavailable without one, or a jittered exponential
// backoff capped at c.maxWait, through c.pause (the Retry-After budget,
// the context's long-wait hook).
func (c *Client) retry(ctx context.Context, op string, fn func(context.Context) error) error {
	ctx = withBudget(ctx)
	b := c.newBackoff()
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || ctx.Err() != nil || !IsTransient(err) {
			return err
		}
		if attempt >= c.maxAttempts {
			return fmt.Errorf("%w (%s)", err, gaveUp(attempt))
		}
		wait := c.waitFor(err, b)
		c.log.Warn("retry after a transient failure",
			logs.Err(err), slog.String(logOp, op), slog.Int(logAttempt, attempt), logs.Ms(logWait, wait))
		if perr := c.pause(ctx, err, wait); perr != nil {
			return perr
		}
	}
}

// waitFor is how long to wait after err before the next try.
func (c *Client) waitFor(err error, b backoff.BackOff) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.RetryAfter > 0 {
			return ae.RetryAfter
		}
		if ae.Err == ErrPlanUnavailable {
			return c.planWait
		}
	}
	return min(b.NextBackOff(), c.maxWait)
}

// newBackoff is exponential from c.minWait, doubling, ±50% jitter, capped
// at c.maxWait and never giving up on its own (attempts bound the loop).
func (c *Client) newBackoff() backoff.BackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     c.minWait,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         c.maxWait,
		MaxElapsedTime:      0,
		Stop:                backoff.Stop,
		Clock:               clockFunc(c.now),
	}
	b.Reset()
	return b
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// parseRetryAfter reads Retry-After as seconds or an HTTP date, relative
// to now. Absent, unparsable or past values give 0; it caps at
// maxRetryAfter.
func parseRetryAfter(v string, now time.Time) time.Duration {
	at := parseRetryAt(v, now)
	if at.IsZero() {
		return 0
	}
	return max(0, min(at.Sub(now), maxRetryAfter))
}

// maxRetryAt is as far as parseRetryAt reads a Retry-After: a time.Time
// and its Sub stay exact below it.
const maxRetryAt = 100 * 365 * 24 * time.Hour

// parseRetryAt is the time Retry-After names, seconds from now or an HTTP
// date, uncapped (up to maxRetryAt); zero when absent, unparsable or not
// in the future.
func parseRetryAt(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return time.Time{}
		}
		return now.Add(time.Duration(min(n, int64(maxRetryAt/time.Second))) * time.Second)
	}
	t, err := http.ParseTime(v)
	if err != nil || !t.After(now) {
		return time.Time{}
	}
	if t.Sub(now) > maxRetryAt {
		return now.Add(maxRetryAt)
	}
	return t
}

// gaveUp says how many tries a call had before its error stood: "gave up
// after 4 attempts", or, when one try was all it was allowed, "tried once,
// with no retry allowed".
func gaveUp(attempts int) string {
	if attempts == 1 {
		return "tried once, with no retry allowed"
	}
	return fmt.Sprintf("gave up after %d attempts", attempts)
}
