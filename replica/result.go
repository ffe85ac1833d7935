package replica

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/storage"
)

// SyncResult says what one Sync did. Its JSON (the CLI's `sync --json`)
// follows the CLI's one convention: camelCase, durations in seconds, empty
// lists as [].
type SyncResult struct {
	Bootstrapped    bool     `json:"bootstrapped"`    // loaded from the manifest (first sync or a 410)
	EventsSeen      int      `json:"eventsSeen"`      // events read from the log
	EventsApplied   int      `json:"eventsApplied"`   // events that changed something
	EventsSkipped   int      `json:"eventsSkipped"`   // events skipped by a rule or already applied
	EventsFailed    int      `json:"eventsFailed"`    // events whose dataset failed (named in Failed); the next sync tries again
	SnapshotsLoaded int      `json:"snapshotsLoaded"` // snapshot loads (bootstrap, resync, reload)
	ChangesMerged   int      `json:"changesMerged"`   // changes files merged
	WatchesSeen     int      `json:"watchesSeen"`     // datasets in the watches list (Options.Watch)
	WatchMerges     int      `json:"watchMerges"`     // watched datasets merged (one or more recorded versions)
	WatchReloads    int      `json:"watchReloads"`    // watched datasets read whole from rows
	Failed          []string `json:"failed"`          // datasets that failed this sync (their last good version stays)
	// HeldForReview are the datasets the file holds for review after a
	// MAJOR schema change when the sync ends, this sync's and earlier
	// ones': each stays at its version until Release.
	HeldForReview []string `json:"heldForReview"`
	// AttachmentsFailed are datasets whose version's attachments could not
	// be kept this sync (their data is applied; the next sync tries again).
	AttachmentsFailed []string `json:"attachmentsFailed,omitempty"`
	// AttachmentFailures say why, for each of AttachmentsFailed.
	AttachmentFailures []Failure     `json:"attachmentFailures,omitempty"`
	Cursor             string        `json:"cursor,omitempty"` // the stored cursor after the sync
	Duration           time.Duration `json:"-"`                // wall time (JSON: durationSeconds)
	// Published is the copy Options.Publish asked for.
	Published *Published `json:"published,omitempty"`

	// Moves are the datasets whose version this sync changed, from → to
	// (From 0: new in the file; To 0: removed from it).
	Moves []Move `json:"moves"`
	// Failures say why each dataset of Failed failed: the reason the file
	// records with its failed status.
	Failures []Failure `json:"failures,omitempty"`
	// Holds are the holds the file has when the sync ends: Ploti's
	// (HoldServer: the publisher held the dataset) and the file's own
	// review holds (HoldLocal, after a MAJOR schema change).
	Holds []Hold `json:"holds,omitempty"`

	// Trigger is what started the sync under Run (TriggerStart,
	// TriggerSignal, …); "" for a Sync called directly.
	Trigger string `json:"trigger,omitempty"`
	// Behind is how many events waited after the cursor when the sync
	// ended (at most 1000), as Run counts them; nil when not counted.
	Behind *int `json:"behind,omitempty"`
}

// Move is one dataset's version change in a sync.
type Move struct {
	DatasetID string `json:"datasetId"`
	Table     string `json:"table"`
	From      int    `json:"from"`
	To        int    `json:"to"`
}

// Failure is why a dataset failed in a sync; its last good version stays.
type Failure struct {
	DatasetID string `json:"datasetId"`
	Reason    string `json:"reason"`
}

// MarshalJSON writes Duration as durationSeconds, and Failed,
// HeldForReview and Moves as [] when empty.
func (r SyncResult) MarshalJSON() ([]byte, error) {
	type plain SyncResult
	out := struct {
		plain
		DurationSeconds float64 `json:"durationSeconds"`
	}{plain(r), r.Duration.Seconds()}
	if out.Failed == nil {
		out.Failed = []string{}
	}
	if out.HeldForReview == nil {
		out.HeldForReview = []string{}
	}
	if out.Moves == nil {
		out.Moves = []Move{}
	}
	return json.Marshal(out)
}

// versions are the datasets' versions and tables, by id.
type versions map[string]*storage.Dataset

// held is the version the file holds of id: 0 when none, or removed.
func (vs versions) held(id string) int {
	d := vs[id]
	if d == nil || d.Status == storage.StatusRemoved {
		return 0
	}
	return d.Version
}

// heldVersions reads the datasets' versions, for the sync's Moves; nil
// when the registry cannot be read (the sync then reports no moves).
func (r *Replica) heldVersions(ctx context.Context) versions {
	ds, err := r.db.DatasetStates(ctx)
	if err != nil {
		return nil
	}
	out := make(versions, len(ds))
	for _, d := range ds {
		out[d.ID] = d
	}
	return out
}

// outcomes fills res's Moves (against before), Failures and Holds from
// the file as the sync left it. A read that fails leaves its part empty:
// the counts and Failed stay right.
func (r *Replica) outcomes(ctx context.Context, before versions, res *SyncResult) {
	if hs, err := readHolds(ctx, r.db); err == nil {
		res.Holds = hs
	} else {
		r.log.Warn("could not list the holds; `ploti-replica holds list` shows them", logs.Err(err))
	}
	after := r.heldVersions(ctx)
	if before == nil || after == nil {
		return
	}
	for id, d := range after {
		if from, to := before.held(id), after.held(id); from != to {
			res.Moves = append(res.Moves, Move{DatasetID: id, Table: d.Table, From: from, To: to})
		}
	}
	for id, b := range before {
		if after[id] == nil && before.held(id) != 0 {
			res.Moves = append(res.Moves, Move{DatasetID: id, Table: b.Table, From: b.Version})
		}
	}
	slices.SortFunc(res.Moves, func(a, b Move) int { return strings.Compare(a.DatasetID, b.DatasetID) })
	for _, id := range res.Failed {
		f := Failure{DatasetID: id, Reason: "failed"}
		if d := after[id]; d != nil && d.StatusReason != "" {
			f.Reason = d.StatusReason
		}
		res.Failures = append(res.Failures, f)
	}
}
