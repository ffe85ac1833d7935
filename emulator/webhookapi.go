package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// webhookJSON is a webhook as the API shows it.
func webhookJSON(h Webhook) map[string]any {
	var events any
	if h.Events != nil {
		events = h.Events
	}
	var header any
	if h.HeaderName != "" {
		header = map[string]any{"name": h.HeaderName}
	}
	out := map[string]any{
		"id": h.ID, "url": h.URL, "description": h.Description, "subscriptionId": nullIfEmpty(h.SubscriptionID),
		"events": events, "header": header, "enabled": !h.Disabled, "disabledReason": nullIfEmpty(h.DisabledReason),
		"createdAt": h.CreatedAt.Format(time.RFC3339),
	}
	if h.Secret != "" {
		out["secret"] = h.Secret
	}
	return out
}

// asAPIError maps the Go API's errors to API answers with the sentinel's
// status and code; the message drops "invalid input" and "not found", which
// the code says.
func asAPIError(err error) error {
	for _, m := range []struct {
		err    error
		status int
		code   string
	}{
		{ErrInvalid, http.StatusBadRequest, "invalid_input"},
		{ErrNotFound, http.StatusNotFound, "not_found"},
		{ErrOutsideCoverage, http.StatusConflict, "outside_coverage"},
		{ErrNotDeliverable, http.StatusConflict, "not_deliverable"},
		{ErrWatchLimit, http.StatusConflict, "watch_limit"},
		{ErrWebhookLimit, http.StatusConflict, "webhook_limit"},
		{ErrWebhookDisabled, http.StatusConflict, "webhook_disabled"},
	} {
		if errors.Is(err, m.err) {
			msg := err.Error()
			if m.status != http.StatusConflict {
				msg = strings.TrimSuffix(msg, ": "+m.err.Error())
			}
			return &apiError{m.status, m.code, msg}
		}
	}
	return err
}

func (e *Emulator) postWebhook(r *http.Request) (int, any, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return 0, nil, errInvalid("the body must be a JSON object")
	}
	// Strict, as a server may be: a field the create does not take (a
	// webhook's id or secret) is refused, not ignored.
	var spec WebhookSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return 0, nil, errInvalid("the body must be a JSON object of url, description, subscriptionId, events and header: " + err.Error())
	}
	if spec.SubscriptionID != "" {
		if err := needs(r, "creating a webhook for a subscription's events takes an API key with both the webhooks and feeds permissions",
			PermissionWebhooks, PermissionFeeds); err != nil {
			return 0, nil, err
		}
	} else if err := needs(r, "creating a webhook takes an API key with the webhooks permission", PermissionWebhooks); err != nil {
		return 0, nil, err
	}
	spec.Member = callerOf(r).member
	h, err := e.CreateWebhook(spec)
	if err != nil {
		return 0, nil, asAPIError(err)
	}
	return http.StatusCreated, webhookJSON(h), nil
}

// listWebhooks lists the key's member's webhooks; a subscription's only
// "for a key with the feeds permission".
func (e *Emulator) listWebhooks(r *http.Request) (int, any, error) {
	sub := r.URL.Query().Get("subscriptionId")
	k := callerOf(r)
	if sub != "" {
		if err := needs(r, "a subscription's webhooks show only for an API key with the feeds permission", PermissionFeeds); err != nil {
			return 0, nil, err
		}
	}
	out := []map[string]any{}
	for _, h := range e.Webhooks() {
		if h.Member == k.member && (sub == "" || h.SubscriptionID == sub) && (h.SubscriptionID == "" || k.has(PermissionFeeds)) {
			out = append(out, webhookJSON(h))
		}
	}
	return http.StatusOK, map[string]any{"webhooks": out}, nil
}

// callersWebhook checks that the request's key may touch a webhook: its
// member's (404 otherwise, as for one that does not exist), and a
// subscription's only with the feeds permission (403).
func (e *Emulator) callersWebhook(r *http.Request, what string) error {
	id, k := r.PathValue("id"), callerOf(r)
	for _, h := range e.Webhooks() {
		switch {
		case h.ID != id:
		case h.Member != k.member:
			return errNotFound("no such webhook")
		case h.SubscriptionID != "":
			return needs(r, what+" a subscription's webhook takes an API key with the feeds permission", PermissionFeeds)
		default:
			return nil
		}
	}
	return nil // DeleteWebhook and TestWebhook answer 404
}

func (e *Emulator) deleteWebhook(r *http.Request) (int, any, error) {
	if err := e.callersWebhook(r, "deleting"); err != nil {
		return 0, nil, err
	}
	if err := e.DeleteWebhook(r.PathValue("id")); err != nil {
		return 0, nil, asAPIError(err)
	}
	return http.StatusOK, map[string]any{"deleted": true}, nil
}

func (e *Emulator) testWebhook(r *http.Request) (int, any, error) {
	if err := e.callersWebhook(r, "testing"); err != nil {
		return 0, nil, err
	}
	msgID, err := e.TestWebhook(r.PathValue("id"))
	if err != nil {
		return 0, nil, asAPIError(err)
	}
	return http.StatusAccepted, map[string]any{"sent": true, "messageId": msgID}, nil
}
