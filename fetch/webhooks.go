package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// CreateWebhook creates a webhook: for a subscription's feed events, or,
// without SubscriptionID, a member webhook (dataset.changed for the
// datasets the member watches, and the member's request events). The
// answer carries the signing secret, once: keep it.
//
// It never leaves two webhooks, nor one whose signing secret nobody
// holds. Ploti shows the secret only in the answer to the create, and the
// create takes no idempotency key, so a try that fails after the request
// may have reached Ploti (ErrAmbiguous: the connection lost or timed out
// after sending, a 5xx) is never blindly retried. The client lists the
// member's webhooks before its first try; after an ambiguous failure it
// lists them again, recognises the one the try made as a webhook to the
// same URL and subscription that was not there before, deletes it (its
// secret went with the lost answer) and tries again, at most MaxAttempts
// times in all. The description is the caller's, as given (decision 18).
// When the list before cannot be read, the create is tried once.
func (c *Client) CreateWebhook(ctx context.Context, w ploti.Webhook) (*ploti.Webhook, error) {
	ctx = withBudget(ctx)
	// Without that list (it could not be read), a lost answer is not
	// recovered: the error says what to look for.
	var had map[string]bool
	before, listErr := c.Webhooks(ctx)
	if listErr == nil {
		had = map[string]bool{}
		for _, h := range before {
			had[h.ID] = true
		}
	}
	b := c.newBackoff()
	for attempt := 1; ; attempt++ {
		hook, err := c.createWebhook(ctx, w)
		if err == nil {
			return hook, nil
		}
		if !errors.Is(err, ErrAmbiguous) {
			return nil, err
		}
		if had == nil {
			return nil, fmt.Errorf("%w (a webhook to %s may exist without its secret: see webhooks list and delete it; the list before the create could not be read: %w)", err, w.URL, listErr)
		}
		if gone, ferr := c.forgetLostWebhook(ctx, w, had); ferr != nil {
			return nil, fmt.Errorf("%w; then, finding out whether it was created: %w", err, ferr)
		} else if len(gone) > 0 {
			c.log.Warn("the answer to a create was lost: deleted the webhook it made, whose secret went with it",
				slog.String(logOp, "create webhook"), slog.Any("webhook", gone))
		}
		if attempt >= c.maxAttempts {
			return nil, fmt.Errorf("%w (%s; none left a webhook)", err, gaveUp(attempt))
		}
		if perr := c.pause(ctx, err, c.waitFor(err, b)); perr != nil {
			return nil, perr
		}
	}
}

// createWebhook is one POST /v1/webhooks, never repeated after it may have
// reached the server.
func (c *Client) createWebhook(ctx context.Context, w ploti.Webhook) (*ploti.Webhook, error) {
	var out ploti.Webhook
	x := exchange{op: "create webhook", method: http.MethodPost, url: c.endpoint(nil, "v1", "webhooks"), body: webhookCreateBody(w), once: true}
	err := c.send(ctx, x, func(b []byte, _ http.Header) error {
		return decodeChecked(&out, func() bool { return out.ID != "" }, "webhook has no id")(b)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// webhookCreate is POST /v1/webhooks's body: the fields docs/wire.md 6
// lists, no more (a webhook's id, secret, state and time are the
// answer's, and a strict server refuses a field it does not take).
type webhookCreate struct {
	URL            string               `json:"url"`
	Description    string               `json:"description,omitempty"`
	SubscriptionID string               `json:"subscriptionId,omitempty"`
	Events         []string             `json:"events,omitempty"`
	Header         *ploti.WebhookHeader `json:"header,omitempty"`
}

func webhookCreateBody(w ploti.Webhook) webhookCreate {
	return webhookCreate{URL: w.URL, Description: w.Description, SubscriptionID: w.SubscriptionID, Events: w.Events, Header: w.Header}
}

// forgetLostWebhook finds the webhooks a lost try made (to w's URL and
// subscription, and not among had, the member's webhooks before the first
// try), if it made one, and deletes them; it returns their ids. Its errors
// name what to look for, so that the user can delete it by hand.
func (c *Client) forgetLostWebhook(ctx context.Context, w ploti.Webhook, had map[string]bool) ([]string, error) {
	hooks, err := c.Webhooks(ctx)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w (a webhook to %s may exist without its secret: delete it)", err, w.URL)
	}
	var gone []string
	for _, h := range hooks {
		if had[h.ID] || h.URL != w.URL || h.SubscriptionID != w.SubscriptionID {
			continue
		}
		if err := c.DeleteWebhook(ctx, h.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return gone, fmt.Errorf("delete webhook %s, created without its secret reaching us: %w (delete it yourself)", h.ID, err)
		}
		gone = append(gone, h.ID)
	}
	return gone, nil
}
