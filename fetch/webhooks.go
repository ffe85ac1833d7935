package fetch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// nonceTag marks the description of a webhook CreateWebhook made, with
// the nonce of the try that made it.
const nonceTag = "ploti-replica create "

// CreateWebhook creates a webhook: for a subscription's feed events, or,
// without SubscriptionID, a member webhook (dataset.changed for the
// datasets the member watches, and the member's request events). The
// answer carries the signing secret, once: keep it.
//
// It never leaves two webhooks, nor one whose signing secret nobody holds. Ploti shows the secret only in the answer
// to the create, and the create takes no idempotency key, so a try that
// fails after the request may have reached Ploti (ErrAmbiguous: the
// connection lost or timed out after sending, a 5xx) is never blindly
// retried. The webhook's description carries a nonce of the try; after an
// ambiguous failure the client lists the member's webhooks, recognises its
// own by the URL and that nonce, deletes it (its secret went with the lost
// answer) and tries again, at most MaxAttempts times in all.
func (c *Client) CreateWebhook(ctx context.Context, w ploti.Webhook) (*ploti.Webhook, error) {
	b := c.newBackoff()
	for attempt := 1; ; attempt++ {
		try := w
		nonce := newNonce()
		try.Description = strings.TrimSpace(w.Description + " [" + nonceTag + nonce + "]")
		hook, err := c.createWebhook(ctx, try)
		if err == nil {
			return hook, nil
		}
		if !errors.Is(err, ErrAmbiguous) {
			return nil, err
		}
		if gone, ferr := c.forgetLostWebhook(ctx, try.URL, nonce); ferr != nil {
			return nil, fmt.Errorf("%w; then, finding out whether it was created: %w", err, ferr)
		} else if gone != "" {
			c.log.Warn().Str(logOp, "create webhook").Str("webhook", gone).Msg("the answer to a create was lost: deleted the webhook it made, whose secret went with it")
		}
		if attempt >= c.maxAttempts {
			return nil, fmt.Errorf("%w (gave up after %d attempts; none left a webhook)", err, attempt)
		}
		if serr := c.sleep(ctx, c.waitFor(err, b)); serr != nil {
			return nil, fmt.Errorf("%w (waiting to retry: %w)", err, serr)
		}
	}
}

// createWebhook is one POST /v1/webhooks, never repeated after it may have
// reached the server.
func (c *Client) createWebhook(ctx context.Context, w ploti.Webhook) (*ploti.Webhook, error) {
	var out ploti.Webhook
	x := exchange{op: "create webhook", method: http.MethodPost, url: c.endpoint(nil, "v1", "webhooks"), body: w, once: true}
	err := c.send(ctx, x, func(b []byte, _ http.Header) error {
		return decodeChecked(&out, func() bool { return out.ID != "" }, "webhook has no id")(b)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// forgetLostWebhook finds the webhook a try with nonce made, if it made
// one, and deletes it; it returns its id ("" when there was none). Its
// errors name the webhook, so that the user can delete it by hand.
func (c *Client) forgetLostWebhook(ctx context.Context, url, nonce string) (string, error) {
	hooks, err := c.Webhooks(ctx)
	if err != nil {
		return "", fmt.Errorf("list webhooks: %w (a webhook to %s whose description holds %q may exist without its secret: delete it)", err, url, nonce)
	}
	for _, h := range hooks {
		if h.URL != url || !strings.Contains(h.Description, nonceTag+nonce) {
			continue
		}
		if err := c.DeleteWebhook(ctx, h.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("delete webhook %s, created without its secret reaching us: %w (delete it yourself)", h.ID, err)
		}
		return h.ID, nil
	}
	return "", nil
}

func newNonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
