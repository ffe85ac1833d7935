package emulator

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// sentAt is the webhook-timestamp of the first POST rc got.
func sentAt(t *testing.T, rc *receiver) time.Time {
	t.Helper()
	got := rc.requests()
	if len(got) == 0 {
		t.Fatal("the receiver got nothing")
	}
	sec, err := strconv.ParseInt(got[0].header.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(sec, 0)
}

// Under the manual clock, webhook-timestamp is the real time plus what
// Advance has added (a receiver checks it against its wall clock), while
// Delivery.At and the retries stay on the emulator clock.
func TestWebhook_timestampManualClock(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, func(int) int { return http.StatusInternalServerError })
	mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
	em.Advance(3 * time.Hour)
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustWait(t, em)
	if d := sentAt(t, rc).Sub(time.Now().Add(3 * time.Hour)); d < -10*time.Second || d > 2*time.Second {
		t.Fatalf("webhook-timestamp %s, want the real time plus 3h (off by %s)", sentAt(t, rc), d)
	}
	d := em.Deliveries()[0]
	if want := DefaultStart.Add(3 * time.Hour); !d.At.Equal(want) || !d.NextAttempt.Equal(want.Add(DeliveryRetryIntervals()[0])) {
		t.Fatalf("At %s NextAttempt %s, want the emulator clock %s and 5s after", d.At, d.NextAttempt, want)
	}
}

// With Options.Now set, webhook-timestamp is the emulator clock itself,
// Advance included.
func TestWebhook_timestampOptionsNow(t *testing.T) {
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	em := mustEmulatorWith(t, Options{Dir: t.TempDir(), NoRateLimit: true, Now: func() time.Time { return base }})
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, nil)
	mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
	em.Advance(time.Hour)
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustWait(t, em)
	if got, want := sentAt(t, rc), base.Add(time.Hour); !got.Equal(want) || !em.WebhookNow().Equal(want) {
		t.Fatalf("webhook-timestamp %s, WebhookNow %s; want the emulator clock %s", got, em.WebhookNow(), want)
	}
}
