package replica

import (
	"errors"
	"fmt"

	"github.com/ploti-replica/ploti-replica/fetch"
)

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
	// ErrSubscriptionGone means the API does not know the file's
	// subscription (404): it was deleted ("Deleting a subscription stops
	// its events and its webhooks"), or the key is another workspace's.
	// The file keeps the versions it holds; no later sync can move them.
	ErrSubscriptionGone = errors.New("subscription not found")
)

// subscriptionGone words a 404 from one of the subscription's endpoints
// (its events, its manifest) as ErrSubscriptionGone, with what to do;
// other errors come back as they are.
func subscriptionGone(subID string, err error) error {
	if !errors.Is(err, fetch.ErrNotFound) || errors.Is(err, fetch.ErrFileNotFound) {
		return err
	}
	return fmt.Errorf("%w: Ploti does not know subscription %s: it was deleted, or your key belongs to another workspace; "+
		"the file keeps the versions it holds, and no sync can move them: `ploti-replica subscriptions list` shows your subscriptions "+
		"(replicate one into a new file with --subscription, or keep datasets current with `ploti-replica watch add`): %w", ErrSubscriptionGone, subID, err)
}
