package fetch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// LongWaitFunc is called before the client waits d (a Retry-After or a
// backoff between tries) when d is at least Options.LongWait. It may give
// up what the caller holds for the wait (a file other processes want) and
// return resume, which the client calls once the wait is over (or cut
// short) to take it back; resume's error ends the call. A non-nil err
// ends the call at once instead of waiting: the caller would rather try
// later itself (a read ahead inside an open transaction).
type LongWaitFunc func(ctx context.Context, d time.Duration) (resume func(context.Context) error, err error)

// waitScope is what a context tells the client about its waits: the
// Retry-After waited so far by the calls sharing it, and the long-wait hook.
type waitScope struct {
	spent  *atomic.Int64 // nanoseconds of Retry-After waited
	onLong LongWaitFunc
}

type scopeKey struct{}

// WithWaitBudget returns a context whose calls share one Retry-After
// budget (Options.RetryAfterBudget): a sync passes one to all its calls,
// so that what it waits on Retry-After, summed, is bounded. Without it,
// each call has a budget of its own. A long-wait hook of ctx stays.
func WithWaitBudget(ctx context.Context) context.Context {
	s := scopeOf(ctx)
	s.spent = new(atomic.Int64)
	return context.WithValue(ctx, scopeKey{}, s)
}

// WithLongWait returns a context whose calls call f before a wait of
// Options.LongWait or more between tries (nil: no hook). The Retry-After
// budget of ctx stays shared.
func WithLongWait(ctx context.Context, f LongWaitFunc) context.Context {
	s := scopeOf(ctx)
	s.onLong = f
	return context.WithValue(ctx, scopeKey{}, s)
}

func scopeOf(ctx context.Context) waitScope {
	s, _ := ctx.Value(scopeKey{}).(waitScope)
	return s
}

// withBudget gives ctx a budget of its own when it has none: the one of a
// single call's (or download's) tries.
func withBudget(ctx context.Context) context.Context {
	if scopeOf(ctx).spent != nil {
		return ctx
	}
	return WithWaitBudget(ctx)
}

// ErrRetryBudget is a Retry-After past the budget (RetryBudgetError).
var ErrRetryBudget = errors.New("Retry-After past the budget")

// RetryBudgetError is a Retry-After past what is left of the budget
// (Options.RetryAfterBudget): the call ended without waiting. It wraps
// ErrRateLimited, whatever the answer's status (429, or a 503 with
// Retry-After), and the answer's error; it is not transient.
type RetryBudgetError struct {
	At     time.Time     // when Ploti asked to come back
	Budget time.Duration // the Retry-After waits allowed
	Err    error         // the answer's error
}

func (e *RetryBudgetError) Error() string {
	return fmt.Sprintf("%s; Ploti asked to come back at %s, past the %s of Retry-After waits allowed",
		e.Err, e.At.UTC().Format(time.RFC3339), e.Budget)
}

func (e *RetryBudgetError) Is(target error) bool {
	return target == ErrRateLimited || target == ErrRetryBudget
}
func (e *RetryBudgetError) Unwrap() error { return e.Err }

// pause waits wait before the next try after err, through c.sleep: it
// refuses a Retry-After past the budget left, and calls the context's
// long-wait hook before a long wait. Its error, which wraps err, ends the
// call.
func (c *Client) pause(ctx context.Context, err error, wait time.Duration) error {
	spend, berr := c.retryAfterBudget(ctx, err)
	if berr != nil {
		return berr
	}
	var resume func(context.Context) error
	if s := scopeOf(ctx); s.onLong != nil && wait >= c.longWait {
		var lerr error
		if resume, lerr = s.onLong(ctx, wait); lerr != nil {
			return fmt.Errorf("%w (not waiting %s to retry: %w)", err, wait, lerr)
		}
	}
	spend()
	serr := c.sleep(ctx, wait)
	if resume != nil {
		// Taken back even when ctx ended: the caller still has to
		// record how it ended.
		if rerr := resume(context.WithoutCancel(ctx)); rerr != nil {
			return fmt.Errorf("%w (after waiting to retry: %w)", err, rerr)
		}
	}
	if serr != nil {
		return fmt.Errorf("%w (waiting to retry: %w)", err, serr)
	}
	return nil
}

// retryAfterBudget refuses err's Retry-After when it is past what is
// left of the context's budget; otherwise spend counts it, once waited.
func (c *Client) retryAfterBudget(ctx context.Context, err error) (spend func(), _ error) {
	var ae *APIError
	if !errors.As(err, &ae) || ae.RetryAfter <= 0 {
		return func() {}, nil
	}
	spent := scopeOf(ctx).spent
	if spent == nil {
		spent = new(atomic.Int64)
	}
	want := ae.RetryAt.Sub(c.now())
	if ae.RetryAt.IsZero() {
		want = ae.RetryAfter
	}
	if time.Duration(spent.Load())+want > c.raBudget {
		at := ae.RetryAt
		if at.IsZero() {
			at = c.now().Add(ae.RetryAfter)
		}
		return nil, &RetryBudgetError{At: at, Budget: c.raBudget, Err: err}
	}
	return func() { spent.Add(int64(ae.RetryAfter)) }, nil
}
