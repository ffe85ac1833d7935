package emulator

import (
	"testing"
)

// subscriptions-manifest-files.txt: "A dataset's files are built only once
// a subscription includes it, so a dataset you have just subscribed to can
// be null until its first version is built and sent", status "not_built
// until a subscription includes the dataset"; feed-events.txt: "When it
// [added's version] is null, the dataset has no released version yet, and
// its first version arrives as feed.dataset.resync_required with reason
// first_version".
func TestEmulator_FilesBuiltOnlyOnceASubscriptionIncludesIt(t *testing.T) {
	em := mustEmulator(t)
	mustPublish(t, em, permits(2, "P-"))
	mustPublish(t, em, permits(3, "P-"))
	type dsBody struct {
		Current *struct {
			Version int `json:"version"`
		} `json:"current"`
		Status string `json:"status"`
	}
	var ds dsBody
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits, &ds); st != 200 || ds.Current != nil || ds.Status != "not_built" {
		t.Fatalf("before any subscription: %d current %+v status %q, want current null, not_built", st, ds.Current, ds.Status)
	}
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/schema", nil); st != 404 {
		t.Fatalf("schema before any subscription: %d, want 404 (no released version yet)", st)
	}
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	evs := allEvents(t, em, sub)
	if got, want := eventTypes(evs), "added resync_required(first_version)"; got != want {
		t.Fatalf("a new subscriber's events: %s, want %s", got, want)
	}
	if evs[0].Data.Version != nil {
		t.Fatalf("added names version %d, want null", *evs[0].Data.Version)
	}
	first := *evs[1].Data.Version
	if evs[1].Data.PreviousVersion != nil || first != 2 {
		t.Fatalf("first_version names v%d after %v, want the newest version, v2, after none", first, evs[1].Data.PreviousVersion)
	}
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits, &ds); st != 200 || ds.Current == nil || ds.Current.Version != first || ds.Status != "available" {
		t.Fatalf("after: %d current %+v status %q, want v%d available", st, ds.Current, ds.Status, first)
	}
	var v struct {
		PreviousVersion *int    `json:"previousVersion"`
		ResyncReason    *string `json:"resyncReason"`
	}
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/2", &v); st != 200 || v.PreviousVersion != nil ||
		v.ResyncReason == nil || *v.ResyncReason != "first_version" {
		t.Fatalf("versions/2: %d %+v, want previousVersion null, resyncReason first_version", st, v)
	}
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", nil); st != 404 {
		t.Fatalf("versions/1, published before any subscription: %d, want 404", st)
	}
	rel := mustPublish(t, em, permits(4, "P-"))
	if rel.ResyncRequired || rel.PreviousVersion == nil || *rel.PreviousVersion != first {
		t.Fatalf("next version: %+v, want an updated after v%d", rel, first)
	}
	// A second subscriber gets the version, built now.
	sub2 := mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{dsPermits}})
	evs = allEvents(t, em, sub2)
	if eventTypes(evs) != "added" || evs[0].Data.Version == nil || *evs[0].Data.Version != rel.Version {
		t.Fatalf("second subscriber: %s, want added v%d", eventTypes(evs), rel.Version)
	}
}
