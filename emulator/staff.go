package emulator

import (
	"context"
	"fmt"
	"slices"
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
// past nextCheckBy. Nothing is sent while a version is held (docs: "Nothing
// more arrives for that dataset until the hold ends.").
func (e *Emulator) checkStaleLocked(d *dataset, now time.Time) {
	if d.nextCheckBy.IsZero() || !now.After(d.nextCheckBy.Add(24*time.Hour)) || d.staleSent.Equal(d.nextCheckBy) || d.held != nil {
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

func (e *Emulator) datasetLocked(op, id string) (*dataset, error) {
	d := e.datasets[id]
	if d == nil {
		return nil, fmt.Errorf("%s %s: %w", op, id, ErrNotFound)
	}
	return d, nil
}

// SetCoverage sets the workspace's coverage to the given county place ids
// (nil: everything). Datasets it no longer opens leave their subscriptions
// with feed.dataset.removed reason left_coverage; ones it opens join.
func (e *Emulator) SetCoverage(countyIDs []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if countyIDs == nil {
		e.coverage = nil
	} else {
		e.coverage = map[string]bool{}
		for _, id := range countyIDs {
			e.coverage[id] = true
		}
	}
	e.recomputeAllLocked()
}

// SetPlanClosed closes (or opens again) a dataset to the workspace's plan:
// subscriptions drop it with reason plan_changed.
func (e *Emulator) SetPlanClosed(datasetID string, closed bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("set plan", datasetID)
	if err != nil {
		return err
	}
	d.planClosed = closed
	e.recomputeAllLocked()
	return nil
}

// SetDeliverable stops (or restarts) delivering a dataset through Data
// Feeds: subscriptions drop it with reason no_longer_deliverable.
func (e *Emulator) SetDeliverable(datasetID string, deliverable bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("set deliverable", datasetID)
	if err != nil {
		return err
	}
	d.deliverable = deliverable
	e.recomputeAllLocked()
	return nil
}

// Refile files a dataset under another place and topic (docs: "Ploti filing
// the dataset under another topic or place"): subscriptions it no longer
// matches drop it with reason subscription_changed, ones it now matches get
// feed.dataset.added. Rows of later versions carry the new place id.
func (e *Emulator) Refile(datasetID, placeID, topic string) error {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("refile", datasetID)
	if err != nil {
		return err
	}
	d.spec.PlaceID, d.spec.Topic = placeID, topic
	e.recomputeAllLocked()
	return nil
}

// SetPlanUnavailable simulates Ploti failing to read the workspace's plan:
// manifests, creates, changes and previews answer 503 plan_unavailable, and
// coverage and plan removals wait until it is readable again.
func (e *Emulator) SetPlanUnavailable(down bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.planDown = down
	if !down {
		e.recomputeAllLocked()
	}
}

// SetRebuilding marks a dataset's current files as being rebuilt: manifests
// list it under unavailable with reason rebuilding, and its version answers
// 503 until SetRebuilding(id, false).
func (e *Emulator) SetRebuilding(datasetID string, on bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("set rebuilding", datasetID)
	if err != nil {
		return err
	}
	d.rebuilding = on
	return nil
}

// SetSubscriptionBusy makes DELETE of a subscription answer 409 busy while
// on.
func (e *Emulator) SetSubscriptionBusy(id string, busy bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.subs[id]
	if s == nil {
		return fmt.Errorf("set busy %s: %w", id, ErrNotFound)
	}
	s.busy = busy
	return nil
}

// SetDatasetStatus sets the status a dataset with no released version shows
// ("failed", "awaiting_release"; "" for the computed one).
func (e *Emulator) SetDatasetStatus(datasetID, status string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("set status", datasetID)
	if err != nil {
		return err
	}
	d.status = status
	return nil
}

// Check is a source check that finds nothing new: it publishes no version
// but moves refresh.lastCheckedAt and nextCheckBy.
func (e *Emulator) Check(datasetID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("check", datasetID)
	if err != nil {
		return err
	}
	now := e.nowLocked()
	d.checkedAt, d.nextCheckBy = now, now.Add(e.opts.CheckInterval)
	return nil
}

// ReRelease is Ploti releasing again a version subscribers already had. The
// dataset's next version sent (the rebuild, published by the caller, or a
// newer release that arrives first) is a resync_required with reason
// previous_unavailable (or the schema's reason), its records matched to the
// rows kept for that version. Manifests with an asOf that reaches the version
// answer 410.
func (e *Emulator) ReRelease(datasetID string, version int) error {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.datasetLocked("re-release", datasetID)
	if err != nil {
		return err
	}
	v := d.versionNum(version)
	if v == nil || v.state != "released" {
		return fmt.Errorf("re-release %s v%d: %w", datasetID, version, ErrNotFound)
	}
	v.reReleased = true
	d.forceResync, d.matchVersion = true, v
	return nil
}

// ReplaceIDs is Ploti's staff replacing a dataset's record ids: it publishes
// a version with the current rows, a fraction (1 for all) of them under new
// ids, as a resync_required with reason record_ids_changed and an id map.
func (e *Emulator) ReplaceIDs(ctx context.Context, datasetID string, fraction float64) (Release, error) {
	e.mu.Lock()
	d := e.datasets[datasetID]
	var cur *version
	if d != nil {
		cur = d.released
	}
	e.mu.Unlock()
	if cur == nil {
		return Release{}, fmt.Errorf("replace ids %s: %w: no released version", datasetID, ErrNotFound)
	}
	return e.publish(ctx, datasetID, []PublishOption{WithReplacedIDs(fraction)}, func(p *buildPlan) (string, error) {
		cols := make([]string, len(p.cols))
		for i, c := range p.cols {
			cols[i] = ident(c.Name)
		}
		return fmt.Sprintf("SELECT %s FROM %s ORDER BY _ploti_record_id", strings.Join(cols, ", "), p.baseRel), nil
	})
}

// Subscriptions lists the subscription ids, oldest first.
func (e *Emulator) Subscriptions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.subOrder)
}
