package emulator

import (
	"context"
	"testing"
)

func TestSeedDemo(t *testing.T) {
	em, err := New(Options{Dir: t.TempDir(), NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	d, err := SeedDemo(context.Background(), em)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := allEvents(t, em, d.SubscriptionID)
	want := "added added added resync_required(first_version) resync_required(first_version) resync_required(first_version) updated updated updated"
	if got := eventTypes(evs); got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	for _, id := range []string{DemoPermits, DemoParcels, DemoInspections} {
		cf, _ := em.ChangesFile(context.Background(), id, 2)
		got := queryRows(t, testDB(t), "SELECT string_agg(DISTINCT _ploti_change, ',' ORDER BY _ploti_change) FROM read_parquet('"+cf+"')")
		if got[0] != "added,changed,removed" {
			t.Errorf("%s changes = %v", id, got)
		}
	}
}
