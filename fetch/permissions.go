package fetch

import (
	"net/http"
	"strings"
)

// PermissionNeeded says, in the docs' words, what a call Ploti refused
// with 403 takes, from its method and path (an APIError's), or "" when
// the docs name nothing for it:
//
//   - feed-events.txt: "Create a webhook for a subscription's events with
//     an API key that has both the webhooks and feeds permissions", and
//     "GET /v1/webhooks, DELETE /v1/webhooks/{webhookId} and POST
//     /v1/webhooks/{webhookId}/test ... show or touch a subscription's
//     webhooks only for a key with the feeds permission";
//   - subscriptions-manifest-files.txt: "Creating, changing and deleting
//     one takes a workspace admin."
func PermissionNeeded(method, path string) string {
	const subs, hooks = "/v1/feeds/subscriptions", "/v1/webhooks"
	_, sub, isSub := strings.Cut(path, subs)
	_, hook, isHook := strings.Cut(path, hooks)
	switch {
	case isSub && method == http.MethodPost && sub == "":
		return "a workspace admin's key (creating, changing and deleting a subscription takes a workspace admin)"
	case isSub && (method == http.MethodPatch || method == http.MethodDelete) && strings.Count(sub, "/") == 1:
		return "a workspace admin's key (creating, changing and deleting a subscription takes a workspace admin)"
	case isHook && method == http.MethodPost && hook == "":
		return "a key with the webhooks permission, and with the feeds permission too for a subscription's webhook"
	case isHook && (method == http.MethodGet || method == http.MethodDelete || method == http.MethodPost):
		return "a key with the feeds permission (a subscription's webhooks show, and can be deleted or tested, only for such a key)"
	}
	return ""
}
