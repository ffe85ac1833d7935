package webhook

import (
	"sync"
	"time"
)

// seenSet remembers ids for a window, holding at most max of them: when it
// is full the oldest is forgotten first. It is safe for concurrent use.
type seenSet struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	at     map[string]time.Time
	order  []seenEntry // insertion order; order[head:] is live
	head   int
	log    *seenLog // the file the ids are kept in; nil: memory only (seen_file.go)
}

// seenEntry is one insertion into a seenSet.
type seenEntry struct {
	id string
	at time.Time
}

// newSeenSet returns an empty set; window and max must be positive.
func newSeenSet(window time.Duration, max int) *seenSet {
	return &seenSet{window: window, max: max, at: make(map[string]time.Time)}
}

// add records id at now and reports whether it was new, that is not seen
// within the window before now.
func (s *seenSet) add(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if at, ok := s.at[id]; ok && now.Sub(at) < s.window {
		return false
	}
	for len(s.at) >= s.max && s.head < len(s.order) {
		s.pop()
	}
	s.at[id] = now
	s.order = append(s.order, seenEntry{id: id, at: now})
	return true
}

// expire forgets entries older than the window, oldest first.
func (s *seenSet) expire(now time.Time) {
	for s.head < len(s.order) && now.Sub(s.order[s.head].at) >= s.window {
		s.pop()
	}
}

// pop forgets the oldest entry and compacts the queue once half of it is
// spent, so memory stays proportional to the live entries.
func (s *seenSet) pop() {
	e := s.order[s.head]
	s.order[s.head] = seenEntry{}
	s.head++
	// The id may have been added again after expiring with a clock that
	// went backwards; only its latest entry removes it.
	if at, ok := s.at[e.id]; ok && at.Equal(e.at) {
		delete(s.at, e.id)
	}
	if s.head*2 >= len(s.order) {
		s.order = append(s.order[:0:0], s.order[s.head:]...)
		s.head = 0
	}
}

// forget removes id, so that it counts as new again.
func (s *seenSet) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, id)
}

// len returns how many ids the set holds.
func (s *seenSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at)
}
