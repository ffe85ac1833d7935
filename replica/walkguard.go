package replica

import (
	"fmt"
	"hash/fnv"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// walkGuard stops a walk of the log that would never end: a cursor read
// before in the same sync (a cycle k → k+1 → k, of which "the same
// cursor back" is the shortest), or a page whose events are those of a
// page read before (a log that keeps answering without progress, under
// new cursors). It keeps a cursor and a 64-bit fingerprint a page, so a
// long catch-up costs it little.
type walkGuard struct {
	cursors map[string]bool
	pages   map[uint64]bool
}

// reset forgets what was read: the walk starts again from a fresh
// manifest's cursor, and may read the same pages once more.
func (g *walkGuard) reset() {
	g.cursors, g.pages = map[string]bool{}, map[uint64]bool{}
}

// check takes the page read after cursor, which has events; its error
// names the subscription and the cursors.
func (g *walkGuard) check(subID, cursor string, page *ploti.EventPage) error {
	if g.cursors == nil {
		g.reset()
	}
	g.cursors[cursor] = true
	if page.NextCursor == cursor {
		return fmt.Errorf("read events of %s after cursor %q: a page of %d events gave the same cursor back; stopping rather than reading it forever",
			subID, cursor, len(page.Events))
	}
	if g.cursors[page.NextCursor] {
		return fmt.Errorf("read events of %s after cursor %q: the page's next cursor %q was read before in this sync (the log goes round in a circle); stopping rather than reading it forever",
			subID, cursor, page.NextCursor)
	}
	h := fnv.New64a()
	for _, ev := range page.Events {
		h.Write([]byte(ev.ID))
		h.Write([]byte{0})
	}
	fp := h.Sum64()
	if g.pages[fp] {
		return fmt.Errorf("read events of %s after cursor %q: the page holds the same %d events as a page read before in this sync (the log makes no progress); stopping rather than reading it forever",
			subID, cursor, len(page.Events))
	}
	g.pages[fp] = true
	return nil
}
