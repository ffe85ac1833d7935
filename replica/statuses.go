package replica

import "github.com/ploti-replica/ploti-replica/storage"

// DatasetStatuses are the values DatasetStatus.Status takes, in the
// order a summary lists them: current, pending, held, failed, removed.
func DatasetStatuses() []string {
	return []string{storage.StatusCurrent, storage.StatusPending, storage.StatusHeld, storage.StatusFailed, storage.StatusRemoved}
}
