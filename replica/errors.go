package replica

import "errors"

var (
	// ErrWrongSubscription means the file already replicates another
	// subscription.
	ErrWrongSubscription = errors.New("file replicates another subscription")
	// ErrForeignCursor means the API refused the stored cursor as one it
	// never gave (400 invalid_input): the file's cursor does not belong to
	// this subscription or API.
	ErrForeignCursor = errors.New("stored cursor does not belong to this subscription")
	// ErrNotHeld means Release found no hold on the dataset.
	ErrNotHeld = errors.New("dataset is not held")
	// ErrPartial means the sync finished but some datasets failed; their
	// last good versions stay and the next sync tries them again.
	ErrPartial = errors.New("some datasets failed")
	// ErrStopped means Options.Stop was closed: Sync stopped between
	// transactions, with everything before it committed.
	ErrStopped = errors.New("sync stopped")
)
