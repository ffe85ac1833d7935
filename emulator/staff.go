package emulator

import (
	"fmt"
	"strings"
	"time"
)

// inCoverage tells whether the workspace's coverage opens a dataset: a county
// dataset when one of its counties is covered, a statewide one when a county
// of its state is, a national one with any coverage.
func (e *Emulator) inCoverage(d *dataset) bool {
	if e.coverage == nil {
		return true
	}
	ids := d.datasetPlaces()
	if len(ids) == 0 {
		return true
	}
	for _, id := range ids {
		p := e.placeByID(id)
		if p == nil {
			if e.coverage[id] {
				return true
			}
			continue
		}
		if e.placeInCoverage(p) {
			return true
		}
	}
	return false
}

// placeInCoverage tells whether a place is in the workspace's coverage.
func (e *Emulator) placeInCoverage(p *Place) bool {
	if e.coverage == nil {
		return true
	}
	switch p.Kind {
	case "county":
		return e.coverage[p.ID]
	case "state":
		for _, q := range e.places {
			if q.Kind == "county" && strings.EqualFold(q.State, p.State) && e.coverage[q.ID] {
				return true
			}
		}
		return false
	case "us":
		return len(e.coverage) > 0
	}
	return e.coverage[p.ID]
}

// sweepLocked applies what the clock did since the last sweep: events and
// files past retention, and missed source checks.
func (e *Emulator) sweepLocked() {
	now := e.nowLocked()
	e.lastSweep = now
	cut := now.Add(-Retention)
	for _, id := range e.subOrder {
		s := e.subs[id]
		i := 0
		for i < len(s.events) && s.events[i].ts.Before(cut) {
			i++
		}
		if i > 0 {
			s.events = append([]*event(nil), s.events[i:]...)
			s.pruned += int64(i)
		}
	}
	for _, id := range e.dsOrder {
		d := e.datasets[id]
		for _, v := range d.versions {
			if v != d.released && v != d.held && !v.filesGone && v.builtAt.Before(cut) && !v.builtAt.IsZero() {
				v.filesGone = true
			}
		}
		e.checkStaleLocked(d, now)
	}
}

// checkStaleLocked sends feed.dataset.stale once per missed check: a day
// past nextCheckBy.
func (e *Emulator) checkStaleLocked(d *dataset, now time.Time) {
	if d.nextCheckBy.IsZero() || !now.After(d.nextCheckBy.Add(24*time.Hour)) || d.staleSent.Equal(d.nextCheckBy) {
		return
	}
	d.staleSent = d.nextCheckBy
	for _, id := range e.subOrder {
		s := e.subs[id]
		if s.members[d.spec.ID] == nil {
			continue
		}
		e.appendEvent(s, "feed.dataset.stale", d, map[string]any{
			"lastCheckedAt": d.checkedAt.Format(time.RFC3339), "nextCheckBy": d.nextCheckBy.Format(time.RFC3339),
		})
	}
}

var _ = fmt.Sprintf
