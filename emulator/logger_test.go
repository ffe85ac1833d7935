package emulator

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// logBuffer collects JSON log lines; slog handlers write from the
// emulator's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// find returns the first line whose fields hold all of want.
func (l *logBuffer) find(t *testing.T, want map[string]any) map[string]any {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		ok := true
		for k, v := range want {
			ok = ok && m[k] == v
		}
		if ok {
			return m
		}
	}
	t.Fatalf("no log line with %v in\n%s", want, l.String())
	return nil
}

// Options.Logger hears deliveries (a failure at warn with the webhook and
// the status or error), injected faults and publishes, and never a secret.
func TestEmulator_Logger(t *testing.T) {
	logs := &logBuffer{}
	const apiKey = "key-sekrit-4711"
	em := mustEmulatorWith(t, Options{Dir: t.TempDir(), NoRateLimit: true, APIKey: apiKey,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	failing, fine := mustReceiver(t, func(int) int { return http.StatusInternalServerError }), mustReceiver(t, nil)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there any more
	h500 := mustWebhook(t, em, WebhookSpec{URL: failing.srv.URL, SubscriptionID: sub,
		Header: &WebhookHeader{Name: "Authorization", Value: "Bearer header-sekrit"}})
	hGone := mustWebhook(t, em, WebhookSpec{URL: gone.URL + "/hook?token=url-sekrit", SubscriptionID: sub})
	hFine := mustWebhook(t, em, WebhookSpec{URL: fine.srv.URL, SubscriptionID: sub})
	mustPublish(t, em, permits(7, "P-"))
	mustWait(t, em)
	em.Inject(Fault{Match: "/files/**", Kind: FaultStatus, Status: http.StatusServiceUnavailable})
	link := snapshotURL(t, em).URL
	if st, _ := download(t, link); st != http.StatusServiceUnavailable {
		t.Fatalf("download: %d, want the injected 503", st)
	}

	failed := "emulator: webhook delivery failed"
	if m := logs.find(t, map[string]any{"msg": failed, "level": "WARN", "webhook": h500.ID}); m["status"] != 500.0 || m["next_attempt"] == nil {
		t.Fatalf("the 500 is logged %v, want its status and next attempt", m)
	}
	if m := logs.find(t, map[string]any{"msg": failed, "webhook": hGone.ID}); !strings.Contains(m["error"].(string), "refused") {
		t.Fatalf("the refused connection is logged %v, want its error", m)
	}
	logs.find(t, map[string]any{"msg": "emulator: webhook delivered", "level": "DEBUG", "webhook": hFine.ID, "status": 200.0})
	logs.find(t, map[string]any{"msg": "emulator: published", "level": "INFO", "dataset": dsPermits, "version": 1.0, "rows": 7.0})
	logs.find(t, map[string]any{"msg": "emulator: fault injected", "level": "DEBUG", "kind": "status"})
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{apiKey, "header-sekrit", "url-sekrit", u.Query().Get("sig"), "whsec_", h500.Secret, hGone.Secret, hFine.Secret} {
		if s == "" || strings.Contains(logs.String(), s) {
			t.Fatalf("secret %q is in the log (or empty):\n%s", s, logs.String())
		}
	}
}
