package fetch

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// Subscriptions lists the workspace's subscriptions.
func (c *Client) Subscriptions(ctx context.Context) ([]ploti.Subscription, error) {
	var out struct {
		Subscriptions []ploti.Subscription `json:"subscriptions"`
	}
	err := c.call(ctx, "list subscriptions", http.MethodGet, c.endpoint(nil, "v1", "feeds", "subscriptions"), nil,
		func(b []byte) error { return json.Unmarshal(b, &out) })
	return out.Subscriptions, err
}

// Webhooks lists the webhooks the key may see.
func (c *Client) Webhooks(ctx context.Context) ([]ploti.Webhook, error) {
	var out struct {
		Webhooks []ploti.Webhook `json:"webhooks"`
	}
	err := c.call(ctx, "list webhooks", http.MethodGet, c.endpoint(nil, "v1", "webhooks"), nil,
		func(b []byte) error { return json.Unmarshal(b, &out) })
	return out.Webhooks, err
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
