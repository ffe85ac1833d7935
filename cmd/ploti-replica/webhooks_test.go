package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// "webhooks create --secret-file F never overwrites an
// existing F (the only copy of an older secret) and checks F is writable
// before it creates the webhook."
func TestWebhooksCreate_secretFile(t *testing.T) {
	em, _, vars := demoWorld(t)
	dir := t.TempDir()
	old := filepath.Join(dir, "whsec.txt")
	must(t, os.WriteFile(old, []byte("whsec_older\n"), 0o600))
	code, _, errs := cli(t, vars, "webhooks", "create", "--url", "https://example.org/hook", "--secret-file", old)
	if code != exitFailure || !strings.Contains(errs, "exists") || !strings.Contains(errs, "no webhook was created") {
		t.Fatalf("an existing file: exit %d %s", code, errs)
	}
	if b, _ := os.ReadFile(old); string(b) != "whsec_older\n" {
		t.Fatalf("the older secret was replaced: %q", b)
	}
	code, _, errs = cli(t, vars, "webhooks", "create", "--url", "https://example.org/hook", "--secret-file", filepath.Join(dir, "no-such-dir", "whsec.txt"))
	if code != exitFailure || !strings.Contains(errs, "cannot be written") {
		t.Fatalf("an unwritable file: exit %d %s", code, errs)
	}
	if got := len(em.Webhooks()); got != 0 {
		t.Fatalf("webhooks = %d, want none created", got)
	}
	// A create that Ploti refuses leaves no empty file behind.
	fresh := filepath.Join(dir, "fresh.txt")
	vars["PLOTI_SUBSCRIPTION"] = "sub_nope"
	if code, _, _ := cli(t, vars, "webhooks", "create", "--url", "https://example.org/hook", "--secret-file", fresh); code != exitFailure {
		t.Fatalf("a refused create: exit %d", code)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("a refused create left %s: %v", fresh, err)
	}
}

// The answer to the create is lost after Ploti made the webhook: the
// command ends with exactly one webhook, whose secret it wrote.
func TestWebhooksCreate_answerLost(t *testing.T) {
	em, _, vars := demoWorld(t)
	em.Inject(emulator.Fault{Match: "POST /v1/webhooks", Kind: emulator.FaultCutOff})
	secret := filepath.Join(t.TempDir(), "whsec.txt")
	out := mustCLI(t, vars, "webhooks", "create", "--url", "https://example.org/hook", "--secret-file", secret)
	hooks := em.Webhooks()
	if len(hooks) != 1 || !strings.Contains(out, "created webhook "+hooks[0].ID) {
		t.Fatalf("webhooks = %+v after:\n%s", hooks, out)
	}
	if b, err := os.ReadFile(secret); err != nil || !strings.HasPrefix(string(b), "whsec_") {
		t.Fatalf("secret file: %q %v", b, err)
	}
}

// docs/wire.md 9, "Member webhooks": "POST /v1/webhooks without
// subscriptionId makes a webhook that receives dataset.changed for every
// dataset its member watches and the member's request events". The body
// sent has no subscriptionId at all.
func TestWebhooksCreate_memberWebhook(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/webhooks" {
			http.NotFound(w, r)
			return
		}
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": "wh_1", "url": body["url"], "secret": "whsec_c2VjcmV0"})
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
	}{
		{"no subscription", map[string]string{}, nil},
		{"--member over PLOTI_SUBSCRIPTION", map[string]string{"PLOTI_SUBSCRIPTION": "sub_1"}, []string{"--member"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.vars["PLOTI_API_URL"], tc.vars["PLOTI_API_KEY"] = srv.URL, "k"
			tc.vars["PLOTI_DB"] = filepath.Join(dir, "none.duckdb")
			args := append([]string{"webhooks", "create", "--url", "https://example.org/member"}, tc.args...)
			out := mustCLI(t, tc.vars, args...)
			if !strings.Contains(out, "for your account") {
				t.Fatalf("create:\n%s", out)
			}
			mu.Lock()
			body := bodies[len(bodies)-1]
			mu.Unlock()
			if _, ok := body["subscriptionId"]; ok || body["url"] != "https://example.org/member" {
				t.Fatalf("body = %v, want no subscriptionId", body)
			}
		})
	}
}

// The same against the emulator, which serves member webhooks: without a
// subscription, or with --member over PLOTI_SUBSCRIPTION, the webhook is
// the member's.
func TestWebhooksCreate_memberWebhookOnTheEmulator(t *testing.T) {
	em, _, vars := demoWorld(t)
	mustCLI(t, vars, "webhooks", "create", "--url", "https://example.org/member", "--member")
	delete(vars, "PLOTI_SUBSCRIPTION")
	mustCLI(t, vars, "webhooks", "create", "--url", "https://example.org/member2")
	hooks := em.Webhooks()
	if len(hooks) != 2 || hooks[0].SubscriptionID != "" || hooks[1].SubscriptionID != "" {
		t.Fatalf("webhooks = %+v, want two member webhooks", hooks)
	}
}

// feed-events.txt: "A filter that leaves out feed.dataset.added or
// feed.dataset.schema_changed never tells you about new datasets or schema
// changes." A subscription webhook made with such a filter is made, with a
// warning that says so; one whose filter keeps both, or none, has none.
func TestWebhooksCreate_filterWarning(t *testing.T) {
	em, _, vars := demoWorld(t)
	code, _, errs := cli(t, vars, "webhooks", "create", "--url", "https://example.org/a", "--events", "feed.dataset.updated,feed.dataset.added")
	if code != exitOK || !strings.Contains(errs, "leaves out feed.dataset.schema_changed") || strings.Contains(errs, "leaves out feed.dataset.added") {
		t.Fatalf("a filter without schema_changed: exit %d, stderr %q", code, errs)
	}
	code, _, errs = cli(t, vars, "webhooks", "create", "--url", "https://example.org/b",
		"--events", "feed.dataset.added,feed.dataset.schema_changed,feed.dataset.updated")
	if code != exitOK || strings.Contains(errs, "warning") {
		t.Fatalf("a filter with both: exit %d, stderr %q", code, errs)
	}
	if code, _, errs = cli(t, vars, "webhooks", "create", "--url", "https://example.org/c"); code != exitOK || strings.Contains(errs, "warning") {
		t.Fatalf("no filter: exit %d, stderr %q", code, errs)
	}
	if got := len(em.Webhooks()); got != 3 {
		t.Fatalf("webhooks = %d, want 3 made", got)
	}
}

// The audit of issue "webhooks commands are not like the others": `webhooks
// list|test|delete|create` take --max-attempts and put Ploti's errors in
// words as `watch` and `subscriptions` do (exit 1), a 404 on delete or test
// naming the webhook and the command that lists them.
func TestWebhooks_errorsInWords(t *testing.T) {
	em, _, vars := demoWorld(t)
	hook := mustCLI(t, vars, "webhooks", "create", "--url", "https://example.org/hook")
	id := strings.Fields(hook)[2]
	for _, tc := range []struct {
		name  string
		setup func()
		args  []string
		want  []string
	}{
		{"404 delete", nil, []string{"delete", "wh_nope"}, []string{"no webhook wh_nope", "`ploti-replica webhooks list` shows yours", "(404)"}},
		{"404 test", nil, []string{"test", "wh_nope"}, []string{"no webhook wh_nope", "`ploti-replica webhooks list` shows yours"}},
		{"429 list", func() { em.FailNext("GET /v1/webhooks", http.StatusTooManyRequests, 1) }, []string{"list"},
			[]string{"list webhooks: over Ploti's rate limit (429", "try again in 1 second"}},
		{"503 test", func() { em.FailNext("POST /v1/webhooks/*/test", http.StatusServiceUnavailable, 1) }, []string{"test", id},
			[]string{"test webhook " + id + ": Ploti cannot read your workspace's plan just now (503 plan_unavailable)"}},
		{"429 delete", func() { em.FailNext("DELETE /v1/webhooks/*", http.StatusTooManyRequests, 1) }, []string{"delete", id},
			[]string{"delete webhook " + id + ": over Ploti's rate limit (429"}},
		{"429 create", func() { em.FailNext("POST /v1/webhooks", http.StatusTooManyRequests, 1) }, []string{"create", "--url", "https://example.org/other"},
			[]string{"create webhook: over Ploti's rate limit (429"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			args := append([]string{"webhooks"}, tc.args...)
			code, out, errs := cli(t, vars, append(args, "--max-attempts", "1")...)
			if code != exitFailure {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailure, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Fatalf("stderr lacks %q:\n%s", w, errs)
				}
			}
			for _, raw := range []string{"/v1/webhooks", "gave up after", `"level"`} {
				if strings.Contains(errs, raw) {
					t.Fatalf("stderr has %q, not words:\n%s", raw, errs)
				}
			}
		})
	}
	if hooks := em.Webhooks(); len(hooks) != 1 || hooks[0].ID != id {
		t.Fatalf("webhooks = %+v, want %s alone", hooks, id)
	}
	if code, _, errs := cli(t, vars, "webhooks", "list", "--max-attempts", "0"); code != exitUsage || !strings.Contains(errs, "--max-attempts 0") {
		t.Fatalf("--max-attempts 0: exit %d %s", code, errs)
	}
}

// STYLE.md 15: the webhooks commands take --json as the other API commands
// do, with [] for no webhooks, and the secret left out when a file holds it.
func TestWebhooks_json(t *testing.T) {
	_, d, vars := demoWorld(t)
	if got := strings.TrimSpace(mustCLI(t, vars, "webhooks", "list", "--json")); got != "[]" {
		t.Fatalf("list --json with none = %s, want []", got)
	}
	secret := filepath.Join(t.TempDir(), "whsec.txt")
	var made map[string]any
	parseJSON(t, mustCLI(t, vars, "webhooks", "create", "--url", "https://example.org/hook", "--secret-file", secret, "--json"), &made)
	id, _ := made["id"].(string)
	if id == "" || made["subscriptionId"] != d.SubscriptionID || made["secretFile"] != secret || made["secret"] != nil {
		t.Fatalf("create --json = %v", made)
	}
	var hooks []map[string]any
	parseJSON(t, mustCLI(t, vars, "webhooks", "list", "--json"), &hooks)
	if len(hooks) != 1 || hooks[0]["id"] != id {
		t.Fatalf("list --json = %v", hooks)
	}
	mustCLI(t, vars, "webhooks", "create", "--member", "--url", "https://example.org/member")
	parseJSON(t, mustCLI(t, vars, "webhooks", "list", "--json", "--subscription", d.SubscriptionID), &hooks)
	if len(hooks) != 1 || hooks[0]["id"] != id {
		t.Fatalf("list --json --subscription (one of two webhooks) = %v", hooks)
	}
	// --subscription, which these took before, is taken and changes nothing.
	var sent, deleted map[string]any
	parseJSON(t, mustCLI(t, vars, "webhooks", "test", id, "--json", "--subscription", d.SubscriptionID), &sent)
	parseJSON(t, mustCLI(t, vars, "webhooks", "delete", id, "--json"), &deleted)
	if sent["id"] != id || sent["sent"] != true || deleted["id"] != id || deleted["deleted"] != true {
		t.Fatalf("test --json = %v, delete --json = %v", sent, deleted)
	}
}

// watch-and-webhooks.txt: "A webhook is an https address you control."
// `webhooks create` refuses any other address as a usage error before it
// calls Ploti, but for plain http to a loopback host (serve in a trial or
// a test).
func TestWebhooksCreate_httpsOnly(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		if r.Method == http.MethodGet {
			json.NewEncoder(w).Encode(map[string]any{"webhooks": []any{}})
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": "wh_1", "url": body["url"], "secret": "whsec_c2VjcmV0"})
	}))
	t.Cleanup(srv.Close)
	vars := map[string]string{"PLOTI_API_URL": srv.URL, "PLOTI_API_KEY": "k", "PLOTI_DB": filepath.Join(t.TempDir(), "none.duckdb")}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://example.org/hook", true},
		{"http://127.0.0.1:8790/ploti", true},
		{"http://127.9.9.9/ploti", true},
		{"http://localhost:8790/ploti", true},
		{"http://[::1]:8790/ploti", true},
		{"http://example.org/hook", false},
		{"http://10.0.0.1/hook", false},
		{"http://localhost.example.org/hook", false},
		{"ftp://example.org/hook", false},
		{"example.org/hook", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			mu.Lock()
			before := calls
			mu.Unlock()
			code, _, errs := cli(t, vars, "webhooks", "create", "--url", tc.url)
			mu.Lock()
			called := calls > before
			mu.Unlock()
			switch {
			case tc.ok && (code != exitOK || !called):
				t.Fatalf("exit %d, called Ploti %v, want it made: %s", code, called, errs)
			case !tc.ok && (code != exitUsage || called || !strings.Contains(errs, "https address")):
				t.Fatalf("exit %d, called Ploti %v, want a usage error naming the https rule: %s", code, called, errs)
			}
		})
	}
}

// "Deleting a subscription stops its events and its webhooks"
// (subscriptions-manifest-files.txt; decision 61): right after
// `subscriptions delete`, `webhooks list` shows its webhook off with the
// reason, and `webhooks test` says in words that nothing is sent to it.
func TestWebhooks_subscriptionDeleted(t *testing.T) {
	_, d, vars := demoWorld(t)
	id := strings.Fields(mustCLI(t, vars, "webhooks", "create", "--url", "https://example.org/hook"))[2]
	mustCLI(t, vars, "subscriptions", "delete", d.SubscriptionID)
	out := mustCLI(t, vars, "webhooks", "list")
	if !strings.Contains(out, id) || !strings.Contains(out, "no (the subscription was deleted)") {
		t.Fatalf("list after the subscription's delete:\n%s", out)
	}
	code, _, errs := cli(t, vars, "webhooks", "test", id)
	for _, want := range []string{"test webhook " + id, "is turned off", "409 webhook_disabled", "delete it and create another"} {
		if code != exitFailure || !strings.Contains(errs, want) {
			t.Fatalf("test after the subscription's delete: exit %d: %s; want it to say %q", code, errs, want)
		}
	}
}
