package replica_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// demo starts the in-process emulator (a Ploti on loopback) seeded with
// the demo world: three datasets in one subscription, at version 1. Call
// the func it returns when done.
func demo() (*emulator.Demo, string, func()) {
	em, err := emulator.New(emulator.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := em.Start(); err != nil {
		log.Fatal(err)
	}
	d, err := emulator.SeedDemo(context.Background(), em)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "replica-example-")
	if err != nil {
		log.Fatal(err)
	}
	return d, dir, func() { em.Close(); os.RemoveAll(dir) }
}

// Open a replica of a subscription, sync it once and query a table.
func Example() {
	d, dir, done := demo()
	defer done()
	ctx := context.Background()

	r, err := replica.Open(ctx, filepath.Join(dir, "feeds.duckdb"), replica.Options{
		APIURL:         d.Emulator.URL(), // default: Ploti's API
		APIKey:         d.Emulator.APIKey(),
		SubscriptionID: d.SubscriptionID,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	res, err := r.Sync(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Moves {
		fmt.Printf("%s: version %d → %d\n", m.Table, m.From, m.To)
	}
	var permits int
	if err := r.DB().QueryRowContext(ctx, `SELECT count(*) FROM ds_fl_orange_permits`).Scan(&permits); err != nil {
		log.Fatal(err)
	}
	fmt.Println("permits:", permits)
	// Output:
	// ds_fl_orange_inspections: version 0 → 1
	// ds_fl_orange_permits: version 0 → 1
	// ds_fl_seminole_parcels: version 0 → 1
	// permits: 20
}

// Keep a replica current in a service: Run syncs at start, then whenever
// Ploti's signed webhook says the feed moved (the webhook package verifies
// it and signals the Trigger), until its context is cancelled.
func ExampleReplica_Run() {
	d, dir, done := demo()
	defer done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	r, err := replica.Open(ctx, filepath.Join(dir, "feeds.duckdb"), replica.Options{
		APIURL: d.Emulator.URL(), APIKey: d.Emulator.APIKey(), SubscriptionID: d.SubscriptionID,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	// The service's own server receives the webhook at /ploti.
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	hook, err := d.Emulator.CreateWebhook(emulator.WebhookSpec{URL: srv.URL + "/ploti", SubscriptionID: d.SubscriptionID})
	if err != nil {
		log.Fatal(err)
	}
	verifier, err := webhook.NewVerifier(hook.Secret) // whsec_…, from creating the webhook
	if err != nil {
		log.Fatal(err)
	}
	trigger := webhook.NewTrigger()
	handler, err := webhook.NewHandler(webhook.HandlerOptions{Verifier: verifier, Trigger: trigger, Wants: r.Wants})
	if err != nil {
		log.Fatal(err)
	}
	mux.Handle("/ploti", handler)

	err = r.Run(ctx, replica.RunOptions{
		Interval: -1, // webhooks only; 0 is every five minutes
		Signal:   trigger.C(),
		OnSync: func(res replica.SyncResult, err error) {
			if err != nil {
				log.Print(err) // Run retries after a wait
				return
			}
			if res.Trigger == replica.TriggerStart {
				fmt.Println("first sync: loaded", len(res.Moves), "datasets")
				if err := d.Next(ctx); err != nil { // Ploti publishes version 2 of each
					log.Fatal(err)
				}
			}
			for _, m := range res.Moves {
				if m.DatasetID == emulator.DemoPermits && m.To == 2 {
					fmt.Printf("after the webhook: %s version %d → %d\n", m.Table, m.From, m.To)
					cancel() // Run returns nil
				}
			}
		},
	})
	fmt.Println("Run returned", err)
	// Output:
	// first sync: loaded 3 datasets
	// after the webhook: ds_fl_orange_permits version 1 → 2
	// Run returned <nil>
}
