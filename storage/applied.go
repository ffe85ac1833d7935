package storage

import (
	"context"
	"fmt"
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
