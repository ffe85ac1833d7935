package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WaitLocked calls try until it takes the writer's lock of name, as every
// engine's open waits for it: while try fails with ErrLocked it waits with
// backoff (100 ms doubling to 2 s) up to timeout, tells onLocked once the
// first time, and then gives up in words ("gave up after", or "told not
// to wait" for a negative timeout). Any other error of try ends the wait
// at once.
func WaitLocked(ctx context.Context, name string, timeout time.Duration, onLocked func(msg string), try func() error) error {
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	deadline := time.Now().Add(timeout)
	wait := 100 * time.Millisecond
	told := false
	for {
		err := try()
		if err == nil || !errors.Is(err, ErrLocked) {
			return err
		}
		if !told && onLocked != nil {
			onLocked(err.Error())
			told = true
		}
		left := time.Until(deadline)
		if timeout < 0 {
			return fmt.Errorf("open %s: told not to wait: %w", name, err)
		}
		if left <= 0 {
			return fmt.Errorf("open %s: gave up after %s: %w", name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(wait, left)): // the last try is at the deadline
		}
		if wait *= 2; wait > 2*time.Second {
			wait = 2 * time.Second
		}
	}
}
