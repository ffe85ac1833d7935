package webhook

import (
	"errors"
	"net/http"
)

// Result is how the Handler answered one request; it labels the counters
// in Handler.Stats and the Observe callback, and is the "result" field of
// the JSON answer.
type Result string

// Results. Those before ResultBadMethod are answered 2xx.
const (
	// ResultOK is a new feed event: OnEvent was called and the Trigger
	// signalled. Answered 202.
	ResultOK Result = "ok"
	// ResultDuplicate is an event id seen within the Seen window. Answered
	// 200; nothing is called or signalled.
	ResultDuplicate Result = "duplicate"
	// ResultPing is a new test ping, passed to OnOther. Answered 200.
	ResultPing Result = "ping"
	// ResultOther is a new event that is not a feed event, passed to
	// OnOther. Answered 200.
	ResultOther Result = "other"
	// ResultBadMethod is a request other than POST. Answered 405.
	ResultBadMethod Result = "bad_method"
	// ResultTooLarge is a body over MaxBody. Answered 413, which Ploti does
	// not retry.
	ResultTooLarge Result = "too_large"
	// ResultBadBody is a body that could not be read. Answered 400.
	ResultBadBody Result = "bad_body"
	// ResultMissingHeaders is a delivery without all three webhook headers.
	// Answered 400.
	ResultMissingHeaders Result = "missing_headers"
	// ResultBadHeaders is a webhook-timestamp that is not Unix seconds.
	// Answered 400.
	ResultBadHeaders Result = "bad_headers"
	// ResultBadSignature is a delivery no v1 signature matches. Answered 401.
	ResultBadSignature Result = "bad_signature"
	// ResultTooOld is a timestamp older than the tolerance. Answered 401.
	ResultTooOld Result = "too_old"
	// ResultTooNew is a timestamp further ahead than the tolerance.
	// Answered 401.
	ResultTooNew Result = "too_new"
	// ResultBadJSON is a verified body that is not an event with an id and
	// a type. Answered 400.
	ResultBadJSON Result = "bad_json"
	// ResultNotKept is a new event that HandlerOptions.Keep could not
	// record. Answered 503, so that Ploti delivers it again.
	ResultNotKept Result = "not_kept"
)

// allResults lists every Result, for the counters.
var allResults = []Result{
	ResultOK, ResultDuplicate, ResultPing, ResultOther,
	ResultBadMethod, ResultTooLarge, ResultBadBody,
	ResultMissingHeaders, ResultBadHeaders, ResultBadSignature,
	ResultTooOld, ResultTooNew, ResultBadJSON, ResultNotKept,
}

// Results returns every Result, so that metrics can be registered before
// the first request.
func Results() []Result {
	return append([]Result(nil), allResults...)
}

// Status is the HTTP status the Handler answers for r: 2xx for a delivery
// it accepted or already had, 503 for one it could not keep, 4xx otherwise.
func (r Result) Status() int {
	switch r {
	case ResultNotKept:
		return http.StatusServiceUnavailable
	case ResultOK:
		return http.StatusAccepted
	case ResultDuplicate, ResultPing, ResultOther:
		return http.StatusOK
	case ResultBadMethod:
		return http.StatusMethodNotAllowed
	case ResultTooLarge:
		return http.StatusRequestEntityTooLarge
	case ResultBadSignature, ResultTooOld, ResultTooNew:
		return http.StatusUnauthorized
	}
	return http.StatusBadRequest
}

// verifyResult maps an error from Verifier.Verify to its Result.
func verifyResult(err error) Result {
	switch {
	case errors.Is(err, ErrMissingHeaders):
		return ResultMissingHeaders
	case errors.Is(err, ErrInvalidHeaders):
		return ResultBadHeaders
	case errors.Is(err, ErrTimestampTooOld):
		return ResultTooOld
	case errors.Is(err, ErrTimestampTooNew):
		return ResultTooNew
	}
	return ResultBadSignature
}
