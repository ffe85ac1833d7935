package apply

import (
	"errors"
	"fmt"
)

var (
	// ErrGone means the API answered 409 (not_subscribed, outside_coverage,
	// not_deliverable) or 404 for a version an event named: the dataset has
	// since left the subscription. Source implementations wrap their errors
	// with it.
	ErrGone = errors.New("dataset no longer delivered")
	// ErrBadInput means a file or answer for the dataset is unusable
	// (malformed JSON, corrupt or truncated Parquet, a checksum that does
	// not match, rows that break the key). The dataset fails; others go on.
	ErrBadInput = errors.New("bad input")
	// ErrNoCurrent means the dataset has no released version to reload.
	ErrNoCurrent = errors.New("dataset has no released version")
	// ErrExpired means the API answered 410 expired for a version or its
	// files: it is past retention. Source implementations wrap their
	// errors with it.
	ErrExpired = errors.New("past retention")
)

// ErrRetryPage says that a merge in the batch's transaction failed, which
// aborted the transaction with everything the page had done in it: the
// walk applies the page again, with Batch.Share off.
var ErrRetryPage = errors.New("a merge in the page's transaction failed")

var (
	// ErrVersionGone means the watch API no longer has a version's
	// changes (410: older than 90 days): the dataset is read again whole.
	ErrVersionGone = errors.New("version's changes past retention")
	// ErrReadWhole means a read of rows by id cannot be made (an id the
	// API cannot name, rows that kept moving): the dataset is read whole.
	ErrReadWhole = errors.New("rows cannot be read by id")
	// ErrLeftCoverage and ErrPlanClosed mean the workspace's coverage
	// (409 outside_coverage) or plan (409 not_deliverable) no longer
	// opens a watched dataset ("Any kind of dataset can be watched ... as
	// long as your workspace's coverage and plan open it"): its rows stay
	// and stop updating, marked removed with the docs' own reasons
	// left_coverage and plan_changed, and a later version is tried again.
	ErrLeftCoverage = errors.New("the workspace's coverage no longer opens the dataset")
	ErrPlanClosed   = errors.New("the workspace's plan no longer opens the dataset")
)

// Error is a failure to apply an event to a dataset.
type Error struct {
	Op        string // load, merge, reload, alter, hold …
	DatasetID string
	Version   int
	EventID   string
	Err       error
}

func (e *Error) Error() string {
	s := e.Op + " " + e.DatasetID
	if e.Version > 0 {
		s += fmt.Sprintf(" v%d", e.Version)
	}
	if e.EventID != "" {
		s += " (" + e.EventID + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// notGone reads an ErrGone from anything but the version an event named
// (the dataset's current version in a reload, a version followed back
// for its id map) as an error of the dataset: the text stays, the meaning
// "the dataset has left" does not (docs/wire.md 8.5).
func notGone(err error) error {
	if errors.Is(err, ErrGone) {
		return errors.New(err.Error())
	}
	return err
}
