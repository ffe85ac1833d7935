package replica

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/storage"
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
	// ErrStopped means StopSync (or Run's shutdown) stopped the walk between
	// transactions, with everything before it committed.
	ErrStopped = errors.New("sync stopped")
	// ErrClosed means the Replica was closed: every call after Close
	// returns it.
	ErrClosed = errors.New("replica is closed")
	// ErrSubscriptionGone means the API does not know the file's
	// subscription (404): it was deleted ("Deleting a subscription stops
	// its events and its webhooks"), or the key is another workspace's.
	// The file keeps the versions it holds; no later sync can move them:
	// replicate another subscription into a new file, or keep datasets
	// current with Options.Watch.
	ErrSubscriptionGone = errors.New("subscription not found")
	// ErrNothingToKeep means Open was given neither a subscription id
	// (Options.SubscriptionID) nor watches (Options.Watch): the replica
	// would keep nothing.
	ErrNothingToKeep = errors.New("nothing to keep: no subscription id and watches off")
)

// ErrNoDatasetHeld means Changes was asked about a dataset the file holds
// no version of.
var ErrNoDatasetHeld = errors.New("the file holds no version of the dataset")

// ErrVersionNotKept means a version a history does not hold was asked
// for: before it began (or before what --history-keep kept), or after
// the version held.
var ErrVersionNotKept = errors.New("version not in the dataset's history")

// ErrDiffers is for callers that turn a report with Differ > 0 into an
// error (the CLI's verify does): Verify itself returns the report and a
// nil error when it could compare, whatever it found.
var ErrDiffers = errors.New("datasets differ from the versions they hold")

// ErrUnknownDataset means VerifyOptions named a dataset the file does not hold.
var ErrUnknownDataset = errors.New("dataset not in the file")

// The storage layer's errors, as Open, OpenReader and their methods return
// them (wrapped: match them with errors.Is).
var (
	// ErrLocked means another process holds the file past the lock timeout.
	ErrLocked = storage.ErrLocked
	// ErrNoFile means there is no file to open (and none is created).
	ErrNoFile = storage.ErrNoFile
	// ErrNotReplica means the file or database holds no replica.
	ErrNotReplica = storage.ErrNotReplica
	// ErrNotDuckDB means the file is not a DuckDB file.
	ErrNotDuckDB = storage.ErrNotDuckDB
	// ErrStorageVersion means the file's DuckDB storage is newer than this
	// build reads.
	ErrStorageVersion = storage.ErrStorageVersion
	// ErrNewerFile and ErrOlderFile mean the file's _ploti migration is
	// not the one this build reads.
	ErrNewerFile = storage.ErrNewerFile
	ErrOlderFile = storage.ErrOlderFile
	// ErrNoDataset means the file does not know the dataset.
	ErrNoDataset = storage.ErrNoDataset
	// ErrNoFolder means the folder of a file to create is not there.
	ErrNoFolder = storage.ErrNoFolder
	// ErrFileOnly means what was asked for is kept in a DuckDB file only,
	// not yet in a database.
	ErrFileOnly = storage.ErrFileOnly
	// ErrNoHistory means the dataset keeps no history.
	ErrNoHistory = storage.ErrNoHistory
	// ErrDamaged means the file is damaged.
	ErrDamaged = storage.ErrDamaged
	// ErrPermission means the system refused the file or its folder to
	// this process (a *storage.PermissionError says which, and what was
	// needed).
	ErrPermission = storage.ErrPermission
	// ErrDiskFull means the disk is full.
	ErrDiskFull = storage.ErrDiskFull
	// ErrStaleWAL means the write-ahead log beside the file is not its own.
	ErrStaleWAL = storage.ErrStaleWAL
	// ErrBadData means the data read does not have the shape it must.
	ErrBadData = storage.ErrBadData
)

// subscriptionGone words a 404 from one of the subscription's endpoints
// (its events, its manifest) as ErrSubscriptionGone, with what it means
// for the file (the CLI adds what to run); other errors come back as they
// are.
func subscriptionGone(subID string, err error) error {
	if !errors.Is(err, fetch.ErrNotFound) || errors.Is(err, fetch.ErrFileNotFound) {
		return err
	}
	return fmt.Errorf("%w: Ploti does not know subscription %s: it was deleted, or your key belongs to another workspace; "+
		"the file keeps the versions it holds, and no sync can move them: %w", ErrSubscriptionGone, subID, withoutCall(err))
}

// callError is a fetch error told without fetch's name of the call ("get
// manifest sub_1: ", "get version ds_x v2: ") where the caller's own words
// name what was asked already: the endpoint and its answer stay, and
// errors.Is and errors.As see the fetch error whole.
type callError struct {
	text string
	err  error
}

func (e *callError) Error() string { return e.text }

// Unwrap returns the fetch error.
func (e *callError) Unwrap() error { return e.err }

// withoutCall drops the name of the call from an API answer's error
// (fetch.APIError.Op), so that a layer that names the subscription or the
// dataset itself does not say it twice; other errors come back as they
// are.
func withoutCall(err error) error {
	var ae *fetch.APIError
	if err == nil || !errors.As(err, &ae) || ae.Op == "" {
		return err
	}
	rest, ok := strings.CutPrefix(err.Error(), ae.Op+": ")
	if !ok {
		return err
	}
	return &callError{text: rest, err: err}
}
