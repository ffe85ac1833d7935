package replica

import (
	"context"
	"fmt"
	"sync"
)

// stopSignal is the stop of one walk (a Sync, Rebootstrap, Release or
// Verify): StopSync closes it, and so does Run's shutdown. Each walk
// starts with a fresh one, so a stop never outlives the walk it stopped.
type stopSignal struct {
	ch   chan struct{}
	once sync.Once
}

func newStopSignal() *stopSignal { return &stopSignal{ch: make(chan struct{})} }

func (s *stopSignal) close() { s.once.Do(func() { close(s.ch) }) }

// StopSync asks the walk under way (a Sync, Rebootstrap, Release or
// Verify), if any, to stop at its next commit point: the transaction open
// finishes, nothing new starts, and the call returns ErrStopped. Later
// calls run as usual. It never blocks; with no walk under way it does
// nothing. Cancelling the walk's ctx instead rolls its open transaction
// back.
func (r *Replica) StopSync() {
	if s := r.stop.Load(); s != nil {
		s.close()
	}
}

// live returns ErrClosed once Close has begun.
func (r *Replica) live() error {
	if r.closed.Load() {
		return fmt.Errorf("replica %s: %w", Name(r.db.Path()), ErrClosed)
	}
	return nil
}

// exclusive waits until no other Sync, Rebootstrap, Release or Verify of
// the Replica runs (or ctx is done), and starts the walk's stop signal;
// call the func it returns when done. ErrClosed once Close has begun.
func (r *Replica) exclusive(ctx context.Context) (func(), error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	select {
	case r.busy <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The signal is in place before the check: a Close that begins after
	// the check finds it and stops this walk.
	r.stop.Store(newStopSignal())
	if err := r.live(); err != nil { // closed while this call waited
		r.stop.Store(nil)
		<-r.busy
		return nil, err
	}
	return func() {
		r.stop.Store(nil)
		<-r.busy
	}, nil
}

// stopOn closes the walk's stop signal when ext is closed, until the func
// it returns is called. ext nil: nothing.
func (r *Replica) stopOn(ext <-chan struct{}) func() {
	s := r.stop.Load()
	if ext == nil || s == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ext:
			s.close()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// stopCh is the walk's stop signal's channel (a nil channel, which never
// delivers, outside a walk).
func (r *Replica) stopCh() <-chan struct{} {
	if s := r.stop.Load(); s != nil {
		return s.ch
	}
	return nil
}

// stopped returns ErrStopped once the walk's stop signal is closed. The
// walk checks it only where no transaction is open.
func (r *Replica) stopped() error {
	select {
	case <-r.stopCh():
		return fmt.Errorf("sync %s: %w", r.opts.SubscriptionID, ErrStopped)
	default:
		return nil
	}
}
