package fetch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// manageWorld is an emulator with two counties, two topics and five
// datasets, and a client of it whose backoff does not wait.
func manageWorld(t *testing.T) (*emulator.Emulator, *fetch.Client) {
	t.Helper()
	em, err := emulator.New(emulator.Options{Dir: t.TempDir(), NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(emulator.Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	em.AddTopic("parcels-property", "Parcels and property")
	for i, id := range []string{"ds_a", "ds_b", "ds_c", "ds_d", "ds_e"} {
		spec := emulator.DatasetSpec{ID: id, Title: id, PlaceID: "fl-orange", Topic: "development-activity",
			Columns: []emulator.Column{{Name: "x", Type: "integer"}}}
		if i%2 == 1 {
			spec.PlaceID, spec.Topic = "fl-seminole", "parcels-property"
		}
		if err := em.AddDataset(spec); err != nil {
			t.Fatal(err)
		}
	}
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	c, err := fetch.New(fetch.Options{BaseURL: em.URL(), APIKey: em.APIKey(), Sleep: noWait})
	if err != nil {
		t.Fatal(err)
	}
	return em, c
}

func TestClient_Discover(t *testing.T) {
	ctx := context.Background()
	_, c := manageWorld(t)
	places, err := c.Places(ctx, fetch.PlacesQuery{State: "fl", Kind: "county", Deliverable: true})
	if err != nil || len(places) != 2 || places[0].ID != "fl-orange" || places[0].DatasetCount != 3 || places[0].DatasetCounts["development-activity"] != 3 {
		t.Fatalf("places = %+v, %v", places, err)
	}
	topics, err := c.Topics(ctx)
	if err != nil || len(topics) != 2 || topics[1].ID != "parcels-property" {
		t.Fatalf("topics = %+v, %v", topics, err)
	}
	// Paging followed to the end, two at a time.
	all, err := c.Datasets(ctx, fetch.DatasetsQuery{Limit: 2}, 0)
	if err != nil || len(all) != 5 || all[4].ID != "ds_e" {
		t.Fatalf("datasets = %d, %v", len(all), err)
	}
	some, err := c.Datasets(ctx, fetch.DatasetsQuery{Place: "fl-orange"}, 2)
	if err != nil || len(some) != 2 || some[1].ID != "ds_c" {
		t.Fatalf("datasets up to 2 = %+v, %v", some, err)
	}
	if _, err := c.Datasets(ctx, fetch.DatasetsQuery{Subscription: "sub_nope"}, 0); !errors.Is(err, fetch.ErrNotFound) {
		t.Fatalf("an unknown subscription: %v, want ErrNotFound", err)
	}
}

func TestClient_SubscriptionLifecycle(t *testing.T) {
	ctx := context.Background()
	em, c := manageWorld(t)
	spec := ploti.SubscriptionSpec{Name: "Orange", Places: []string{"fl-orange"}}
	pv, err := c.Preview(ctx, spec, fetch.PreviewQuery{Sort: "title", Limit: 2})
	if err != nil || pv.Total != 3 || pv.Matching != 3 || len(pv.Datasets) != 2 || pv.NextCursor == nil || pv.Datasets[0].MatchedBy[0] != "places" {
		t.Fatalf("preview = %+v, %v", pv, err)
	}
	key := fetch.NewIdempotencyKey()
	// "A retry with the same key within a day returns the first answer
	// instead of creating twice": the answer to the first try is lost
	// after the server created the subscription; the client's retry
	// carries the same key.
	em.Inject(emulator.Fault{Match: "POST /v1/feeds/subscriptions", Kind: emulator.FaultCutOff})
	res, err := c.CreateSubscription(ctx, spec, key)
	if err != nil || !res.Replayed || res.Subscription.Revision != 1 {
		t.Fatalf("create after a lost answer = %+v, %v", res, err)
	}
	if got := len(em.Subscriptions()); got != 1 {
		t.Fatalf("subscriptions = %d, want exactly 1", got)
	}
	id := res.Subscription.ID
	// A PATCH never sends null: an emptied list is [].
	empty := []string{}
	topics := []string{"development-activity"}
	s, err := c.UpdateSubscription(ctx, id, 1, ploti.SubscriptionPatch{Topics: &topics, DatasetIDs: &empty})
	if err != nil || s.Revision != 2 || len(s.Topics) != 1 {
		t.Fatalf("update = %+v, %v", s, err)
	}
	if _, err := c.UpdateSubscription(ctx, id, 1, ploti.SubscriptionPatch{Topics: &empty}); !errors.Is(err, fetch.ErrPreconditionFailed) {
		t.Fatalf("a stale revision: %v, want ErrPreconditionFailed", err)
	}
	var none []string
	s, err = c.UpdateSubscription(ctx, id, 2, ploti.SubscriptionPatch{Topics: &none})
	if err != nil || s.Topics == nil || len(s.Topics) != 0 {
		t.Fatalf("a nil list is sent as []: %+v, %v", s, err)
	}
	if _, err := c.UpdateSubscription(ctx, id, 3, ploti.SubscriptionPatch{}); !errors.Is(err, fetch.ErrInvalidInput) {
		t.Fatalf("an empty patch: %v", err)
	}
	must(t, em.SetSubscriptionBusy(id, true))
	if err := c.DeleteSubscription(ctx, id); !errors.Is(err, fetch.ErrBusy) {
		t.Fatalf("delete while busy: %v, want ErrBusy", err)
	}
	must(t, em.SetSubscriptionBusy(id, false))
	if err := c.DeleteSubscription(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscription(ctx, id); !errors.Is(err, fetch.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
