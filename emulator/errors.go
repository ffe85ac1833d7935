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
	// ErrOutsideCoverage: the workspace's coverage does not open the
	// dataset (the API's 409 outside_coverage).
	ErrOutsideCoverage = errors.New("outside the workspace's coverage")
	// ErrNotDeliverable: the workspace's plan does not open the dataset
	// (the API's 409 not_deliverable).
	ErrNotDeliverable = errors.New("not open to the workspace's plan")
	// ErrWatchLimit: the member already watches MaxWatches datasets (409
	// watch_limit).
	ErrWatchLimit = errors.New("watch limit reached")
	// ErrWebhookLimit: the member already has MaxWebhooks webhooks (409
	// webhook_limit).
	ErrWebhookLimit = errors.New("webhook limit reached")
	// ErrWebhookDisabled: the webhook is turned off (its receiver answered
	// 410, or its subscription was deleted) and is sent nothing, a test
	// ping included (409 webhook_disabled, docs/decisions.md 61).
	ErrWebhookDisabled = errors.New("webhook disabled")
)

// apiError is an error answer of the API: an HTTP status and the envelope's
// code and message.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }
