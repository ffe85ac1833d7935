package webhook

import "errors"

// Errors that callers branch on with errors.Is. None of them, nor any error
// this package returns, contains the secret.
var (
	// ErrBadSecret means the signing secret is empty or is not base64 after
	// an optional "whsec_" prefix.
	ErrBadSecret = errors.New("bad webhook secret")

	// ErrMissingHeaders means webhook-id, webhook-timestamp or
	// webhook-signature is absent or empty.
	ErrMissingHeaders = errors.New("missing webhook headers")

	// ErrInvalidHeaders means webhook-timestamp is not a Unix time in whole
	// seconds written in canonical decimal form.
	ErrInvalidHeaders = errors.New("invalid webhook headers")

	// ErrInvalidSignature means no v1 signature in webhook-signature matches.
	ErrInvalidSignature = errors.New("invalid webhook signature")

	// ErrTimestampTooOld means webhook-timestamp is further in the past than
	// the tolerance (5 minutes by default).
	ErrTimestampTooOld = errors.New("webhook timestamp too old")

	// ErrTimestampTooNew means webhook-timestamp is further in the future
	// than the tolerance (5 minutes by default).
	ErrTimestampTooNew = errors.New("webhook timestamp too new")

	// ErrNoVerifier means HandlerOptions.Verifier is nil.
	ErrNoVerifier = errors.New("no webhook verifier")
)
