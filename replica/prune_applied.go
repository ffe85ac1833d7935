package replica

import (
	"context"
	"log/slog"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/storage"
)

// pruneApplied deletes the ids of events applied longer ago than Ploti
// keeps events (storage.AppliedEventsKept), after the sync's commits: no
// walk can read those events again, so _ploti.applied_events stays as
// large as the log's last 90 days, not the file's whole life. Like the
// change log's pruning it is housekeeping: a failure is logged, and the
// next sync tries again.
func (r *Replica) pruneApplied(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	n, err := r.db.PruneAppliedEvents(ctx, r.db.Now().Add(-storage.AppliedEventsKept))
	switch {
	case err != nil:
		r.log.Warn("could not prune _ploti.applied_events; the next sync tries again", logs.Err(err))
	case n > 0:
		r.log.Debug("pruned _ploti.applied_events", slog.Int64("rows", n))
	}
}
