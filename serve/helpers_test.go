package serve

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

const testDataset = "ds_permits"

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testEmulator is an emulator on loopback whose clock follows the wall
// clock (the daemon checks webhook timestamps against it), holding
// version 1 of one dataset in a subscription, whose id it returns.
func testEmulator(t *testing.T) (*emulator.Emulator, string) {
	t.Helper()
	em, err := emulator.New(emulator.Options{Now: time.Now, NoRateLimit: true, DuckDBThreads: 2})
	must(t, err)
	t.Cleanup(func() { em.Close() })
	must(t, em.Start())
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: testDataset, Title: "Permits", PlaceID: "fl-orange", KeyColumns: []string{"permit"},
		Columns: []emulator.Column{{Name: "permit", Type: "string"}, {Name: "amount", Type: "integer"}, {Name: "status", Type: "string"}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	publish(t, em, 1)
	return em, sub
}

// publish releases version round of the dataset: twenty permits, the
// sixth marked with the round.
func publish(t *testing.T, em *emulator.Emulator, round int) {
	t.Helper()
	var rows []emulator.Row
	for i := round; i < round+20; i++ {
		status := "filed"
		if i == round+5 {
			status = fmt.Sprintf("changed in round %d", round)
		}
		rows = append(rows, emulator.Row{"permit": fmt.Sprintf("P-%03d", i), "amount": int64(100 * i), "status": status})
	}
	_, err := em.Publish(context.Background(), testDataset, rows)
	must(t, err)
}
