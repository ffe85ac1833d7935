package storage

import (
	"context"
	"fmt"
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
