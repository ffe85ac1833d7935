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
// "the dataset has left" does not (docs/wire.md 8.5; issue 13).
func notGone(err error) error {
	if errors.Is(err, ErrGone) {
		return errors.New(err.Error())
	}
	return err
}
