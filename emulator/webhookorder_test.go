package emulator

import (
	"context"
	"net/http"
	"testing"
)

// TestWebhook_orderKeptAcrossRetry guards feed-events.txt, "Order":
// "events for one dataset arrive in order". A dataset's event that
// waits for its retry holds back the dataset's later events on the same
// webhook, so the receiver never gets the second before the first.
func TestWebhook_orderKeptAcrossRetry(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustWait(t, em)
	mustPublish(t, em, []Row{permit("P-1", "2.00", 1)})
	mustWait(t, em)
	if got, want := attempts(em.Deliveries()), "resync_required#1:500"; got != want {
		t.Fatalf("before the retry: deliveries %q, want %q (the updated waits behind the failed resync_required)", got, want)
	}
	em.Advance(DeliveryRetryIntervals()[0])
	mustWait(t, em)
	if got, want := attempts(em.Deliveries()), "resync_required#1:500 resync_required#2:200 updated#1:200"; got != want {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
}

// TestWebhook_otherDatasetsInterleave: "Events for different datasets can
// interleave", so a retry waiting on one dataset holds back only that
// dataset's events, and a ping is never held.
func TestWebhook_otherDatasetsInterleave(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	rc := mustReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	const other = "ds_fl_orange_inspections"
	if err := em.AddDataset(DatasetSpec{ID: other, Title: "Orange County Inspections", PlaceID: "fl-orange",
		Topic: "development-activity", KeyColumns: []string{"permit_number"}, Columns: permitColumns()}); err != nil {
		t.Fatal(err)
	}
	h := mustWebhook(t, em, WebhookSpec{URL: rc.srv.URL, SubscriptionID: sub})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1)})
	mustWait(t, em)
	if _, err := em.Publish(context.Background(), other, []Row{permit("I-1", "1.00", 1)}); err != nil {
		t.Fatal(err)
	}
	mustWait(t, em)
	if _, err := em.TestWebhook(h.ID); err != nil {
		t.Fatal(err)
	}
	mustWait(t, em)
	if got, want := attempts(em.Deliveries()), "resync_required#1:500 resync_required#1:200 ping#1:200"; got != want {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
}
