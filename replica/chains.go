package replica

import (
	"context"
	"sync"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// chainBook follows, for each dataset, the chain of updated events from
// the version held (behind.chain) through the pages the log's reader
// fetches in the background (readLogAhead) while a catch-up loads datasets
// from the manifest: a dataset whose events lay past the pages read before
// the catch-up decided passed only versions that replaced no ids when the
// chain reaches the version the manifest lists. The reader writes it; the
// preparer of such a dataset's load waits for the reader to end (the
// log's end, its budget, a failed read), which takes the limiter's time
// for the pages left, where following the versions back would take a
// call each. The loads of datasets the pages read before chained go first
// and do not wait.
type chainBook struct {
	mu     sync.Mutex
	held   map[string]int // the version each dataset held when the catch-up began
	chains map[string]int // where each dataset's chain stands; -1 broken
	done   chan struct{}  // closed when the reader ends
	once   sync.Once
}

// newChainBook starts a book at the registry's versions and the chains
// the pages read ahead reached.
func newChainBook(reg map[string]*storage.Dataset, ahead map[string]*behind) *chainBook {
	c := &chainBook{held: make(map[string]int, len(reg)), chains: make(map[string]int, len(ahead)), done: make(chan struct{})}
	for id, d := range reg {
		c.held[id] = d.Version
	}
	for id, b := range ahead {
		c.chains[id] = b.chain
	}
	return c
}

// observe follows a page's updated events, as behindOf does.
func (c *chainBook) observe(p *ploti.EventPage) {
	if c == nil || p == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range p.Events {
		if ev.Type != ploti.EventUpdated || ev.Validate() != nil || *ev.Data.Version <= c.held[ev.Data.DatasetID] {
			continue
		}
		id := ev.Data.DatasetID
		chain, ok := c.chains[id]
		if !ok {
			chain = c.held[id]
		}
		b := behind{chain: chain}
		b.follow(ev.Data.PreviousVersion, *ev.Data.Version)
		c.chains[id] = b.chain
	}
}

// finish says the reader has ended.
func (c *chainBook) finish() {
	if c != nil {
		c.once.Do(func() { close(c.done) })
	}
}

// reaches reports whether the dataset's chain stands at version once the
// reader has ended; false when ctx ends first.
func (c *chainBook) reaches(ctx context.Context, datasetID string, version int) bool {
	if c == nil {
		return false
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	chain, ok := c.chains[datasetID]
	return ok && chain == version
}
