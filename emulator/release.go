package emulator

import (
	"context"
	"fmt"
	"time"
)

// version is one built version of a dataset.
type version struct {
	num           int
	prev          *int // the last released version when it was built
	schema        *schemaDoc
	schemaChanged bool // its schema version differs from prev's
	builtAt       time.Time
	publishedAt   time.Time
	rowCount      int64
	added         int64
	changed       int64
	removed       int64
	hasChanges    bool
	keyViolations int64
	matched       int64
	resyncReason  string
	state         string // held, released, discarded, replaced
	holdReason    string
	table         string // DuckDB table with its rows while kept, else ""
	snapshot      []fileRef
	changes       *fileRef
	schemaFile    fileRef
	idMap         *fileRef
	filesGone     bool        // past retention
	reReleased    bool        // released again and rebuilt: asOf manifests reaching it answer 410
	watch         *watchBuild // what the watch side promotes with it (watchbuild.go)
	ploti         int         // its Ploti version once promoted, else 0
}

// delayReason is the feed.dataset.delayed reason of a hold.
func (v *version) delayReason() string {
	switch v.holdReason {
	case "schema_change":
		return "schema_review"
	case "identity_unresolved":
		return "processing"
	}
	return "data_check"
}

func vp(n int) *int { return &n }

func intOrNil(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// holdFor decides whether a built version is held, and why.
func holdFor(p *buildPlan, v *version) string {
	b := p.base
	switch {
	case v.keyViolations > 0:
		return "key_violation"
	case p.cfg.hold != "":
		return p.cfg.hold
	case p.cfg.skipReview || b == nil:
		return ""
	case p.schema.Change != nil && p.schema.Change.Bump == "major" && v.schemaChanged:
		return "schema_change"
	case v.rowCount*10 < b.rowCount*7:
		return "row_drop"
	case len(p.key) > 0 && !(v.schemaChanged && p.schema.Change.KeyDiff) &&
		b.rowCount >= 10 && v.matched*2 < b.rowCount && abs64(v.rowCount-b.rowCount)*10 <= b.rowCount:
		return "identity_ambiguous"
	}
	return ""
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// commitLocked registers a built version: it replaces a held one, then is
// held or released.
func (e *Emulator) commitLocked(p *buildPlan, v *version) Release {
	d := p.d
	first := e.nextEvent
	now := e.nowLocked()
	v.builtAt = now
	v.schemaChanged = p.base != nil && p.schema.Version != p.base.schema.Version
	d.idCounter += v.rowCount // new ids were counter + _ord
	d.checkedAt, d.nextCheckBy = now, now.Add(e.opts.CheckInterval)
	d.versions = append(d.versions, v)
	if old := d.held; old != nil {
		old.state = "replaced"
		e.dropVersionTable(old)
		d.held = nil
	}
	if reason := holdFor(p, v); reason != "" {
		v.state, v.holdReason = "held", reason
		d.held = v
		for _, id := range e.subOrder {
			e.sendDelayed(e.subs[id], d)
		}
	} else {
		e.releaseLocked(d, v)
	}
	return e.releaseInfo(d, v, first)
}

func (e *Emulator) releaseInfo(d *dataset, v *version, firstEvent int64) Release {
	r := Release{
		DatasetID: d.spec.ID, Version: v.num, PreviousVersion: v.prev, SchemaVersion: v.schema.Version,
		Held: v.state == "held", HoldReason: v.holdReason,
		ResyncRequired: v.resyncReason != "", ResyncReason: v.resyncReason,
		RowCount: v.rowCount, Added: v.added, Changed: v.changed, Removed: v.removed,
		PlotiVersion: v.ploti,
	}
	if v.schemaChanged && v.schema.Change != nil {
		r.SchemaBump = v.schema.Change.Bump
	}
	for n := firstEvent + 1; n <= e.nextEvent; n++ {
		r.EventIDs = append(r.EventIDs, fmt.Sprintf("evt_%012d", n))
	}
	return r
}

func (e *Emulator) dropVersionTable(v *version) {
	if v != nil && v.table != "" {
		e.dropTables(v.table)
		v.table = ""
	}
}

// releaseLocked releases a version to every subscription that delivers its
// dataset: schema_changed first when the schema changed, then updated or
// resync_required.
func (e *Emulator) releaseLocked(d *dataset, v *version) {
	v.state = "released"
	v.publishedAt = e.nowLocked()
	if d.released != nil {
		e.dropVersionTable(d.released)
	}
	d.released = v
	if d.feedFirst == nil && e.deliveredLocked(d) {
		d.feedFirst = v
	}
	d.forceResync, d.matchVersion = false, nil
	if len(d.schemas) == 0 || d.schemas[len(d.schemas)-1].Version != v.schema.Version {
		d.schemas = append(d.schemas, v.schema)
	}
	for _, id := range e.subOrder {
		s := e.subs[id]
		if s.members[d.spec.ID] == nil {
			continue
		}
		e.sendVersionEvents(s, d, v)
	}
	// The watch side promotes every released version, delivered by a
	// subscription or not.
	e.promoteLocked(d, v)
}

func (e *Emulator) sendVersionEvents(s *subscription, d *dataset, v *version) {
	if v.schemaChanged {
		e.appendEvent(s, "feed.dataset.schema_changed", d, map[string]any{
			"version": vp(v.num), "schemaVersion": v.schema.Version, "schemaChange": v.schema.Change.json(),
		})
	}
	if v.resyncReason != "" {
		e.appendEvent(s, "feed.dataset.resync_required", d, map[string]any{
			"version": vp(v.num), "previousVersion": intOrNil(v.prev), "schemaVersion": v.schema.Version,
			"reason": v.resyncReason,
		})
		return
	}
	e.appendEvent(s, "feed.dataset.updated", d, map[string]any{
		"version": vp(v.num), "previousVersion": intOrNil(v.prev), "schemaVersion": v.schema.Version,
	})
}

// ReleaseHeld is Ploti's staff releasing a dataset's held version: its
// schema_changed (when the schema changed) and updated or resync_required
// follow. A key_violation cannot be released (ErrNotReleasable).
func (e *Emulator) ReleaseHeld(datasetID string) (Release, error) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	rel, err := e.releaseHeldLocked(datasetID)
	pg, watched := rowsPage{}, false
	if err == nil {
		pg, watched = e.promotedRowsLocked(e.datasets[datasetID], e.datasets[datasetID].versionNum(rel.Version))
	}
	e.mu.Unlock()
	if watched {
		e.prepareRows(context.Background(), pg)
	}
	return rel, err
}

func (e *Emulator) releaseHeldLocked(datasetID string) (Release, error) {
	d := e.datasets[datasetID]
	if d == nil {
		return Release{}, fmt.Errorf("release held %s: %w", datasetID, ErrNotFound)
	}
	v := d.held
	if v == nil {
		return Release{}, fmt.Errorf("release held %s: %w", datasetID, ErrNotHeld)
	}
	if v.holdReason == "key_violation" {
		return Release{}, fmt.Errorf("release held %s v%d: %w", datasetID, v.num, ErrNotReleasable)
	}
	first := e.nextEvent
	d.held = nil
	e.releaseLocked(d, v)
	return e.releaseInfo(d, v, first), nil
}

// DiscardHeld is Ploti's staff discarding a dataset's held version. No event
// is sent; the next version follows from the one subscribers hold, and the
// discarded number leaves a gap.
func (e *Emulator) DiscardHeld(datasetID string) error {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.datasets[datasetID]
	if d == nil {
		return fmt.Errorf("discard held %s: %w", datasetID, ErrNotFound)
	}
	if d.held == nil {
		return fmt.Errorf("discard held %s: %w", datasetID, ErrNotHeld)
	}
	d.held.state = "discarded"
	e.dropVersionTable(d.held)
	d.held = nil
	return nil
}

// statusLocked is a dataset's status: available once a version is released,
// else why not.
func (e *Emulator) statusLocked(d *dataset) string {
	switch {
	case d.current() != nil:
		return "available"
	case d.status != "":
		return d.status
	case d.feedFirst == nil && !e.deliveredLocked(d):
		return "not_built" // "not_built until a subscription includes the dataset"
	case d.held != nil:
		return "held"
	}
	return "building"
}
