package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// answerClock bounds one try of an API call: it cancels the try's context
// when no byte of the answer came for idle (the wait for the headers
// included) or when the whole answer took longer than total. Both start
// when the request leaves, after the rate limiter's wait (clockTransport),
// so a call waiting its turn is not taken for a stalled one.
type answerClock struct {
	ctx         context.Context
	cancel      context.CancelCauseFunc
	idle, total time.Duration
	mu          sync.Mutex
	idleT       *time.Timer
	totalT      *time.Timer
}

// errIdle and errTotal are the causes an answerClock cancels with.
var (
	errIdle  = errors.New("idle")
	errTotal = errors.New("total")
)

type clockKey struct{}

// newClock makes the clock of one try under ctx; stop it when the try ends.
func (c *Client) newClock(ctx context.Context) *answerClock {
	k := &answerClock{idle: c.apiIdle, total: c.apiTotal}
	k.ctx, k.cancel = context.WithCancelCause(ctx)
	k.ctx = context.WithValue(k.ctx, clockKey{}, k)
	return k
}

// start starts the total timer once and (re)starts the idle one: a
// redirect's request starts it again.
func (k *answerClock) start() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.totalT == nil {
		k.totalT = time.AfterFunc(k.total, func() { k.cancel(errTotal) })
	}
	k.resetIdle()
}

// resetIdle restarts the idle timer: a byte came. Call with k.mu held.
func (k *answerClock) resetIdle() {
	if k.idleT == nil {
		k.idleT = time.AfterFunc(k.idle, func() { k.cancel(errIdle) })
		return
	}
	k.idleT.Reset(k.idle)
}

// reader is r (the answer's body) restarting the idle timer on every read
// that brought bytes.
func (k *answerClock) reader(r io.Reader) io.Reader { return &clockReader{r: r, k: k} }

type clockReader struct {
	r io.Reader
	k *answerClock
}

func (cr *clockReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	if n > 0 {
		cr.k.mu.Lock()
		if cr.k.idleT != nil {
			cr.k.resetIdle()
		}
		cr.k.mu.Unlock()
	}
	return n, err
}

// stop ends the clock and the try's context.
func (k *answerClock) stop() {
	k.mu.Lock()
	if k.idleT != nil {
		k.idleT.Stop()
	}
	if k.totalT != nil {
		k.totalT.Stop()
	}
	k.mu.Unlock()
	k.cancel(nil)
}

// timedOut words err as the clock's timeout when the clock, not the
// caller's context, ended the try: "GET /v1/…: no byte for 30s".
func (k *answerClock) timedOut(op, method, path string, parent context.Context, err error) error {
	if err == nil || parent.Err() != nil {
		return err
	}
	switch context.Cause(k.ctx) {
	case errIdle:
		return fmt.Errorf("%s: %s %s: no byte for %s: %w", op, method, path, k.idle, ErrIdleTimeout)
	case errTotal:
		return fmt.Errorf("%s: %s %s: no whole answer in %s: %w", op, method, path, k.total, ErrTotalTimeout)
	}
	return err
}

// clockTransport starts the clock of the request's try when the request
// leaves (after the rate limiter).
type clockTransport struct{ base http.RoundTripper }

func (t *clockTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if k, ok := req.Context().Value(clockKey{}).(*answerClock); ok {
		k.start()
	}
	return t.base.RoundTrip(req)
}
