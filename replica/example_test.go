package replica_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

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

// Read while it syncs: ReadOnly is the handle to give a service's users.
// It sees whole versions only, also while Run applies a new one, and it
// cannot write.
func ExampleReplica_ReadOnly() {
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

	synced := make(chan replica.SyncResult, 10)
	ran := make(chan error, 1)
	go func() {
		ran <- r.Run(ctx, replica.RunOptions{Interval: 10 * time.Millisecond,
			OnSync: func(res replica.SyncResult, _ error) {
				select {
				case synced <- res:
				default: // nobody is waiting: Run must not
				}
			}})
	}()
	<-synced // the first sync: version 1 of each dataset

	db := r.ReadOnly()
	first := func() (permit string) { // the version's first permit
		if err := db.QueryRowContext(ctx, `SELECT min(permit_number) FROM ds_fl_orange_permits`).Scan(&permit); err != nil {
			log.Fatal(err)
		}
		return permit
	}
	fmt.Println("first permit at version 1:", first())
	if err := d.Next(ctx); err != nil { // Ploti publishes version 2 while Run goes on
		log.Fatal(err)
	}
	for moved := false; !moved; {
		for _, m := range (<-synced).Moves {
			moved = moved || m.DatasetID == emulator.DemoPermits
		}
	}
	fmt.Println("first permit at version 2:", first())

	_, err = db.ExecContext(ctx, `DELETE FROM ds_fl_orange_permits`)
	fmt.Println("a write:", errors.Is(err, replica.ErrReadOnly))
	cancel()
	fmt.Println("Run returned", <-ran)
	// Output:
	// first permit at version 1: BP-0001
	// first permit at version 2: BP-0002
	// a write: true
	// Run returned <nil>
}
