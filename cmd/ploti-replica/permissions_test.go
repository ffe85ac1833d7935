package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// A 403 says which permission the key lacks, in the docs' words:
// "Creating, changing and deleting one takes a workspace admin", "Create a
// webhook for a subscription's events with an API key that has both the
// webhooks and feeds permissions", and GET /v1/webhooks ... "show or touch
// a subscription's webhooks only for a key with the feeds permission".
func TestPermissions_a403NamesThePermissionMissing(t *testing.T) {
	em, _, vars := demoWorld(t)
	must(t, em.AddKey("k_hooks_only", "mem_ops", emulator.PermissionWebhooks))
	must(t, em.AddKey("k_feeds_only", "mem_ops", emulator.PermissionFeeds))
	with := func(key string) map[string]string {
		v := maps.Clone(vars)
		v["PLOTI_API_KEY"] = key
		return v
	}
	for _, tc := range []struct {
		name, key string
		args      []string
		want      []string
	}{
		{"create a subscription, no admin", "k_feeds_only", []string{"subscriptions", "create", "--place", "fl-orange"},
			[]string{"403 forbidden", "workspace admin"}},
		{"delete a subscription, no admin", "k_feeds_only", []string{"subscriptions", "delete", vars["PLOTI_SUBSCRIPTION"]},
			[]string{"403 forbidden", "workspace admin"}},
		{"a subscription's webhook, no feeds", "k_hooks_only", []string{"webhooks", "create", "--url", "https://example.org/hook"},
			[]string{"403 forbidden", "webhooks permission", "feeds permission"}},
		{"a member webhook, no webhooks", "k_feeds_only", []string{"webhooks", "create", "--member", "--url", "https://example.org/hook"},
			[]string{"403 forbidden", "webhooks permission"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, with(tc.key), tc.args...)
			if code == exitOK {
				t.Fatalf("exit 0, want a refusal")
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Fatalf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
	if len(em.Subscriptions()) != 1 {
		t.Fatal("a refused create or delete changed the subscriptions")
	}
}
