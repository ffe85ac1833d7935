package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// Subscriptions lists the workspace's subscriptions.
func (c *Client) Subscriptions(ctx context.Context) ([]ploti.Subscription, error) {
	var out []ploti.Subscription
	err := c.call(ctx, "list subscriptions", http.MethodGet, c.endpoint(nil, "v1", "feeds", "subscriptions"), nil,
		func(b []byte) error { return decodeList(b, "subscriptions", &out) })
	return out, err
}

// Webhooks lists the webhooks the key may see.
func (c *Client) Webhooks(ctx context.Context) ([]ploti.Webhook, error) {
	var out []ploti.Webhook
	err := c.call(ctx, "list webhooks", http.MethodGet, c.endpoint(nil, "v1", "webhooks"), nil,
		func(b []byte) error { return decodeList(b, "webhooks", &out) })
	return out, err
}

// decodeList reads a list whose shape docs/wire.md leaves open (GET
// /v1/webhooks, GET /v1/feeds/subscriptions: "shapes: choice"): the
// object {"<key>": [...]} every other list of the API answers, or a bare
// array.
func decodeList[T any](b []byte, key string, out *[]T) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return json.Unmarshal(t, out)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	list, ok := obj[key]
	if !ok {
		return fmt.Errorf("the answer has no %q list", key)
	}
	return json.Unmarshal(list, out)
}

// DeleteWebhook deletes a webhook.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.call(ctx, "delete webhook "+id, http.MethodDelete, c.endpoint(nil, "v1", "webhooks", id), nil,
		func([]byte) error { return nil })
}

// TestWebhook asks Ploti to send one signed ping to the webhook now.
func (c *Client) TestWebhook(ctx context.Context, id string) error {
	return c.call(ctx, "test webhook "+id, http.MethodPost, c.endpoint(nil, "v1", "webhooks", id, "test"), struct{}{},
		func([]byte) error { return nil })
}
