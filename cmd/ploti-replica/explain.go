package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
)

// explained is an API error put in words, with what to do; it keeps the
// error it explains for errors.Is and the exit code.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// explain puts an API error of the management commands in words: what
// Ploti said (the docs' codes), and what to do. what names the thing asked
// for ("subscription sub_1"). Errors that are not API answers come back
// as they are.
func explain(err error, what string) error {
	var ae *fetch.APIError
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	say := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if ae.Message != "" {
			msg += " (Ploti said: " + ae.Message + ")"
		}
		return &explained{msg: msg, err: err}
	}
	var rb *fetch.RetryBudgetError
	switch {
	case errors.As(err, &rb):
		return say("%s: Ploti asked to come back at %s (%d %s), later than a command waits on Retry-After (%s): run it again after that time",
			what, rb.At.UTC().Format(time.RFC3339), ae.Status, orDash(ae.Code), rb.Budget)
	case errors.Is(err, fetch.ErrInvalidInput):
		return say("%s: Ploti refused the request as invalid (400 %s)", what, orDash(ae.Code))
	case errors.Is(err, fetch.ErrForbidden):
		need := fetch.PermissionNeeded(ae.Method, ae.Path)
		if need == "" {
			need = "check the key's permissions in Ploti"
		} else {
			need = "it takes " + need
		}
		return say("%s: Ploti refused it: the API key lacks a permission (403 %s); %s", what, orDash(ae.Code), need)
	case errors.Is(err, fetch.ErrUnauthorized):
		return say("%s: Ploti refused the API key (%d): check PLOTI_API_KEY, and that the key has the feeds permission (creating, changing and deleting a subscription takes a workspace admin)", what, ae.Status)
	case errors.Is(err, fetch.ErrNotFound):
		return say("%s: not found (404)", what)
	case errors.Is(err, fetch.ErrOutsideCoverage):
		return say("%s: a place or dataset is outside your workspace's coverage (409 outside_coverage); `ploti-replica places` lists the places you have", what)
	case errors.Is(err, fetch.ErrNotDeliverable):
		return say("%s: Ploti cannot deliver a dataset you named to your workspace (409 not_deliverable); `ploti-replica datasets list` lists the ones it can", what)
	case errors.Is(err, fetch.ErrNotSubscribed):
		return say("%s: none of the workspace's subscriptions delivers this dataset (409 not_subscribed)", what)
	case errors.Is(err, fetch.ErrBusy):
		return say("%s: the subscription's datasets are changing just now (409 busy): try again in a moment", what)
	case errors.Is(err, fetch.ErrSubscriptionLimit):
		return say("%s: the workspace already has the 25 subscriptions it may have at a time (409 subscription_limit): delete one to make room (`subscriptions list`, `subscriptions delete ID`), or widen one with `subscriptions update`", what)
	case errors.Is(err, fetch.ErrConflict):
		return say("%s: Ploti refused it as a conflict (409 %s)", what, orDash(ae.Code))
	case errors.Is(err, fetch.ErrPreconditionFailed):
		return say("%s: the subscription changed since it was read: someone else edited it (412 precondition_failed)", what)
	case errors.Is(err, fetch.ErrRateLimited):
		return say("%s: over Ploti's rate limit (429: 120 calls a minute a key; creating, changing or previewing a subscription and getting a manifest also count toward 20 a minute), still after waiting: try again in %s", what, retryIn(ae))
	case errors.Is(err, fetch.ErrPlanUnavailable):
		return say("%s: Ploti cannot read your workspace's plan just now (503 plan_unavailable): try again in %s", what, retryIn(ae))
	case errors.Is(err, fetch.ErrServer):
		return say("%s: Ploti answered %d, still after retrying: try again later", what, ae.Status)
	}
	return err
}

// explainUnreachable puts in words what keeps a command that reads the
// feed (sync, status --behind) from Ploti after its retries: a rate limit,
// a plan Ploti cannot read, a server error, a refused key. Other errors
// (a dataset's, a subscription not found, the file's) keep their own
// words.
func explainUnreachable(err error, what string) error {
	for _, e := range []error{fetch.ErrRateLimited, fetch.ErrPlanUnavailable, fetch.ErrServer, fetch.ErrUnauthorized} {
		if errors.Is(err, e) {
			return explain(err, what)
		}
	}
	return err
}

// retryIn is the answer's Retry-After in words, or "a minute".
func retryIn(ae *fetch.APIError) string {
	if ae.RetryAfter <= 0 {
		return "a minute"
	}
	s := int(math.Ceil(ae.RetryAfter.Seconds()))
	if s == 1 {
		return "1 second"
	}
	return fmt.Sprintf("%d seconds", s)
}
