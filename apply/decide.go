package apply

import (
	"fmt"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Kind is what an event does to a dataset.
type Kind int

// Action kinds.
const (
	// Skip changes nothing (the event is still recorded as seen).
	Skip Kind = iota
	// Pending registers a dataset with no released version yet.
	Pending
	// Load replaces the dataset's rows with a version's snapshot.
	Load
	// ReloadCurrent loads the snapshot of the dataset's current version.
	ReloadCurrent
	// Merge applies a version's changes file to the held version.
	Merge
	// AlterSchema adds a MINOR schema change's columns to the table.
	AlterSchema
	// HoldForReview keeps the dataset at its version after a MAJOR schema
	// change, with a local hold, until Release.
	HoldForReview
	// Removed records that the dataset left the subscription; rows stay.
	Removed
	// Stale records a missed source check.
	Stale
	// Delayed records a server hold: the next version waits for review.
	Delayed
)

var kindNames = [...]string{"skip", "pending", "load", "reload_current", "merge", "alter_schema", "hold_for_review", "removed", "stale", "delayed"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Heavy reports whether the action loads or merges rows (and so needs files
// and a transaction of its own).
func (k Kind) Heavy() bool { return k == Load || k == ReloadCurrent || k == Merge }

// Major-change policies (Options.OnMajor).
const (
	// OnMajorHold keeps a dataset at its version after a MAJOR schema change
	// until someone releases it (the docs' "common rule").
	OnMajorHold = "hold"
	// OnMajorReload applies the following resync_required at once.
	OnMajorReload = "reload"
)

// State is what Decide needs to know of a dataset.
type State struct {
	Known            bool   // a registry row exists
	Version          int    // the version held; 0 for none
	Status           string // storage.Status…
	SkipUntilRemoved bool   // a 409/404 from links.version said it left
	LocalHold        bool   // held for review after a MAJOR change
}

// StateOf builds a State from a registry row and its holds.
//
// A watched dataset (source watch) is one the feed has not held: its
// version numbers are Ploti's own, not Data Feeds'. The feed's first event
// for it loads it as any new dataset, and it is the feed's from then on
// (a dataset both in the subscription and watched is kept from
// the feed).
func StateOf(d *storage.Dataset, holds []storage.Hold) State {
	if d == nil || d.Source == storage.SourceWatch {
		return State{}
	}
	s := State{Known: true, Version: d.Version, Status: d.Status, SkipUntilRemoved: d.SkipUntilRemoved}
	for _, h := range holds {
		if h.Kind == storage.HoldLocal {
			s.LocalHold = true
		}
	}
	return s
}

// Action is Decide's answer.
type Action struct {
	Kind    Kind
	Version int    // the version to load or merge, when one is named; for ReloadCurrent the event's (the current one may be later)
	Why     string // the rule that decided, for logs and tests
	// CheckMajor asks Execute to hold instead of load when the version's
	// schema change is MAJOR (a resync_required for a schema change whose
	// schema_changed this replica did not act on).
	CheckMajor bool
	// Review asks Execute to hold instead of load when the version's schema
	// is a MAJOR version away from the one the table holds (the hold
	// policy): an added for a dataset that left and came back must not
	// slip a MAJOR change past the review it was waiting for.
	Review bool
}

func skip(why string) Action { return Action{Kind: Skip, Why: why} }

// Decide says what an event does to a dataset in state s. It is pure: the
// rules of feed-events.txt and schemas-and-holds.txt, in the order the
// contract reads them (docs/wire.md section 8).
func Decide(s State, ev ploti.Event, onMajor string) Action {
	if !ev.IsFeed() {
		return skip("not a feed event: never applied")
	}
	version := 0
	if ev.Data.Version != nil {
		version = *ev.Data.Version
	}
	if ev.Type == ploti.EventAdded {
		return decideAdded(s, version)
	}
	if s.Status == storage.StatusRemoved {
		return skip("dataset removed: its events are ignored until it is added again")
	}
	if s.SkipUntilRemoved {
		if ev.Type == ploti.EventRemoved {
			return Action{Kind: Removed, Why: "the removal that a 409/404 from links.version announced"}
		}
		return skip("dataset has left the subscription (409/404 from links.version): skip its events up to feed.dataset.removed")
	}
	switch ev.Type {
	case ploti.EventUpdated, ploti.EventResyncRequired, ploti.EventSchemaChanged:
		return decideVersion(s, ev, version, onMajor)
	case ploti.EventRemoved, ploti.EventStale, ploti.EventDelayed:
		return decideState(s, ev, version)
	}
	return skip("unknown feed event type " + ev.Type)
}

// decideVersion is Decide for the events that bring a version (updated,
// resync_required, schema_changed) of a dataset the subscription has.
func decideVersion(s State, ev ploti.Event, version int, onMajor string) Action {
	if s.Version > 0 && version <= s.Version {
		return skip(fmt.Sprintf("version %d at or below the held version %d", version, s.Version))
	}
	if s.LocalHold {
		return skip("held for review after a MAJOR schema change: release reloads from the current version")
	}
	switch ev.Type {
	case ploti.EventUpdated:
		if ev.Data.PreviousVersion != nil && s.Version > 0 && *ev.Data.PreviousVersion == s.Version {
			return Action{Kind: Merge, Version: version, Why: "updated whose previousVersion is the held version: apply its changes"}
		}
		// Version is the event's: the current version may be a later one.
		return Action{Kind: ReloadCurrent, Version: version, Why: "updated whose previousVersion is not the held version: reload from the current version"}
	case ploti.EventResyncRequired:
		check := onMajor != OnMajorReload && (ev.Data.Reason == ploti.ReasonSchemaChanged || ev.Data.Reason == ploti.ReasonKeyColumnsChanged)
		return Action{Kind: Load, Version: version, CheckMajor: check, Why: "resync_required (" + ev.Data.Reason + "): load the version's snapshot"}
	}
	if !s.Known || s.Version == 0 {
		return skip("schema_changed for a dataset with no table yet: its snapshot brings the schema")
	}
	if ev.Data.SchemaChange.IsMajor() {
		if onMajor == OnMajorReload {
			return skip("MAJOR schema change under the reload policy: the resync_required that follows reloads")
		}
		return Action{Kind: HoldForReview, Version: version, Why: "MAJOR schema change: hold the dataset at its version until reviewed"}
	}
	return Action{Kind: AlterSchema, Version: version, Why: "MINOR schema change: add the columns; the version is not held until its updated"}
}

// decideState is Decide for the events that change a dataset's state but
// bring no version to load (removed, stale, delayed).
func decideState(s State, ev ploti.Event, version int) Action {
	switch ev.Type {
	case ploti.EventRemoved:
		if !s.Known {
			return skip("removed for a dataset never held")
		}
		return Action{Kind: Removed, Why: "removed: rows stay, status removed"}
	case ploti.EventStale:
		if !s.Known {
			return skip("stale for a dataset never held")
		}
		return Action{Kind: Stale, Why: "stale: record the missed check"}
	}
	if version > 0 && version < s.Version {
		return skip(fmt.Sprintf("delayed at version %d, but version %d is held since: that delay is over", version, s.Version))
	}
	return Action{Kind: Delayed, Version: version, Why: "delayed: the next version is held for review by Ploti"}
}

func decideAdded(s State, version int) Action {
	if version == 0 {
		if s.Known && s.Version > 0 && s.Status != storage.StatusRemoved {
			return skip("added with no version for a dataset already held")
		}
		return Action{Kind: Pending, Why: "added with version null: pending until resync_required first_version"}
	}
	if s.Known && s.Version > 0 && version <= s.Version && s.Status != storage.StatusRemoved && !s.SkipUntilRemoved {
		// Versions only increase along the log: an added at or below the
		// held version is a replay (invariant 2: replaying changes nothing).
		// The docs' replay rule names updated, resync_required and
		// schema_changed only; it is read as covering added too, since
		// "Only loading a snapshot or applying a changes file changes the
		// version you hold" and loading one at or below it changes nothing
		// or goes backwards.
		return skip(fmt.Sprintf("added for version %d, at or below the held version %d", version, s.Version))
	}
	return Action{Kind: Load, Version: version, Review: s.Known && s.Version > 0, Why: "added with a version: load that version's snapshot, replacing any rows"}
}
