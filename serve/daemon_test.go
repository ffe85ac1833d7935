package serve

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
	tests := []struct {
		name       string
		h          health
		wantStatus int
		wantReason string
	}{
		{"starting", health{Behind: -1, Syncing: true}, 503, "no sync has finished yet"},
		{"ok", health{Syncs: 1, LastResult: ResultOK, LastSuccessAt: &at}, 200, ""},
		{"ok, behind not known", health{Syncs: 1, LastResult: ResultOK, Behind: -1}, 200, ""},
		{"behind", health{Syncs: 1, LastResult: ResultOK, Behind: 3}, 503, "behind: 3 event(s)"},
		{"failed", health{Syncs: 1, LastResult: ResultFailed, LastError: "read events of sub_1: boom"}, 503, "the last sync failed: read events of sub_1: boom"},
		{"partial", health{Syncs: 1, LastResult: ResultPartial, Failed: []string{"ds_a", "ds_b"}}, 503, "2 dataset(s) failed (ds_a, ds_b)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &Daemon{health: tc.h}
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
