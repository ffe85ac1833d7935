package fetch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// A 403 is a key that lacks a permission: ErrForbidden (which is also
// ErrUnauthorized), and PermissionNeeded names it in the docs' words:
// "Creating, changing and deleting one takes a workspace admin" and "Create
// a webhook for a subscription's events with an API key that has both the
// webhooks and feeds permissions".
func TestClient_403NamesThePermissionMissing(t *testing.T) {
	ctx := context.Background()
	em, _ := manageWorld(t)
	if err := em.AddKey("k_reader", "mem_reader", emulator.PermissionFeeds); err != nil {
		t.Fatal(err)
	}
	c, err := fetch.New(fetch.Options{BaseURL: em.URL(), APIKey: "k_reader"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateSubscription(ctx, ploti.SubscriptionSpec{Places: []string{"fl-orange"}}, fetch.NewIdempotencyKey())
	var ae *fetch.APIError
	if !errors.Is(err, fetch.ErrForbidden) || !errors.Is(err, fetch.ErrUnauthorized) || !errors.As(err, &ae) {
		t.Fatalf("create without admin: %v, want ErrForbidden", err)
	}
	if need := fetch.PermissionNeeded(ae.Method, ae.Path); !strings.Contains(need, "workspace admin") {
		t.Fatalf("create without admin needs %q, want a workspace admin", need)
	}
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/v1/webhooks", "webhooks permission"},
		{"GET", "/v1/webhooks", "feeds permission"},
		{"DELETE", "/v1/webhooks/wh_1", "feeds permission"},
		{"POST", "/v1/webhooks/wh_1/test", "feeds permission"},
		{"PATCH", "/v1/feeds/subscriptions/sub_1", "workspace admin"},
		{"DELETE", "/v1/feeds/subscriptions/sub_1", "workspace admin"},
		{"POST", "/v1/feeds/subscriptions/preview", ""},
		{"GET", "/v1/feeds/subscriptions/sub_1/manifest", ""},
	} {
		if got := fetch.PermissionNeeded(tc.method, tc.path); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("PermissionNeeded(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}
