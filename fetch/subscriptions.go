package fetch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// PreviewQuery narrows a preview's page of datasets; zero fields leave it
// out (subscriptions-manifest-files.txt, "Preview before you subscribe").
type PreviewQuery struct {
	Q         string // title search
	Place     string
	Topic     string // "none" for datasets with no topic
	MatchedBy string // "places" or "datasetIds"
	Sort      string // place, title or updated
	Cursor    string
	Limit     int
}

// Preview asks what a subscription with spec's places, topics and
// datasetIds would deliver now, without creating one. It counts toward the
// stricter rate limit.
func (c *Client) Preview(ctx context.Context, spec ploti.SubscriptionSpec, q PreviewQuery) (*ploti.Preview, error) {
	v := url.Values{}
	for k, val := range map[string]string{"q": q.Q, "place": q.Place, "topic": q.Topic, "matchedBy": q.MatchedBy, "sort": q.Sort, "cursor": q.Cursor} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	spec.Name = ""
	var p ploti.Preview
	err := c.call(ctx, "preview subscription", http.MethodPost, c.endpoint(v, "v1", "feeds", "subscriptions", "preview"), spec.Body(),
		decodeChecked(&p, func() bool { return p.Datasets != nil }, `no "datasets" list`))
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// NewIdempotencyKey returns a random key for CreateSubscription.
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "ploti-replica-" + hex.EncodeToString(b)
}

// CreateResult is a created subscription and how it came back.
type CreateResult struct {
	Subscription ploti.Subscription
	// Replayed is true when the answer is the first answer to an earlier
	// request with the same key (Idempotent-Replayed: true).
	Replayed bool
}

// CreateSubscription creates a subscription. key is its Idempotency-Key,
// sent with every try: "A retry with the same key within a day returns the
// first answer instead of creating twice", so a try that timed out or lost
// its connection after the server created it is retried safely. Pass the
// same key to a later call to retry it after this one gave up.
func (c *Client) CreateSubscription(ctx context.Context, spec ploti.SubscriptionSpec, key string) (*CreateResult, error) {
	if key == "" {
		return nil, fmt.Errorf("create subscription: %w: an Idempotency-Key is required", ErrInvalidInput)
	}
	var res CreateResult
	x := exchange{op: "create subscription", method: http.MethodPost, url: c.endpoint(nil, "v1", "feeds", "subscriptions"),
		body: spec.Body(), header: http.Header{"Idempotency-Key": {key}}}
	err := c.send(ctx, x, func(b []byte, h http.Header) error {
		if err := json.Unmarshal(b, &res.Subscription); err != nil {
			return err
		}
		if res.Subscription.ID == "" {
			return fmt.Errorf("subscription has no id")
		}
		res.Replayed = h.Get("Idempotent-Replayed") == "true"
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// UpdateSubscription changes a subscription: the fields patch sets replace
// the subscription's, the others are kept. revision is the one read (sent
// as If-Match): a stale one answers ErrPreconditionFailed ("Read the
// subscription again and resend"). A patch that changes nothing is refused
// before sending.
func (c *Client) UpdateSubscription(ctx context.Context, id string, revision int, patch ploti.SubscriptionPatch) (*ploti.Subscription, error) {
	op := "update subscription " + id
	if patch.Empty() {
		return nil, fmt.Errorf("%s: %w: the change names no field", op, ErrInvalidInput)
	}
	var s ploti.Subscription
	x := exchange{op: op, method: http.MethodPatch, url: c.endpoint(nil, "v1", "feeds", "subscriptions", id),
		body: patch.Body(), header: http.Header{"If-Match": {`"` + strconv.Itoa(revision) + `"`}}}
	err := c.send(ctx, x, func(b []byte, _ http.Header) error {
		return decodeChecked(&s, func() bool { return s.ID != "" }, "subscription has no id")(b)
	})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSubscription deletes a subscription. While its datasets are
// changing Ploti answers 409 busy, "try again in a moment"
// (subscriptions-manifest-files.txt): it does, after the answer's
// Retry-After or a backoff, up to the client's attempts, and returns
// ErrBusy when the subscription is still busy then.
func (c *Client) DeleteSubscription(ctx context.Context, id string) error {
	ctx = withBudget(ctx)
	b := c.newBackoff()
	for attempt := 1; ; attempt++ {
		var out struct {
			Deleted bool `json:"deleted"`
		}
		err := c.call(ctx, "delete subscription "+id, http.MethodDelete, c.endpoint(nil, "v1", "feeds", "subscriptions", id), nil,
			decodeChecked(&out, func() bool { return out.Deleted }, `answer does not say "deleted": true`))
		if !errors.Is(err, ErrBusy) || attempt >= c.maxAttempts {
			return err
		}
		wait := c.waitFor(err, b)
		c.log.Info("subscription busy: trying again in a moment",
			slog.String(logOp, "delete subscription "+id), slog.Int(logAttempt, attempt), logs.Ms(logWait, wait))
		if perr := c.pause(ctx, err, wait); perr != nil {
			return perr
		}
	}
}
