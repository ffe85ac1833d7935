package emulator

import (
	"context"
	"errors"
	"testing"
	"time"
)

// demoEmulator is an emulator on loopback seeded with the demo's world, the
// watched dataset included and watched.
func demoEmulator(t *testing.T) (*Emulator, *Demo) {
	t.Helper()
	em, err := New(Options{Dir: t.TempDir(), NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	d, err := SeedDemoWorld(context.Background(), em)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := em.Watch(DemoWatched); err != nil {
		t.Fatal(err)
	}
	return em, d
}

// The rounds publish the kinds of change DemoKind names, the watched
// dataset's too: a MINOR change at round 4, new ids at 7, a MAJOR change
// Ploti releases at 10, updates otherwise.
func TestDemoStep_kinds(t *testing.T) {
	em, d := demoEmulator(t)
	if got := len(d.Datasets()); got != 4 {
		t.Fatalf("the world has %d datasets, want 4 with %s", got, DemoWatched)
	}
	for r := 2; r <= 10; r++ {
		rels, err := em.PublishNext(context.Background())
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		if len(rels) != 4 || d.Round != r {
			t.Fatalf("round %d: %d versions, Round %d", r, len(rels), d.Round)
		}
		for _, rel := range rels {
			bump, resync := "", ""
			switch r {
			case 4:
				bump = "minor"
			case 7:
				resync = "record_ids_changed"
			case 10:
				bump, resync = "major", "schema_changed"
			}
			if rel.Version != r || rel.SchemaBump != bump || rel.ResyncReason != resync || rel.Held {
				t.Errorf("round %d: %s v%d bump %q resync %q held %v; want bump %q resync %q, released",
					r, rel.DatasetID, rel.Version, rel.SchemaBump, rel.ResyncReason, rel.Held, bump, resync)
			}
		}
	}
	if n := len(em.PlotiVersions(DemoWatched)); n != 10 {
		t.Fatalf("the watched dataset has %d Ploti versions, want 10", n)
	}
	changed := 0
	for _, ev := range em.MemberEvents() {
		if ev.Type == "dataset.changed" && ev.DatasetID == DemoWatched {
			changed++
		}
	}
	if changed != 9 {
		t.Fatalf("%d dataset.changed for the watched dataset, want 9 (one a round after the watch)", changed)
	}
}

// Next stays updates only, whatever the round: the tests built on it
// expect feed.dataset.updated each time.
func TestDemoNext_updatesOnly(t *testing.T) {
	em, err := New(Options{Dir: t.TempDir(), NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	d, err := SeedDemo(context.Background(), em)
	if err != nil {
		t.Fatal(err)
	}
	for d.Round < 4 {
		if err := d.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := "added resync_required(first_version) updated updated updated"
	if got := eventTypes(toBodies(em.Events(d.SubscriptionID), DemoParcels)); got != want {
		t.Fatalf("parcels' events = %s, want %s", got, want)
	}
}

// toBodies is a dataset's events as the wire helpers see them.
func toBodies(evs []Event, datasetID string) []eventBody {
	var out []eventBody
	for _, ev := range evs {
		if ev.DatasetID != datasetID {
			continue
		}
		b := eventBody{ID: ev.ID, Type: ev.Type}
		b.Data.Reason, _ = ev.Data["reason"].(string)
		out = append(out, b)
	}
	return out
}

// PublishNext for one dataset moves that dataset alone; HoldNext publishes
// a version Ploti holds (half the rows: row_drop) that ReleaseHeld sends.
func TestPublishNextAndHoldNext(t *testing.T) {
	em, d := demoEmulator(t)
	rels, err := em.PublishNext(context.Background(), DemoParcels)
	if err != nil || len(rels) != 1 || rels[0].DatasetID != DemoParcels || rels[0].Version != 2 || d.Round != 1 {
		t.Fatalf("PublishNext(parcels) = %+v, %v (Round %d)", rels, err, d.Round)
	}
	rel, err := em.HoldNext(context.Background(), DemoPermits, "")
	if err != nil || !rel.Held || rel.HoldReason != "row_drop" || rel.RowCount != 10 {
		t.Fatalf("HoldNext = %+v, %v; want held row_drop with 10 of 20 rows", rel, err)
	}
	evs := em.Events(d.SubscriptionID)
	if last := evs[len(evs)-1]; last.Type != "feed.dataset.delayed" || last.DatasetID != DemoPermits {
		t.Fatalf("last event %s %s, want feed.dataset.delayed for the permits", last.Type, last.DatasetID)
	}
	if _, err := em.ReleaseHeld(DemoPermits); err != nil {
		t.Fatal(err)
	}
	if _, err := em.HoldNext(context.Background(), DemoPermits, "nope"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("HoldNext(nope) = %v, want ErrInvalid", err)
	}
	if _, err := em.PublishNext(context.Background(), "ds_nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("PublishNext(ds_nope) = %v, want ErrNotFound", err)
	}
}

// PublishEvery publishes rounds on its timer until ctx ends, and refuses
// to run with no demo world or no interval.
func TestPublishEvery(t *testing.T) {
	em, d := demoEmulator(t)
	ctx, cancel := context.WithCancel(context.Background())
	rounds := make(chan []Release, 10)
	done := make(chan error, 1)
	go func() {
		done <- em.PublishEvery(ctx, 50*time.Millisecond, func(rels []Release, err error) {
			if err != nil {
				t.Error(err)
			}
			rounds <- rels
		})
	}()
	for i := 0; i < 2; i++ {
		select {
		case rels := <-rounds:
			if len(rels) != 4 {
				t.Fatalf("a round published %d versions, want 4", len(rels))
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no round published")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("PublishEvery = %v after ctx ended, want nil", err)
	}
	if d.Round < 3 {
		t.Fatalf("Round %d after two rounds, want 3 or more", d.Round)
	}
	bare := mustEmulator(t)
	if err := bare.PublishEvery(context.Background(), time.Second, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("PublishEvery without a demo world = %v, want ErrNotFound", err)
	}
	if err := em.PublishEvery(context.Background(), 0, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("PublishEvery(0) = %v, want ErrInvalid", err)
	}
}
