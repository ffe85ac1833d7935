package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWebhooksAndSubscriptions(t *testing.T) {
	_, d, vars := demoWorld(t)
	secret := filepath.Join(t.TempDir(), "secret")
	code, out, errs := cli(t, vars, "webhooks", "create", "--url", "https://example.invalid/ploti", "--header", "X-Token: abc", "--secret-file", secret)
	if code != exitOK || !strings.Contains(out, "created webhook") {
		t.Fatalf("create: exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(secret)
	if err != nil || !strings.HasPrefix(string(b), "whsec_") {
		t.Fatalf("secret file: %q %v", b, err)
	}
	if fi, _ := os.Stat(secret); fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v, want 0600", fi.Mode().Perm())
	}
	if strings.Contains(out, strings.TrimSpace(string(b))) {
		t.Fatal("with --secret-file the secret must not be printed")
	}
	id := strings.Fields(out)[2]
	_, out, _ = cli(t, vars, "webhooks", "list")
	if !strings.Contains(out, id) || !strings.Contains(out, d.SubscriptionID) || strings.Contains(out, "abc") {
		t.Fatalf("list (the header value is never shown again):\n%s", out)
	}
	if code, out, errs := cli(t, vars, "webhooks", "test", id); code != exitOK || !strings.Contains(out, "ping") {
		t.Fatalf("test: exit %d %s %s", code, out, errs)
	}
	if code, _, errs := cli(t, vars, "webhooks", "delete", id); code != exitOK {
		t.Fatalf("delete: exit %d %s", code, errs)
	}
	if _, out, _ := cli(t, vars, "webhooks", "list"); !strings.Contains(out, "no webhooks") {
		t.Fatalf("list after delete:\n%s", out)
	}
	if code, _, errs := cli(t, vars, "webhooks", "create"); code != exitUsage || !strings.Contains(errs, "--url") {
		t.Fatalf("create without --url: exit %d %s", code, errs)
	}
	if _, out, _ := cli(t, vars, "subscriptions", "list"); !strings.Contains(out, d.SubscriptionID) || !strings.Contains(out, "Central Florida") {
		t.Fatalf("subscriptions list:\n%s", out)
	}
}

// "A webhook made for a Data Feeds subscription receives only that
// subscription's feed events. Every other webhook receives these three
// kinds of event" (watch-and-webhooks.txt): `webhooks list` says which a
// webhook gets, not "all feed events" for a member's.
func TestWebhooksList_saysWhatEachWebhookReceives(t *testing.T) {
	_, d, vars := demoWorld(t)
	for _, args := range [][]string{
		{"webhooks", "create", "--url", "https://example.invalid/feed"},
		{"webhooks", "create", "--url", "https://example.invalid/member", "--member"},
	} {
		if code, out, errs := cli(t, vars, args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
	}
	_, out, _ := cli(t, vars, "webhooks", "list")
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "/feed"):
			if !strings.Contains(line, d.SubscriptionID) || !strings.Contains(line, "the subscription's feed events") {
				t.Errorf("the subscription's webhook: %q", line)
			}
		case strings.Contains(line, "/member"):
			if !strings.Contains(line, "dataset.changed, data_request.*, research_request.*") || strings.Contains(line, "feed events") {
				t.Errorf("the member's webhook: %q", line)
			}
		}
	}
	if !strings.Contains(out, "/feed") || !strings.Contains(out, "/member") {
		t.Fatalf("list:\n%s", out)
	}
}
