package emulator

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// do calls the API with key and returns the status and error code.
func do(t *testing.T, em *Emulator, key, method, path, body string) (int, string) {
	t.Helper()
	var eb errorBody
	resp := call(t, method, em.URL()+path, key, strings.NewReader(body), &eb)
	return resp.StatusCode, eb.Error.Code
}

// feed-events.txt: "Create a webhook for a subscription's events with an
// API key that has both the webhooks and feeds permissions", and "GET
// /v1/webhooks, DELETE /v1/webhooks/{webhookId} and POST
// /v1/webhooks/{webhookId}/test ... show or touch a subscription's
// webhooks only for a key with the feeds permission."
func TestKeys_aSubscriptionWebhookTakesTheWebhooksAndFeedsPermissions(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, nil)
	for key, perms := range map[string][]Permission{
		"k_feeds": {PermissionFeeds}, "k_hooks": {PermissionWebhooks}, "k_both": {PermissionFeeds, PermissionWebhooks},
	} {
		if err := em.AddKey(key, "mem_ops", perms...); err != nil {
			t.Fatal(err)
		}
	}
	subHook := fmt.Sprintf(`{"url": %q, "subscriptionId": %q}`, rc.srv.URL, sub)
	for _, tc := range []struct {
		key, body string
		want      int
	}{
		{"k_feeds", subHook, 403},
		{"k_hooks", subHook, 403},
		{"k_both", subHook, 201},
		{"k_feeds", fmt.Sprintf(`{"url": %q}`, rc.srv.URL), 403},
		{"k_hooks", fmt.Sprintf(`{"url": %q}`, rc.srv.URL), 201},
	} {
		if st, code := do(t, em, tc.key, "POST", "/v1/webhooks", tc.body); st != tc.want || (st == 403 && code != "forbidden") {
			t.Fatalf("%s creating %s: %d %s, want %d", tc.key, tc.body, st, code, tc.want)
		}
	}
	var subHookID string
	for _, h := range em.Webhooks() {
		if h.SubscriptionID == sub {
			subHookID = h.ID
		}
	}
	var list struct {
		Webhooks []struct {
			ID string `json:"id"`
		} `json:"webhooks"`
	}
	call(t, "GET", em.URL()+"/v1/webhooks", "k_hooks", nil, &list)
	if len(list.Webhooks) != 1 || list.Webhooks[0].ID == subHookID {
		t.Fatalf("a key without feeds lists %+v, want only the member webhook", list.Webhooks)
	}
	call(t, "GET", em.URL()+"/v1/webhooks", "k_both", nil, &list)
	if len(list.Webhooks) != 2 {
		t.Fatalf("a key with feeds lists %+v, want both of its member's", list.Webhooks)
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/webhooks?subscriptionId=" + sub},
		{"POST", "/v1/webhooks/" + subHookID + "/test"},
		{"DELETE", "/v1/webhooks/" + subHookID},
	} {
		if st, code := do(t, em, "k_hooks", tc.method, tc.path, ""); st != 403 || code != "forbidden" {
			t.Fatalf("%s %s without feeds: %d %s, want 403 forbidden", tc.method, tc.path, st, code)
		}
	}
	// "each belongs to the member whose key made it": another member's key
	// does not see or touch it.
	if st, _ := do(t, em, em.APIKey(), "DELETE", "/v1/webhooks/"+subHookID, ""); st != 404 {
		t.Fatalf("another member deleting it: %d, want 404", st)
	}
	if st, _ := do(t, em, "k_both", "DELETE", "/v1/webhooks/"+subHookID, ""); st != 200 {
		t.Fatalf("its member, with feeds, deleting it: %d", st)
	}
}

// subscriptions-manifest-files.txt: "Any member can read the workspace's
// subscriptions and what they deliver. Creating, changing and deleting one
// takes a workspace admin."
func TestKeys_creatingChangingAndDeletingASubscriptionTakesAWorkspaceAdmin(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	if err := em.AddKey("k_member", "mem_analyst", PermissionFeeds, PermissionWebhooks); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/feeds/subscriptions", `{"places": ["fl-orange"]}`},
		{"PATCH", "/v1/feeds/subscriptions/" + sub, `{"revision": 1, "name": "x"}`},
		{"DELETE", "/v1/feeds/subscriptions/" + sub, ""},
	} {
		if st, code := do(t, em, "k_member", tc.method, tc.path, tc.body); st != 403 || code != "forbidden" {
			t.Fatalf("%s %s by a member who is no admin: %d %s, want 403 forbidden", tc.method, tc.path, st, code)
		}
	}
	for _, path := range []string{"/v1/feeds/subscriptions", "/v1/feeds/subscriptions/" + sub, "/v1/feeds/subscriptions/" + sub + "/manifest"} {
		if st, _ := do(t, em, "k_member", "GET", path, ""); st != 200 {
			t.Fatalf("GET %s by any member: %d, want 200", path, st)
		}
	}
	if len(em.Subscriptions()) != 1 {
		t.Fatal("a refused create made a subscription")
	}
}

// feed-events.txt: "The webhook belongs to the member whose key created
// it. It stops when that member leaves the workspace". The member's
// watches end too, and their keys stop working; another member's
// webhooks go on.
func TestKeys_itStopsWhenThatMemberLeavesTheWorkspace(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(2, "P-"))
	if err := em.AddKey("k_bob", "mem_bob", AllPermissions()...); err != nil {
		t.Fatal(err)
	}
	bobs, stays := mustReceiver(t, nil), mustReceiver(t, nil)
	for _, body := range []string{fmt.Sprintf(`{"url": %q, "subscriptionId": %q}`, bobs.srv.URL, sub), fmt.Sprintf(`{"url": %q}`, bobs.srv.URL)} {
		if st, _ := do(t, em, "k_bob", "POST", "/v1/webhooks", body); st != 201 {
			t.Fatalf("bob creating a webhook: %d", st)
		}
	}
	if st, _ := do(t, em, "k_bob", "POST", "/v1/datasets/"+dsPermits+"/watch", ""); st != 200 {
		t.Fatalf("bob watching: %d", st)
	}
	mustWebhook(t, em, WebhookSpec{URL: stays.srv.URL, SubscriptionID: sub})
	if err := em.RemoveMember("mem_bob"); err != nil {
		t.Fatal(err)
	}
	mustPublish(t, em, permits(3, "P-"))
	mustWait(t, em)
	if n := len(bobs.requests()); n != 0 {
		t.Fatalf("bob's webhooks got %d POSTs after bob left", n)
	}
	if n := len(stays.requests()); n == 0 {
		t.Fatal("the webhook of a member who stays got nothing")
	}
	for _, h := range em.Webhooks() {
		if h.Member == "mem_bob" && (!h.Disabled || h.DisabledReason != reasonMemberLeft) {
			t.Fatalf("bob's webhook %+v, want off: %s", h, reasonMemberLeft)
		}
	}
	if w := em.WatchesOf("mem_bob"); len(w) != 0 {
		t.Fatalf("bob's watches %+v, want none", w)
	}
	if st, _ := do(t, em, "k_bob", "GET", "/v1/webhooks", ""); st != http.StatusUnauthorized {
		t.Fatalf("bob's key after bob left: %d, want 401", st)
	}
}

// watch-and-webhooks.txt: "each new version sends a dataset.changed event
// to all your webhooks": the webhooks of the members who watch it, not
// another member's.
func TestKeys_datasetChangedGoesToTheWebhooksOfTheMembersWhoWatch(t *testing.T) {
	em := mustEmulator(t)
	mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	if err := em.AddKey("k_bob", "mem_bob", AllPermissions()...); err != nil {
		t.Fatal(err)
	}
	bobs, mine := mustReceiver(t, nil), mustReceiver(t, nil)
	if st, _ := do(t, em, "k_bob", "POST", "/v1/webhooks", fmt.Sprintf(`{"url": %q}`, bobs.srv.URL)); st != 201 {
		t.Fatalf("bob's member webhook: %d", st)
	}
	mustWebhook(t, em, WebhookSpec{URL: mine.srv.URL})
	if _, err := em.WatchAs("mem_bob", dsPermits); err != nil {
		t.Fatal(err)
	}
	mustPublish(t, em, permits(2, "P-"))
	mustWait(t, em)
	if len(bobs.requests()) != 1 || len(mine.requests()) != 0 {
		t.Fatalf("dataset.changed: bob's webhook got %d, the default member's %d; want 1 and 0 (only bob watches)",
			len(bobs.requests()), len(mine.requests()))
	}
	if got := em.Watches(); len(got) != 0 {
		t.Fatalf("the default member's watches %+v, want none: bob's are bob's", got)
	}
}
