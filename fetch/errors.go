package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors for what callers branch on. Check them with errors.Is;
// every error the Client returns for an HTTP answer is an *APIError that
// unwraps to one of these.
var (
	// ErrInvalidInput is 400 invalid_input (and any other 400): a bad
	// argument, or a cursor past the subscription's newest event.
	ErrInvalidInput = errors.New("invalid input")
	// ErrUnauthorized is 401, or 403 from the API (not from a file link):
	// the key is wrong, revoked or lacks a permission.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden is 403 from the API (not from a file link): the key
	// lacks a permission the call needs (PermissionNeeded says which). It
	// matches ErrUnauthorized too.
	ErrForbidden = fmt.Errorf("forbidden: %w", ErrUnauthorized)
	// ErrNotFound is 404 from the API (or, through ErrFileNotFound, from a
	// file host).
	ErrNotFound = errors.New("not found")
	// ErrFileNotFound is 404 from a file host. It matches ErrNotFound but
	// not ErrNoLongerDelivered: a missing file says nothing about the
	// subscription.
	ErrFileNotFound = fmt.Errorf("file %w", ErrNotFound)
	// ErrNotSubscribed is 409 not_subscribed.
	ErrNotSubscribed = errors.New("not subscribed")
	// ErrOutsideCoverage is 409 outside_coverage.
	ErrOutsideCoverage = errors.New("outside coverage")
	// ErrNotDeliverable is 409 not_deliverable.
	ErrNotDeliverable = errors.New("not deliverable")
	// ErrBusy is 409 busy: the subscription's datasets are changing.
	ErrBusy = errors.New("busy")
	// ErrWatchLimit is 409 watch_limit: the member watches 100 datasets
	// already (watch-and-webhooks.txt: "A member may watch 100 datasets").
	ErrWatchLimit = errors.New("watch limit reached")
	// ErrWebhookLimit is 409 webhook_limit: the member has 20 webhooks
	// already, subscription webhooks included.
	ErrWebhookLimit = errors.New("webhook limit reached")
	// ErrSubscriptionLimit is 409 subscription_limit: the workspace has the
	// 25 subscriptions it may have at a time (docs/decisions.md 17).
	ErrSubscriptionLimit = errors.New("subscription limit reached")
	// ErrConflict is a 409 with a code this package does not know.
	ErrConflict = errors.New("conflict")
	// ErrNoLongerDelivered is matched (errors.Is) by ErrNotSubscribed,
	// ErrOutsideCoverage, ErrNotDeliverable and ErrNotFound answers from the
	// API: the answers feed-events.txt reads as "the dataset has since left
	// your subscriptions". Whether a 404 means that is the caller's reading
	// (docs/wire.md 8.5: only for a version an event named). See IsDatasetGone.
	ErrNoLongerDelivered = errors.New("no longer delivered")
	// ErrExpired is 410 expired: a cursor or asOf older than retention.
	ErrExpired = errors.New("expired")
	// ErrPreconditionFailed is 412: a stale If-Match or revision.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrRateLimited is 429 rate_limited. It is retried after Retry-After.
	ErrRateLimited = errors.New("rate limited")
	// ErrPlanUnavailable is 503 plan_unavailable. It is retried after
	// Retry-After, or Options.PlanUnavailableWait without it.
	ErrPlanUnavailable = errors.New("plan unavailable")
	// ErrServer is any other 5xx. It is retried.
	ErrServer = errors.New("server error")
	// ErrUnexpectedStatus is any other non-2xx answer. It is not retried.
	ErrUnexpectedStatus = errors.New("unexpected status")
	// ErrLinkExpired is 403 link_expired from a signed file link (and any
	// 403 from a file host that does not say link_invalid). Download asks
	// for a fresh link.
	ErrLinkExpired = errors.New("link expired")
	// ErrLinkInvalid is 403 link_invalid from a signed file link.
	ErrLinkInvalid = errors.New("link invalid")
	// ErrForeignLink is a links.version URL (or any API URL) that is not on
	// the API base URL's scheme, host and port: the key is never sent there.
	ErrForeignLink = errors.New("link not on the api host")
	// ErrDotSegment is an API URL whose path, once its escapes are read,
	// has a "." or ".." or empty segment: an id from the network ("..",
	// "a/../b" or "") that a server cleaning the path would take for
	// another endpoint. Nothing is sent.
	ErrDotSegment = errors.New("path would reach another endpoint")
	// ErrRedirect is a redirect to another host or from https to http.
	ErrRedirect = errors.New("redirect refused")
	// ErrChecksum is a downloaded file whose sha256 differs from its link's.
	ErrChecksum = errors.New("sha256 mismatch")
	// ErrSize is a downloaded file whose length differs from its link's bytes.
	ErrSize = errors.New("size mismatch")
	// ErrNotParquet is a downloaded .parquet file that is not a readable
	// Parquet file (no PAR1 magic at both ends, or a footer that does not
	// fit): usually a truncated file.
	ErrNotParquet = errors.New("not a parquet file")
	// ErrNoRanges is a file link that did not answer a Range request as
	// Stream needs (a 206 of exactly the bytes asked for): the caller
	// downloads the file whole instead.
	ErrNoRanges = errors.New("link does not serve byte ranges")
	// ErrMalformed is a 2xx answer whose body is not the JSON expected.
	ErrMalformed = errors.New("malformed response")
	// ErrUnnamableID is a record id that an ids= read cannot name (empty,
	// or holding the comma that separates ids): read the dataset whole.
	ErrUnnamableID = errors.New("record id cannot be named in a read by ids")
	// ErrRowsMoved is a read of rows whose pages could not be had at one
	// version after a few tries (its cursor expired, or the dataset moved
	// on between the reads of its ids).
	ErrRowsMoved = errors.New("rows moved to another version during the read")
	// ErrAmbiguous is a call that is not safe to repeat (creating a
	// webhook) failing after the request may have reached the server: the
	// connection was lost, or timed out, after sending, or a 5xx other than
	// 503 came back. It is not retried: find out first what the server did.
	ErrAmbiguous = errors.New("outcome unknown")
	// ErrStalled is a download that received no bytes for
	// Options.ReadIdleTimeout. It is retried.
	ErrStalled = errors.New("download stalled")
	// ErrIdleTimeout is an API answer of which no byte came for
	// Options.APIIdleTimeout (its headers or its body); ErrTotalTimeout
	// one that took longer than Options.APITotalTimeout whole. Both are
	// retried.
	ErrIdleTimeout  = errors.New("answer stalled")
	ErrTotalTimeout = errors.New("answer too slow")
)

// APIError is a non-2xx answer (or a 2xx answer that did not decode). It
// never holds the API key or a signed link's query string: Path is the
// URL's path only.
type APIError struct {
	Op      string // what the client was doing, e.g. "get manifest sub_1"
	Method  string // HTTP method
	Path    string // URL path, without the query string
	Status  int    // HTTP status code
	Code    string // the body's error.code, if any
	Message string // the body's error.message, if any (shortened, scrubbed)
	// RetryAfter is the Retry-After header's wait, or 0 without one.
	RetryAfter time.Duration
	// RetryAt is when Retry-After asked to come back, uncapped (up to a
	// century), or zero without one.
	RetryAt time.Time
	Err     error // the sentinel: ErrNotFound, ErrExpired, ...
}

// Error reads "get manifest sub_1: GET /v1/...: 410 expired: message".
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(e.Method)
	b.WriteString(" ")
	b.WriteString(e.Path)
	b.WriteString(": ")
	switch {
	case e.Status >= 200 && e.Status < 300 && e.Err != nil:
		b.WriteString(e.Err.Error())
	case e.Code != "":
		b.WriteString(strconv.Itoa(e.Status) + " " + e.Code)
	default:
		b.WriteString(strconv.Itoa(e.Status) + " " + strings.ToLower(http.StatusText(e.Status)))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel.
func (e *APIError) Unwrap() error { return e.Err }

// Is makes ErrNoLongerDelivered match the three 409 codes and 404.
func (e *APIError) Is(target error) bool {
	if target != ErrNoLongerDelivered {
		return false
	}
	switch e.Err {
	case ErrNotSubscribed, ErrOutsideCoverage, ErrNotDeliverable, ErrNotFound:
		return true
	}
	return false
}

// IsDatasetGone reports whether err is a 409 not_subscribed,
// outside_coverage or not_deliverable, or a 404: the answers that, for a
// version an event named, mean the dataset has since left the
// subscriptions (feed-events.txt, "Reading the log").
func IsDatasetGone(err error) bool { return errors.Is(err, ErrNoLongerDelivered) }

// IsTransient reports whether err is worth retrying later: a connection
// error or timeout, a 5xx, a 429 or a stalled download. Context
// cancellation is not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAmbiguous) {
		return false
	}
	var rb *RetryBudgetError
	if errors.As(err, &rb) {
		return false // Ploti asked for a wait past the budget: later, not now
	}
	switch {
	case errors.Is(err, ErrServer), errors.Is(err, ErrRateLimited),
		errors.Is(err, ErrPlanUnavailable), errors.Is(err, ErrStalled),
		errors.Is(err, ErrIdleTimeout), errors.Is(err, ErrTotalTimeout):
		return true
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return false // every other answer is permanent
	}
	switch {
	case errors.Is(err, ErrRedirect), errors.Is(err, ErrForeignLink),
		errors.Is(err, ErrChecksum), errors.Is(err, ErrSize),
		errors.Is(err, ErrNotParquet), errors.Is(err, ErrMalformed):
		return false
	}
	var (
		cve *tls.CertificateVerificationError
		hne x509.HostnameError
		uae x509.UnknownAuthorityError
		cie x509.CertificateInvalidError
	)
	if errors.As(err, &cve) || errors.As(err, &hne) || errors.As(err, &uae) || errors.As(err, &cie) {
		return false // a certificate will not fix itself between tries
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return true // dial, reset, header timeout
	}
	return errors.Is(err, errTransport)
}

// errTransport marks a failure reading a body mid-way (connection drop).
var errTransport = errors.New("connection lost")

// sentinelFor maps an HTTP status and error code to a sentinel. file is
// true for signed file links, where 403 means the link, not the key.
func sentinelFor(status int, code string, file bool) error {
	switch {
	case status == http.StatusBadRequest:
		return ErrInvalidInput
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusForbidden && file:
		if code == "link_invalid" {
			return ErrLinkInvalid
		}
		return ErrLinkExpired
	case status == http.StatusForbidden:
		return ErrForbidden
	case status == http.StatusNotFound && file:
		return ErrFileNotFound
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusConflict:
		return conflictFor(code)
	case status == http.StatusGone:
		return ErrExpired
	case status == http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status == http.StatusServiceUnavailable && code == "plan_unavailable":
		return ErrPlanUnavailable
	case status >= 500:
		return ErrServer
	}
	return ErrUnexpectedStatus
}

func conflictFor(code string) error {
	switch code {
	case "not_subscribed":
		return ErrNotSubscribed
	case "outside_coverage":
		return ErrOutsideCoverage
	case "not_deliverable":
		return ErrNotDeliverable
	case "busy":
		return ErrBusy
	case "watch_limit":
		return ErrWatchLimit
	case "webhook_limit":
		return ErrWebhookLimit
	case "subscription_limit":
		return ErrSubscriptionLimit
	}
	return ErrConflict
}

// redactURL returns scheme://host/path: no query string (a link's
// signature), no fragment, no user info.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// redactRawURL is redactURL for a string; an unparsable URL is hidden.
func redactRawURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable url>"
	}
	return redactURL(u)
}
