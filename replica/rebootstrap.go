package replica

import (
	"context"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Rebootstrap reloads every dataset from a fresh manifest into the file,
// whatever its stored cursor, then walks the log from the manifest's
// eventCursor as Sync does. It is the way on when the API refuses the
// stored cursor (ErrForeignCursor: "A cursor past the subscription's
// newest event is not one it gave, and returns 400 invalid_input").
//
// Each dataset's table is swapped atomically, in a transaction with its
// registry row (small ones share one, as in any bootstrap); the file's other tables, and the columns of
// Options.IDReferences (rewritten through the id maps of the versions a
// reload passes), stay. A dataset held for review stays held; Ploti's
// hold on the next version of a dataset reloaded at the version it holds
// stays. The ids of the events applied before are forgotten first: they
// may be another log's, and the version rules skip a replay without them.
func (r *Replica) Rebootstrap(ctx context.Context) (SyncResult, error) {
	done, err := r.exclusive(ctx)
	if err != nil {
		return SyncResult{}, err
	}
	defer done()
	err = r.db.Update(ctx, func(tx *storage.Tx) error { return tx.ForgetAppliedEvents(ctx) })
	if err != nil {
		return SyncResult{}, err
	}
	r.rebootstrap = true
	defer func() { r.rebootstrap = false }()
	return r.syncExclusive(ctx)
}
