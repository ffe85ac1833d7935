package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
)

func TestSubscriptionsPreview(t *testing.T) {
	em, _, vars := demoWorld(t)
	var pv previewOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "preview", "--place", "fl-orange", "--dataset", emulator.DemoParcels, "--json"), &pv)
	if pv.Total != 3 || pv.Matching != 3 || len(pv.Datasets) != 3 || pv.ByPlace["fl-orange"] != 2 || pv.Datasets[1].MatchedBy[0] != "datasetIds" || pv.Datasets[2].MatchedBy[0] != "places" {
		t.Fatalf("preview --json = %+v", pv)
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "preview", "--place", "fl-orange", "--dataset", emulator.DemoParcels, "--json",
		"--matched-by", "datasetIds", "--sort", "title"), &pv)
	if pv.Matching != 1 || len(pv.Datasets) != 1 || pv.Datasets[0].ID != emulator.DemoParcels {
		t.Fatalf("preview --matched-by datasetIds = %+v", pv)
	}
	out := mustCLI(t, vars, "subscriptions", "preview", "--place", "fl-counties", "--limit", "2", "--sort", "title")
	if !strings.Contains(out, "would deliver 3 dataset(s)") || !strings.Contains(out, "showing 2 of 3") {
		t.Fatalf("preview --limit 2:\n%s", out)
	}
	if len(em.Subscriptions()) != 1 {
		t.Fatal("a preview created a subscription")
	}
	if code, _, errs := cli(t, vars, "subscriptions", "preview", "--topic", "parcels-property"); code != exitUsage || !strings.Contains(errs, "at least one --place or --dataset") {
		t.Fatalf("a preview of nothing: exit %d %s", code, errs)
	}
}

// The errors the docs name for a preview and a create, each in words:
// "400 invalid_input for an empty or malformed body", "409
// outside_coverage for a place outside your coverage", "409
// not_deliverable for a dataset Ploti cannot deliver to you", "503
// plan_unavailable while Ploti cannot read your plan", a 429 over the rate
// limit, and the 25-subscription limit.
func TestSubscriptions_errorsInWords(t *testing.T) {
	em, _, vars := demoWorld(t)
	em.AddPlace(emulator.Place{ID: "fl-dade", Name: "Miami-Dade County, FL", Kind: "county", State: "fl"})
	em.SetCoverage([]string{"fl-orange", "fl-seminole"})
	for _, tc := range []struct {
		name  string
		setup func()
		args  []string
		want  []string
	}{
		{"400 an unknown place", nil, []string{"preview", "--place", "fl-nowhere"}, []string{"refused the request as invalid (400 invalid_input)", "fl-nowhere"}},
		{"400 an unknown topic", nil, []string{"create", "--place", "fl-orange", "--topic", "permits"}, []string{"invalid (400 invalid_input)", "unknown topic"}},
		{"409 outside_coverage", nil, []string{"preview", "--place", "fl-dade"}, []string{"outside your workspace's coverage (409 outside_coverage)", "`ploti-replica places`"}},
		{"409 not_deliverable", func() { must(t, em.SetDeliverable(emulator.DemoParcels, false)) }, []string{"create", "--dataset", emulator.DemoParcels},
			[]string{"cannot deliver a dataset you named", "409 not_deliverable"}},
		{"503 plan_unavailable", func() { em.SetPlanUnavailable(true) }, []string{"preview", "--place", "fl-orange"}, []string{"cannot read your workspace's plan just now (503 plan_unavailable): try again in a minute"}},
		{"429 rate_limited", func() { em.FailNext("POST /v1/feeds/subscriptions", http.StatusTooManyRequests, 1) }, []string{"create", "--place", "fl-orange"},
			[]string{"over Ploti's rate limit (429", "try again in 1 second"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			em.SetPlanUnavailable(false)
			must(t, em.SetDeliverable(emulator.DemoParcels, true))
			if tc.setup != nil {
				tc.setup()
			}
			args := append([]string{"subscriptions"}, tc.args...)
			code, out, errs := cli(t, vars, append(args, "--max-attempts", "1")...)
			if code != exitFailure {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailure, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Fatalf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
	em.SetPlanUnavailable(false)
	if got := len(em.Subscriptions()); got != 1 {
		t.Fatalf("subscriptions = %d, want the demo's only", got)
	}
	// "A workspace may have at most 25 subscriptions at a time."
	for len(em.Subscriptions()) < emulator.MaxSubscriptions {
		if _, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}}); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errs := cli(t, vars, "subscriptions", "create", "--place", "fl-orange")
	if code != exitFailure || !strings.Contains(errs, "already has the 25 subscriptions it may have") || !strings.Contains(errs, "delete one to make room") {
		t.Fatalf("the 26th: exit %d %s", code, errs)
	}
}

// "A retry with the same key within a day returns the first answer
// instead of creating twice" (a create whose connection is cut
// after the request was sent, then retried, leaves exactly one).
func TestSubscriptionsCreate_connectionCutAfterSending(t *testing.T) {
	em, _, vars := demoWorld(t)
	// The client's own retry carries the same key.
	em.Inject(emulator.Fault{Match: "POST /v1/feeds/subscriptions", Kind: emulator.FaultCutOff})
	out := mustCLI(t, vars, "subscriptions", "create", "--name", "Orange", "--place", "fl-orange")
	if !strings.Contains(out, "sub_2 was created by an earlier try with this key") || !strings.Contains(out, "export PLOTI_SUBSCRIPTION=sub_2\n") {
		t.Fatalf("create after a cut connection:\n%s", out)
	}
	if got := len(em.Subscriptions()); got != 2 {
		t.Fatalf("subscriptions = %d, want the demo's and exactly one more", got)
	}
	// A run that gives up says which key finishes it; run again with it.
	em.Inject(emulator.Fault{Match: "POST /v1/feeds/subscriptions", Kind: emulator.FaultCutOff})
	code, _, errs := cli(t, vars, "subscriptions", "create", "--name", "Seminole", "--place", "fl-seminole", "--max-attempts", "1")
	key := regexp.MustCompile(`--idempotency-key (\S+) to finish without making two`).FindStringSubmatch(errs)
	if code != exitFailure || key == nil {
		t.Fatalf("a create that gave up: exit %d, no key in:\n%s", code, errs)
	}
	var sub subscriptionOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "create", "--name", "Seminole", "--place", "fl-seminole", "--idempotency-key", key[1], "--json"), &sub)
	if sub.ID != "sub_3" || sub.Name != "Seminole" || len(em.Subscriptions()) != 3 {
		t.Fatalf("the rerun with the key = %+v, %d subscriptions; want sub_3 and 3", sub, len(em.Subscriptions()))
	}
	out = mustCLI(t, vars, "subscriptions", "create", "--place", "fl-seminole")
	if !strings.Contains(out, "created subscription sub_4") || len(em.Subscriptions()) != 4 {
		t.Fatalf("a new key makes a new subscription:\n%s", out)
	}
}

func TestSubscriptions_updateShowDelete(t *testing.T) {
	em, d, vars := demoWorld(t)
	id := d.SubscriptionID
	var sub subscriptionOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "update", id, "--add-topic", "parcels-property", "--add-dataset", emulator.DemoPermits, "--json"), &sub)
	if sub.Revision != 2 || len(sub.Topics) != 1 || sub.DatasetIDs[0] != emulator.DemoPermits {
		t.Fatalf("update --json = %+v", sub)
	}
	out := mustCLI(t, vars, "subscriptions", "update", id, "--remove-topic", "parcels-property", "--name", "All of it")
	if !strings.Contains(out, "revision 3") || !strings.Contains(out, "delivers every topic of its places") {
		t.Fatalf("removing the last topic:\n%s", out)
	}
	code, out, errs := cli(t, vars, "subscriptions", "update", id, "--add-place", "fl-counties")
	if code != exitOK || !strings.Contains(out, "already is as asked") || !strings.Contains(errs, "fl-counties is already among its places") {
		t.Fatalf("a change already made: exit %d\n%s\n%s", code, out, errs)
	}
	// "a change that would leave no places and no datasets: 400": refused
	// before sending.
	code, _, errs = cli(t, vars, "subscriptions", "update", id, "--remove-place", "fl-counties", "--remove-dataset", emulator.DemoPermits)
	if code != exitUsage || !strings.Contains(errs, "no places and no datasets") || !strings.Contains(errs, "subscriptions delete") {
		t.Fatalf("emptying it: exit %d %s", code, errs)
	}
	if code, _, errs := cli(t, vars, "subscriptions", "update", id); code != exitUsage || !strings.Contains(errs, "nothing to change") {
		t.Fatalf("no change asked: exit %d %s", code, errs)
	}
	var show struct {
		Subscription subscriptionOut `json:"subscription"`
		Datasets     []datasetOut    `json:"datasets"`
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "show", id, "--json"), &show)
	if show.Subscription.Revision != 3 || show.Subscription.Name != "All of it" || len(show.Datasets) != 3 {
		t.Fatalf("show --json = %+v", show)
	}
	// "While the subscription's datasets are changing, it answers 409 busy:
	// try again in a moment."
	must(t, em.SetSubscriptionBusy(id, true))
	code, _, errs = cli(t, vars, "subscriptions", "delete", id)
	if code != exitFailure || !strings.Contains(errs, "changing just now (409 busy): try again in a moment") {
		t.Fatalf("delete while busy: exit %d %s", code, errs)
	}
	must(t, em.SetSubscriptionBusy(id, false))
	if out := mustCLI(t, vars, "subscriptions", "delete", id); !strings.Contains(out, "deleted subscription "+id) {
		t.Fatalf("delete:\n%s", out)
	}
	if code, _, errs := cli(t, vars, "subscriptions", "show", id); code != exitFailure || !strings.Contains(errs, "not found (404)") {
		t.Fatalf("show after delete: exit %d %s", code, errs)
	}
	if out := mustCLI(t, vars, "subscriptions", "list"); !strings.Contains(out, "no subscriptions") {
		t.Fatalf("list after delete:\n%s", out)
	}
}

// "a stale one: 412 precondition_failed. Read the subscription again and
// resend": someone else edits the subscription between the command's read
// and its PATCH. The change is sent once more only when it still applies.
func TestSubscriptionsUpdate_preconditionFailed(t *testing.T) {
	em, d, vars := demoWorld(t)
	id := d.SubscriptionID
	var mu sync.Mutex
	var meanwhile func()
	h := em.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := meanwhile
		if r.Method == http.MethodPatch {
			meanwhile = nil
		}
		mu.Unlock()
		if r.Method == http.MethodPatch && f != nil {
			f()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	vars["PLOTI_API_URL"] = srv.URL
	edit := func(spec emulator.SubscriptionSpec) {
		mu.Lock()
		meanwhile = func() { must(t, em.PatchSubscription(id, spec)) }
		mu.Unlock()
	}

	// Someone else names a dataset: adding a topic still applies.
	edit(emulator.SubscriptionSpec{Name: "Central Florida", Places: []string{"fl-counties"}, DatasetIDs: []string{emulator.DemoParcels}})
	code, out, errs := cli(t, vars, "subscriptions", "update", id, "--add-topic", "health-safety")
	if code != exitOK || !strings.Contains(errs, "changed since it was read (revision 1, now 2)") || !strings.Contains(errs, "still applies") ||
		!strings.Contains(out, "revision 3") {
		t.Fatalf("a change that still applies: exit %d\n%s\n%s", code, out, errs)
	}
	s := mustCLI(t, vars, "subscriptions", "show", id)
	if !strings.Contains(s, "topics:   health-safety") || !strings.Contains(s, "datasets: "+emulator.DemoParcels) {
		t.Fatalf("both edits should hold:\n%s", s)
	}

	// Someone else replaces the place this run replaces: its removal no
	// longer applies, so nothing more is sent.
	edit(emulator.SubscriptionSpec{Name: "Central Florida", Places: []string{"fl-seminole"}, Topics: []string{"health-safety"}, DatasetIDs: []string{emulator.DemoParcels}})
	code, out, errs = cli(t, vars, "subscriptions", "update", id, "--add-place", "fl-orange", "--remove-place", "fl-counties")
	if code != exitFailure || !strings.Contains(errs, "412 precondition_failed") || !strings.Contains(errs, "fl-counties is not among its places") ||
		!strings.Contains(errs, "nothing more was sent") {
		t.Fatalf("a change that no longer applies: exit %d\n%s\n%s", code, out, errs)
	}
	var after struct {
		Subscription subscriptionOut `json:"subscription"`
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "show", id, "--json"), &after)
	if after.Subscription.Revision != 4 || strings.Join(after.Subscription.Places, ",") != "fl-seminole" {
		t.Fatalf("after = %+v, want revision 4 (the other edit only)", after.Subscription)
	}
}

// The answer to a PATCH is lost after Ploti applied it: the client's retry
// meets 412, and the fresh read shows the change made.
func TestSubscriptionsUpdate_answerLost(t *testing.T) {
	em, d, vars := demoWorld(t)
	em.Inject(emulator.Fault{Match: "PATCH /v1/feeds/subscriptions/*", Kind: emulator.FaultCutOff})
	code, out, errs := cli(t, vars, "subscriptions", "update", d.SubscriptionID, "--add-dataset", emulator.DemoParcels)
	if code != exitOK || !strings.Contains(out, "already has your change (revision 2)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// docs/wire.md 2: "Dataset ids and place ids are opaque strings: use them
// exactly as given." --dataset, --add-dataset and --remove-dataset take an
// id whole: one with a comma or a quote in it is not split or parsed.
func TestSubscriptions_datasetIDsTakenWhole(t *testing.T) {
	em, _, vars := demoWorld(t)
	const odd = `ds_fl,"odd"`
	must(t, em.AddDataset(emulator.DatasetSpec{ID: odd, Title: "Odd", PlaceID: "fl-orange",
		Columns: []emulator.Column{{Name: "k", Type: "string"}}}))
	var pv previewOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "preview", "--dataset", odd, "--json"), &pv)
	if pv.Total != 1 || pv.Datasets[0].ID != odd {
		t.Fatalf("preview --dataset %s = %+v", odd, pv)
	}
	var sub subscriptionOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "create", "--dataset", odd, "--json"), &sub)
	if len(sub.DatasetIDs) != 1 || sub.DatasetIDs[0] != odd {
		t.Fatalf("create --dataset %s: datasetIds %q", odd, sub.DatasetIDs)
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "update", sub.ID, "--add-place", "fl-seminole", "--remove-dataset", odd, "--json"), &sub)
	if len(sub.DatasetIDs) != 0 {
		t.Fatalf("update --remove-dataset %s: datasetIds %q", odd, sub.DatasetIDs)
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "update", sub.ID, "--add-dataset", odd, "--json"), &sub)
	if len(sub.DatasetIDs) != 1 || sub.DatasetIDs[0] != odd {
		t.Fatalf("update --add-dataset %s: datasetIds %q", odd, sub.DatasetIDs)
	}
}

// --json is for scripts (README: "Each of these takes --json"): an update
// with nothing left to send, on the first read or after a 412, prints the
// subscription as JSON too, and its notes go to stderr.
func TestSubscriptionsUpdate_jsonWhenNothingIsSent(t *testing.T) {
	em, d, vars := demoWorld(t)
	var sub subscriptionOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "update", d.SubscriptionID, "--add-place", "fl-counties", "--json"), &sub)
	if sub.ID != d.SubscriptionID || sub.Revision != 1 || strings.Join(sub.Places, ",") != "fl-counties" {
		t.Fatalf("a change already there, --json = %+v", sub)
	}
	em.Inject(emulator.Fault{Match: "PATCH /v1/feeds/subscriptions/*", Kind: emulator.FaultCutOff})
	parseJSON(t, mustCLI(t, vars, "subscriptions", "update", d.SubscriptionID, "--add-dataset", emulator.DemoParcels, "--json"), &sub)
	if sub.Revision != 2 || len(sub.DatasetIDs) != 1 || sub.DatasetIDs[0] != emulator.DemoParcels {
		t.Fatalf("an answer lost after the change was made, --json = %+v", sub)
	}
}

// subscriptions-manifest-files.txt: "Deleting a subscription stops its
// events and its webhooks." A sync of a file whose subscription was
// deleted says so in words, with what to do, and exits 1; the file keeps
// what it holds, and its last run records why. A file never synced (its
// bootstrap asks the manifest) says the same.
func TestSync_aDeletedSubscriptionInWords(t *testing.T) {
	_, d, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	mustCLI(t, vars, "subscriptions", "delete", d.SubscriptionID)
	code, _, errs := cli(t, vars, "sync")
	if code != exitFailure || !strings.Contains(errs, "Ploti does not know subscription "+d.SubscriptionID+": it was deleted") ||
		!strings.Contains(errs, "subscriptions list") {
		t.Fatalf("sync after the subscription was deleted: exit %d %s", code, errs)
	}
	var st struct {
		Datasets []struct{ Status string }
		LastRun  *struct{ Status, Error string } `json:"lastRun"`
	}
	parseJSON(t, mustCLI(t, vars, "status", "--json"), &st)
	if len(st.Datasets) != 3 || st.Datasets[0].Status != "current" || st.LastRun == nil || !strings.Contains(st.LastRun.Error, "it was deleted") {
		t.Fatalf("status after the failed sync: %+v", st)
	}
	vars["PLOTI_DB"] += ".new"
	if code, _, errs := cli(t, vars, "sync"); code != exitFailure || !strings.Contains(errs, "Ploti does not know subscription "+d.SubscriptionID) ||
		!strings.Contains(errs, "was not created") {
		t.Fatalf("a first sync of a deleted subscription: exit %d %s", code, errs)
	}
}

// subscriptions-manifest-files.txt: "byTopic and byPlace count the same
// datasets, by primary topic (null for none)". Ploti's null reads, and
// prints as "none", the word --only-topic takes for no topic.
func TestSubscriptionsPreview_byTopicNullForNone(t *testing.T) {
	em, _, vars := demoWorld(t)
	if err := em.AddDataset(emulator.DatasetSpec{ID: "ds_fl_orange_notes", Title: "Notes", PlaceID: "fl-orange",
		Columns: []emulator.Column{{Name: "note", Type: "string"}}}); err != nil {
		t.Fatal(err)
	}
	var pv previewOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "preview", "--place", "fl-orange", "--json"), &pv)
	if pv.ByTopic["none"] != 1 || pv.Total != 3 {
		t.Fatalf("preview --json byTopic %v total %d, want none 1 of 3", pv.ByTopic, pv.Total)
	}
	out := mustCLI(t, vars, "subscriptions", "preview", "--place", "fl-orange")
	if !regexp.MustCompile(`by topic: .*none 1`).MatchString(out) {
		t.Fatalf("preview, by topic without none 1:\n%s", out)
	}
}

// subscriptions-manifest-files.txt, of GET /v1/places: "Use the ids
// exactly as it gives them." --place, --topic, --add-place,
// --remove-place, --add-topic and --remove-topic take an id whole, as
// --dataset does: one with a comma or a quote in it is not split or parsed.
func TestSubscriptions_placeAndTopicIDsTakenWhole(t *testing.T) {
	em, _, vars := demoWorld(t)
	const place, topic = `fl-odd,"x"`, `odd,topic`
	em.AddPlace(emulator.Place{ID: place, Name: "Odd County, FL", Kind: "county", State: "fl"})
	em.AddTopic(topic, "Odd")
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_fl_odd", Title: "Odd", PlaceID: place, Topic: topic,
		Columns: []emulator.Column{{Name: "k", Type: "string"}}}))
	var pv previewOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "preview", "--place", place, "--topic", topic, "--json"), &pv)
	if pv.Total != 1 || pv.Datasets[0].ID != "ds_fl_odd" {
		t.Fatalf("preview --place %s --topic %s = %+v", place, topic, pv)
	}
	var sub subscriptionOut
	parseJSON(t, mustCLI(t, vars, "subscriptions", "create", "--place", place, "--topic", topic, "--json"), &sub)
	if strings.Join(sub.Places, "|") != place || strings.Join(sub.Topics, "|") != topic {
		t.Fatalf("create: places %q topics %q, want [%s] [%s]", sub.Places, sub.Topics, place, topic)
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "update", sub.ID, "--add-place", "fl-orange", "--remove-place", place,
		"--remove-topic", topic, "--json"), &sub)
	if strings.Join(sub.Places, "|") != "fl-orange" || len(sub.Topics) != 0 {
		t.Fatalf("update --remove-place/--remove-topic: places %q topics %q", sub.Places, sub.Topics)
	}
	parseJSON(t, mustCLI(t, vars, "subscriptions", "update", sub.ID, "--add-place", place, "--add-topic", topic, "--json"), &sub)
	if strings.Join(sub.Places, "|") != "fl-orange|"+place || strings.Join(sub.Topics, "|") != topic {
		t.Fatalf("update --add-place/--add-topic: places %q topics %q", sub.Places, sub.Topics)
	}
}
