package webhook

// Trigger coalesces requests for a sync. Signal never blocks; C delivers at
// most one pending signal. A sync loop that receives from C and then syncs
// runs exactly once more for any number of signals sent while it was
// syncing, and not at all when none were. Create one with NewTrigger; it is
// safe for concurrent use.
type Trigger struct {
	c chan struct{}
}

// NewTrigger returns a Trigger with no signal pending.
func NewTrigger() *Trigger {
	return &Trigger{c: make(chan struct{}, 1)}
}

// Signal asks for one more sync. If one is already pending it does nothing.
// It never blocks.
func (t *Trigger) Signal() {
	select {
	case t.c <- struct{}{}:
	default:
	}
}

// C returns the channel a sync loop receives from. A receive takes the
// pending signal, so signals sent after it ask for another sync.
func (t *Trigger) C() <-chan struct{} {
	return t.c
}
