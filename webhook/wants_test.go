package webhook_test

import (
	"time"

	"testing"

	"github.com/ploti-replica/ploti-replica/webhook"
)

// A member webhook's dataset.changed starts a sync (signals the Trigger)
// when Wants wants the dataset, and only then; without Wants it never
// does, as before.
func TestHandler_wantsSignalsForDatasetChanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wants  func(string) bool
		typ    string
		signal bool
	}{
		{"wanted dataset", func(id string) bool { return id == "ds_x" }, "dataset.changed", true},
		{"another dataset", func(id string) bool { return id == "ds_y" }, "dataset.changed", false},
		{"no Wants", nil, "dataset.changed", false},
		{"a request event is not dataset.changed", func(string) bool { return true }, "data_request.fulfilled", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trig := webhook.NewTrigger()
			var asked []string
			wants := tc.wants
			if wants != nil {
				wants = func(id string) bool { asked = append(asked, id); return tc.wants(id) }
			}
			h, err := webhook.NewHandler(webhook.HandlerOptions{Verifier: mustVerifier(t, testSecret, func() time.Time { return testNow }),
				Trigger: trig, Wants: wants})
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{h: h, trig: trig}
			code, res := f.serve(t, delivery{body: event("evt_1", tc.typ)}.request(t))
			if code != 200 || res != webhook.ResultOther {
				t.Fatalf("answer %d %s, want 200 %s", code, res, webhook.ResultOther)
			}
			if got := f.signalled(); got != tc.signal {
				t.Fatalf("signalled = %v, want %v (Wants asked about %v)", got, tc.signal, asked)
			}
		})
	}
}
