package emulator

// API keys and the workspace's members. Each key belongs to a member and
// carries permissions; the docs name three that the API checks:
//
//   - feeds-events.txt, "Webhooks for a subscription": "Create a webhook
//     for a subscription's events with an API key that has both the
//     webhooks and feeds permissions. Every new key has both." and "GET
//     /v1/webhooks, DELETE /v1/webhooks/{webhookId} and POST
//     /v1/webhooks/{webhookId}/test ... show or touch a subscription's
//     webhooks only for a key with the feeds permission."
//   - subscriptions-manifest-files.txt: "Any member can read the
//     workspace's subscriptions and what they deliver. Creating, changing
//     and deleting one takes a workspace admin." (PermissionAdmin: the
//     key's member is a workspace admin.)
//
// A member webhook (no subscription) takes the webhooks permission. Each
// webhook and watch belongs to the member whose key made it: "The webhook
// belongs to the member whose key created it. It stops when that member
// leaves the workspace" (RemoveMember), and the member's watches end then
// too. The default key (Options.APIKey) is DefaultMember's, with every
// permission, which is what the Go API's webhooks and watches belong to.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Permission is one permission of an API key.
type Permission string

// The permissions the API checks.
const (
	PermissionFeeds    Permission = "feeds"
	PermissionWebhooks Permission = "webhooks"
	PermissionAdmin    Permission = "admin"
)

// DefaultMember is the member of the default key, and of the webhooks and
// watches the Go API makes.
const DefaultMember = "mem_default"

// reasonMemberLeft is the disabledReason of a webhook whose member left.
const reasonMemberLeft = "the member who created it left the workspace"

// AllPermissions lists every permission, as a new key has them.
func AllPermissions() []Permission {
	return []Permission{PermissionFeeds, PermissionWebhooks, PermissionAdmin}
}

// apiKey is one key: its member and permissions.
type apiKey struct {
	member string
	perms  []Permission
}

func (k *apiKey) has(p ...Permission) bool {
	for _, x := range p {
		if !slices.Contains(k.perms, x) {
			return false
		}
	}
	return true
}

// AddKey adds an API key for member (DefaultMember when empty, a new
// member when unknown) with the given permissions, none when none are
// given. Adding a key again replaces its member and permissions. It
// returns ErrInvalid for an empty key, or for a member who left.
func (e *Emulator) AddKey(key, member string, perms ...Permission) error {
	if key == "" {
		return fmt.Errorf("add key: %w: empty key", ErrInvalid)
	}
	if member == "" {
		member = DefaultMember
	}
	for _, p := range perms {
		if !slices.Contains(AllPermissions(), p) {
			return fmt.Errorf("add key: %w: permission %q is not one of feeds, webhooks, admin", ErrInvalid, p)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.membersGone[member] {
		return fmt.Errorf("add key: %w: member %s left the workspace", ErrInvalid, member)
	}
	e.keys[key] = &apiKey{member: member, perms: slices.Clone(perms)}
	return nil
}

// RemoveMember is a member leaving the workspace: their keys stop working
// (401), their webhooks stop ("It stops when that member leaves the
// workspace": turned off, with the reason, and their queued messages
// dropped) and their watches end. It returns ErrNotFound for a member no
// key names, and is no error for one who already left.
func (e *Emulator) RemoveMember(member string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.membersGone[member] {
		return nil
	}
	known := member == DefaultMember
	for k, key := range e.keys {
		if key.member == member {
			known = true
			delete(e.keys, k)
		}
	}
	if !known {
		return fmt.Errorf("remove member %s: %w", member, ErrNotFound)
	}
	e.membersGone[member] = true
	e.endWatchesLocked(member)
	if w := e.webhooks; w != nil {
		w.mu.Lock()
		for _, id := range w.order {
			if h := w.hooks[id]; h.Member == member && !h.Disabled {
				w.disableLocked(h, reasonMemberLeft)
			}
		}
		w.notifyLocked()
		w.mu.Unlock()
	}
	return nil
}

// keyFor finds the key of an Authorization header, or nil.
func (e *Emulator) keyFor(auth string) *apiKey {
	key, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keys[key]
}

type callerKey struct{}

func withCaller(ctx context.Context, k *apiKey) context.Context {
	return context.WithValue(ctx, callerKey{}, k)
}

// callerOf is the key a request came with; the default key's rights when
// none is attached (a handler called outside wrap).
func callerOf(r *http.Request) *apiKey {
	if k, ok := r.Context().Value(callerKey{}).(*apiKey); ok {
		return k
	}
	return &apiKey{member: DefaultMember, perms: AllPermissions()}
}

// needs answers 403 forbidden when the request's key lacks a permission;
// what says what takes it, in the docs' words.
func needs(r *http.Request, what string, perms ...Permission) error {
	if callerOf(r).has(perms...) {
		return nil
	}
	return &apiError{http.StatusForbidden, "forbidden", what}
}
