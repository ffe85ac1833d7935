package apply

import (
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

func ev(typ string, version, prev *int, mod ...func(*ploti.EventData)) ploti.Event {
	e := ploti.Event{ID: "evt_1", Type: typ, Data: ploti.EventData{DatasetID: "ds_x", Version: version, PreviousVersion: prev}}
	for _, m := range mod {
		m(&e.Data)
	}
	return e
}

func reason(r string) func(*ploti.EventData) { return func(d *ploti.EventData) { d.Reason = r } }

func change(bump string, mod ...func(*ploti.SchemaChange)) func(*ploti.EventData) {
	return func(d *ploti.EventData) {
		c := &ploti.SchemaChange{}
		if bump != "" {
			c.Bump = &bump
		}
		for _, m := range mod {
			m(c)
		}
		d.SchemaChange = c
	}
}

var (
	v     = ploti.Int
	held5 = State{Known: true, Version: 5, Status: storage.StatusCurrent}
)

// TestDecide has one row per rule of the docs; each name quotes or cites the
// sentence it enforces.
func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		state   State
		event   ploti.Event
		onMajor string
		want    Kind
		version int
		check   bool
	}{
		// feed-events.txt, "Event types".
		{name: "added: 'When version is set, load that version's snapshot'", state: State{},
			event: ev(ploti.EventAdded, v(3), nil), want: Load, version: 3},
		{name: "added: '...replacing any rows you kept for that dataset'", state: held5,
			event: ev(ploti.EventAdded, v(7), nil), want: Load, version: 7},
		{name: "added again after removed: load", state: State{Known: true, Version: 5, Status: storage.StatusRemoved},
			event: ev(ploti.EventAdded, v(5), nil), want: Load, version: 5},
		{name: "added: 'When it is null, the dataset has no released version yet' → pending", state: State{},
			event: ev(ploti.EventAdded, nil, nil), want: Pending},
		{name: "added replayed for the version already held: nothing to do", state: held5,
			event: ev(ploti.EventAdded, v(5), nil), want: Skip},
		{name: "added replayed for an older version: a replay changes nothing (invariant 2)", state: held5,
			event: ev(ploti.EventAdded, v(3), nil), want: Skip},
		{name: "delayed replayed for a version below the held one: that delay is over", state: held5,
			event: ev(ploti.EventDelayed, v(4), nil, reason(ploti.DelayDataCheck)), want: Skip},
		{name: "resync_required first_version: 'its first version arrives as resync_required with reason first_version'",
			state: State{Known: true, Status: storage.StatusPending}, event: ev(ploti.EventResyncRequired, v(1), nil, reason(ploti.ReasonFirstVersion)), want: Load, version: 1},
		{name: "resync_required record_ids_changed: load (the id map comes with the version's files)", state: held5,
			event: ev(ploti.EventResyncRequired, v(6), v(5), reason(ploti.ReasonRecordIDsChanged)), want: Load, version: 6},
		{name: "resync_required previous_unavailable: load the snapshot", state: held5,
			event: ev(ploti.EventResyncRequired, v(8), v(7), reason(ploti.ReasonPreviousUnavailable)), want: Load, version: 8},
		{name: "resync_required key_columns_changed under hold: load, checking the version's bump", state: held5,
			event: ev(ploti.EventResyncRequired, v(6), v(5), reason(ploti.ReasonKeyColumnsChanged)), want: Load, version: 6, check: true},
		{name: "resync_required schema_changed under hold: load, checking the version's bump (wire.md 8.2)", state: held5,
			event: ev(ploti.EventResyncRequired, v(6), v(5), reason(ploti.ReasonSchemaChanged)), want: Load, version: 6, check: true},
		{name: "resync_required schema_changed under reload: load at once", state: held5, onMajor: OnMajorReload,
			event: ev(ploti.EventResyncRequired, v(6), v(5), reason(ploti.ReasonSchemaChanged)), want: Load, version: 6},
		// feed-events.txt, "Order".
		{name: "Order: 'Apply an updated only when its previousVersion is the version you hold'", state: held5,
			event: ev(ploti.EventUpdated, v(6), v(5)), want: Merge, version: 6},
		{name: "Order: 'When it is any other version, reload that dataset from its current version'", state: held5,
			event: ev(ploti.EventUpdated, v(9), v(7)), want: ReloadCurrent, version: 9},
		{name: "Order: updated with a null previousVersion is not the held version: reload current", state: held5,
			event: ev(ploti.EventUpdated, v(9), nil), want: ReloadCurrent, version: 9},
		{name: "Order: updated for a dataset with no version held: reload current", state: State{Known: true, Status: storage.StatusPending},
			event: ev(ploti.EventUpdated, v(2), v(1)), want: ReloadCurrent, version: 2},
		// feed-events.txt, "Reading the log".
		{name: "Reading the log: 'Skip an updated ... for a version at or below the one you hold' (equal)", state: held5,
			event: ev(ploti.EventUpdated, v(5), v(4)), want: Skip},
		{name: "Reading the log: 'Skip an updated ... for a version at or below the one you hold' (below)", state: held5,
			event: ev(ploti.EventUpdated, v(3), v(2)), want: Skip},
		{name: "Reading the log: skip a resync_required at or below the held version", state: held5,
			event: ev(ploti.EventResyncRequired, v(5), v(4), reason(ploti.ReasonPreviousUnavailable)), want: Skip},
		{name: "Reading the log: skip a schema_changed at or below the held version", state: held5,
			event: ev(ploti.EventSchemaChanged, v(4), nil, change("minor")), want: Skip},
		{name: "wire.md 8.1: the replay skip is checked before the previousVersion rule", state: held5,
			event: ev(ploti.EventUpdated, v(5), v(5)), want: Skip},
		{name: "Reading the log: schema_changed MINOR: 'Act on it by changing your table to match'", state: held5,
			event: ev(ploti.EventSchemaChanged, v(6), nil, change("minor")), want: AlterSchema, version: 6},
		{name: "schemas-and-holds: 'On a MAJOR change, hold the dataset at its current version until someone on your side has reviewed it'", state: held5,
			event: ev(ploti.EventSchemaChanged, v(6), nil, change("major")), want: HoldForReview, version: 6},
		{name: "MAJOR inferred from a removed column when bump is absent", state: held5,
			event: ev(ploti.EventSchemaChanged, v(6), nil, change("", func(c *ploti.SchemaChange) { c.Removed = []ploti.Column{{Name: "x"}} })), want: HoldForReview, version: 6},
		{name: "MAJOR under the reload policy: the resync_required that follows reloads", state: held5, onMajor: OnMajorReload,
			event: ev(ploti.EventSchemaChanged, v(6), nil, change("major")), want: Skip},
		{name: "schema_changed for a dataset with no table yet", state: State{Known: true, Status: storage.StatusPending},
			event: ev(ploti.EventSchemaChanged, v(1), nil, change("minor")), want: Skip},
		{name: "local hold: later versions are deferred; release reloads from current", state: State{Known: true, Version: 5, Status: storage.StatusHeld, LocalHold: true},
			event: ev(ploti.EventUpdated, v(7), v(6)), want: Skip},
		{name: "local hold: the resync_required after a held MAJOR change is deferred", state: State{Known: true, Version: 5, Status: storage.StatusHeld, LocalHold: true},
			event: ev(ploti.EventResyncRequired, v(6), v(5), reason(ploti.ReasonSchemaChanged)), want: Skip},
		{name: "local hold: removed still applies", state: State{Known: true, Version: 5, Status: storage.StatusHeld, LocalHold: true},
			event: ev(ploti.EventRemoved, nil, nil, reason(ploti.RemovedPlanChanged)), want: Removed},
		// removed, and "A 409 ... or a 404 from links.version ... Skip that dataset's events up to its feed.dataset.removed".
		{name: "removed left_coverage: rows stay, status removed", state: held5,
			event: ev(ploti.EventRemoved, nil, nil, reason(ploti.RemovedLeftCoverage)), want: Removed},
		{name: "removed subscription_changed", state: held5, event: ev(ploti.EventRemoved, nil, nil, reason(ploti.RemovedSubscriptionChanged)), want: Removed},
		{name: "removed no_longer_deliverable", state: held5, event: ev(ploti.EventRemoved, nil, nil, reason(ploti.RemovedNoLongerDeliverable)), want: Removed},
		{name: "after removed, later events are ignored until added again", state: State{Known: true, Version: 5, Status: storage.StatusRemoved},
			event: ev(ploti.EventUpdated, v(6), v(5)), want: Skip},
		{name: "'Skip that dataset's events up to its feed.dataset.removed'", state: State{Known: true, Version: 5, Status: storage.StatusCurrent, SkipUntilRemoved: true},
			event: ev(ploti.EventUpdated, v(6), v(5)), want: Skip},
		{name: "'... up to its feed.dataset.removed': the removed itself applies", state: State{Known: true, Version: 5, Status: storage.StatusCurrent, SkipUntilRemoved: true},
			event: ev(ploti.EventRemoved, nil, nil, reason(ploti.RemovedSubscriptionChanged)), want: Removed},
		{name: "removed for a dataset never held", state: State{}, event: ev(ploti.EventRemoved, nil, nil, reason(ploti.RemovedPlanChanged)), want: Skip},
		// stale and delayed.
		{name: "stale: 'sent once per missed check': record it", state: held5, event: ev(ploti.EventStale, nil, nil), want: Stale},
		{name: "delayed schema_review: 'version is the version you hold, which stays current meanwhile'", state: held5,
			event: ev(ploti.EventDelayed, v(5), nil, reason(ploti.DelaySchemaReview)), want: Delayed, version: 5},
		{name: "delayed data_check", state: held5, event: ev(ploti.EventDelayed, v(5), nil, reason(ploti.DelayDataCheck)), want: Delayed, version: 5},
		{name: "delayed processing", state: held5, event: ev(ploti.EventDelayed, v(5), nil, reason(ploti.DelayProcessing)), want: Delayed, version: 5},
		{name: "wire.md 8.4: delayed with version null for a dataset with no version: pending with a server hold", state: State{Known: true, Status: storage.StatusPending},
			event: ev(ploti.EventDelayed, nil, nil, reason(ploti.DelayDataCheck)), want: Delayed},
		// Not feed events.
		{name: "ping: 'It is not a feed event, so do not apply it'", state: held5, event: ploti.Event{ID: "p", Type: ploti.EventPing}, want: Skip},
		{name: "dataset.changed belongs to dataset watches, not feeds", state: held5, event: ploti.Event{ID: "w", Type: "dataset.changed"}, want: Skip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.state, tc.event, tc.onMajor)
			if got.Kind != tc.want || got.Version != tc.version || got.CheckMajor != tc.check {
				t.Fatalf("Decide = %v v%d check=%v (%s), want %v v%d check=%v", got.Kind, got.Version, got.CheckMajor, got.Why, tc.want, tc.version, tc.check)
			}
			if got.Why == "" {
				t.Fatal("an action must say which rule decided it")
			}
		})
	}
}

// A schema_changed without schemaChange must not panic the executor's
// decision (bad input is an error or a no-op, never a crash).
func TestDecide_schemaChangedWithoutChange(t *testing.T) {
	got := Decide(held5, ev(ploti.EventSchemaChanged, v(6), nil), "")
	if got.Kind != AlterSchema {
		t.Fatalf("Decide = %v", got.Kind)
	}
}
