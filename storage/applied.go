package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ForgetAppliedEvents empties _ploti.applied_events: a rebootstrap moves
// the file to a fresh manifest's cursor, after which the ids recorded may
// be another log's.
func (tx *Tx) ForgetAppliedEvents(ctx context.Context) error {
	if _, err := tx.tx.ExecContext(ctx, "DELETE FROM _ploti.applied_events"); err != nil {
		return fmt.Errorf("forget applied events: %w", err)
	}
	return nil
}

// AppliedEventsKept is how long an applied event's id is kept: Ploti keeps
// events 90 days (docs/wire.md 4), so an event applied longer ago than
// that, a day of margin added, is no longer in the log, and no walk can
// read it again; a cursor older than that is expired (410), and the
// rebootstrap that follows forgets every id anyway. The ids only guard a
// replay of what the log still holds.
const AppliedEventsKept = 91 * 24 * time.Hour

// PruneAppliedEvents deletes the ids of events applied before before, in
// a transaction of its own, and returns how many; when there are none it
// writes nothing (a read, no commit).
func (db *DB) PruneAppliedEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM _ploti.applied_events WHERE applied_at < ?", before).Scan(&n); err != nil {
		return 0, fmt.Errorf("count old applied events: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, "DELETE FROM _ploti.applied_events WHERE applied_at < ?", before)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune applied events: %w", err)
	}
	return n, nil
}

// AppliedEvents returns which of ids are recorded as applied.
func (tx *Tx) AppliedEvents(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.tx.QueryContext(ctx, "SELECT event_id FROM _ploti.applied_events WHERE event_id IN ("+strings.Join(quoteAll(ids), ", ")+")")
	if err != nil {
		return nil, fmt.Errorf("read applied events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// MarkApplied records event ids as applied (or deliberately skipped).
func (tx *Tx) MarkApplied(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	vals := make([]string, len(ids))
	for i, id := range ids {
		vals[i] = "(" + Literal(id) + ")"
	}
	_, err := tx.tx.ExecContext(ctx, "INSERT INTO _ploti.applied_events (event_id, applied_at) SELECT v.id, ? FROM (VALUES "+
		strings.Join(vals, ", ")+") v(id)", tx.Now)
	if err != nil {
		return fmt.Errorf("record applied events: %w", err)
	}
	return nil
}

// IsApplied reports whether an event id was already applied.
func (db *DB) IsApplied(ctx context.Context, id string) (bool, error) {
	var n int
	err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM _ploti.applied_events WHERE event_id = ?", id).Scan(&n)
	return n > 0, err
}

// Reasons in _ploti.datasets.status_reason: the docs' own codes where they
// give one (removed: left_coverage, plan_changed, subscription_changed,
// no_longer_deliverable; delayed: schema_review, data_check, processing;
// manifest unavailable: rebuilding, building, held, failed,
// awaiting_release), and these for the replica's own states. A failed
// dataset's reason is the error, naming the file and the problem.
const (
	ReasonAwaitingFirstVersion = "awaiting_first_version" // added with version null
	ReasonMajorSchemaChange    = "major_schema_change"    // held locally for review
	ReasonStale                = "stale"                  // a source check was missed
	ReasonLeftSubscription     = "left_subscription"      // 409/404 from links.version: skipping until removed
	ReasonNotInManifest        = "not_in_manifest"        // a reload from the manifest no longer lists it
	ReasonRebuilding           = "rebuilding"             // the manifest lists its files as being rebuilt
	ReasonUnwatched            = "unwatched"              // a watched dataset no longer watched: its rows stay
	ReasonNotLoadedYet         = "not_loaded_yet"         // listed by the manifest, not loaded by a bootstrap that stopped
	// The docs' removed reasons the replica also gives a watched dataset
	// whose calls answer 409 outside_coverage or not_deliverable.
	ReasonLeftCoverage = "left_coverage"
	ReasonPlanChanged  = "plan_changed"
)
