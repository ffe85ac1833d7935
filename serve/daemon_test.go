package serve

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// healthBody is /healthz's answer.
type healthBody struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Syncing bool   `json:"syncing"`
	Syncs   int    `json:"syncs"`
}

func TestDaemon_healthz(t *testing.T) {
	at := time.Now()
	old := at.Add(-time.Hour)
	tests := []struct {
		name       string
		h          health
		wantStatus int
		wantReason string
	}{
		{"syncing, making progress", health{Syncs: 1, LastResult: ResultOK, LastSuccessAt: &at, Syncing: true, progressAt: at.Add(-time.Minute)}, 200, ""},
		{"stuck", health{Syncs: 1, LastResult: ResultOK, LastSuccessAt: &at, Syncing: true, progressAt: at.Add(-31 * time.Minute)}, 503, "stuck: the sync under way has made no progress for 31m0s"},
		{"stale", health{Syncs: 1, LastResult: ResultOK, LastSuccessAt: &old}, 503, "stale: the last successful sync was 1h0m0s ago, more than the 45m0s"},
		{"starting", health{Behind: -1, Syncing: true}, 503, "no sync has finished yet"},
		{"ok", health{Syncs: 1, LastResult: ResultOK, LastSuccessAt: &at}, 200, ""},
		{"ok, behind not known", health{Syncs: 1, LastResult: ResultOK, Behind: -1}, 200, ""},
		{"behind", health{Syncs: 1, LastResult: ResultOK, Behind: 3}, 503, "behind: 3 event(s)"},
		{"failed", health{Syncs: 1, LastResult: ResultFailed, LastError: "read events of sub_1: boom"}, 503, "the last sync failed: read events of sub_1: boom"},
		{"partial", health{Syncs: 1, LastResult: ResultPartial, Failed: []string{"ds_a", "ds_b"}}, 503, "2 dataset(s) failed (ds_a, ds_b)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &Daemon{health: tc.h, now: func() time.Time { return at }, poll: 5 * time.Minute, stuck: 30 * time.Minute}
			rec := httptest.NewRecorder()
			d.healthz(rec, nil)
			var body healthBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if rec.Code != tc.wantStatus || !strings.Contains(body.Reason, tc.wantReason) || (tc.wantReason == "") != (body.Reason == "") {
				t.Fatalf("%d %+v, want %d with reason %q", rec.Code, body, tc.wantStatus, tc.wantReason)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Fatalf("Content-Type %q", got)
			}
		})
	}
}

// New refuses options that cannot work, in words and without the secret.
func TestNew_refuses(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	db := "feeds.duckdb"
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no db", Options{Poll: time.Minute}, "no DB"},
		{"nothing starts a sync", Options{DB: db}, "nothing would start a sync"},
		{"a pattern for a path", Options{DB: db, Webhook: Webhook{Path: "/hooks/{id}", Secret: secret}}, `webhook path "/hooks/{id}"`},
		{"healthz for a path", Options{DB: db, Webhook: Webhook{Path: "/healthz", Secret: secret}}, "other than /healthz"},
		{"one path for both", Options{DB: db, Webhook: Webhook{Secret: secret}, MemberWebhook: Webhook{Path: DefaultWebhookPath, Secret: secret}},
			"member webhook path"},
		{"a bad secret", Options{DB: db, Webhook: Webhook{Secret: "whsec_not*base64*at*all"}}, "want whsec_ followed by base64"},
		{"a negative poll", Options{DB: db, Poll: -time.Second}, "want 0 or more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "not*base64") || strings.Contains(err.Error(), "MfKQ9r8") {
				t.Fatalf("the secret is in the error: %v", err)
			}
		})
	}
	// Two daemons on one registry: the second's metrics are there already.
	reg := prometheus.NewRegistry()
	_, err := New(Options{DB: db, Poll: time.Minute, Registry: reg})
	must(t, err)
	if _, err := New(Options{DB: db, Poll: time.Minute, Registry: reg}); err == nil || !strings.Contains(err.Error(), "register the metrics") {
		t.Fatalf("a second daemon on the registry: %v, want an error", err)
	}
}
