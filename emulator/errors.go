package emulator

import "errors"

// Errors the seeding, publishing and staff methods return; test them with
// errors.Is.
var (
	// ErrInvalid: an argument is malformed (bad schema, unknown column, empty
	// subscription).
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound: no such dataset, version, subscription or place.
	ErrNotFound = errors.New("not found")
	// ErrNotHeld: the dataset has no held version to release or discard.
	ErrNotHeld = errors.New("no held version")
	// ErrNotReleasable: the held version is a key_violation, which staff can
	// only discard.
	ErrNotReleasable = errors.New("held version can only be discarded")
	// ErrClosed: the emulator was closed.
	ErrClosed = errors.New("emulator closed")
)

// apiError is an error answer of the API: an HTTP status and the envelope's
// code and message.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }
