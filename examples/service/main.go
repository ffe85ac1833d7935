// Command service is a Go program of its own that embeds ploti-replica as
// a library: it keeps a replica current with Run while the in-process
// emulator (a Ploti on loopback) publishes a new version, logs through
// log/slog, stops Run by cancelling its context, and meets ErrClosed after
// Close. It exits 1, saying why, when any of that does not hold; the
// repository's tests run it (internal/embedcheck).
//
// Its go.mod replaces the library's module with the repository it sits
// in; a service of yours requires a released version instead:
//
//	go get github.com/ploti-replica/ploti-replica@latest
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "service:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run() error {
	ctx := context.Background()
	em, err := emulator.New(emulator.Options{})
	if err != nil {
		return err
	}
	defer em.Close()
	if err := em.Start(); err != nil {
		return err
	}
	demo, err := emulator.SeedDemo(ctx, em)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "service-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r, err := replica.Open(ctx, filepath.Join(dir, "feeds.duckdb"), replica.Options{
		APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: demo.SubscriptionID, Logger: logger,
	})
	if err != nil {
		return err
	}
	defer r.Close()

	if err := keepCurrent(ctx, r, demo, logger); err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	if _, err := r.Sync(ctx); !errors.Is(err, replica.ErrClosed) {
		return fmt.Errorf("Sync after Close = %v, want replica.ErrClosed", err)
	}
	fmt.Println("Sync after Close:", replica.ErrClosed)
	return nil
}

// keepCurrent runs r.Run while the emulator publishes version 2, waits
// until Run has applied it, cancels Run and checks it returns within a
// second.
func keepCurrent(ctx context.Context, r *replica.Replica, demo *emulator.Demo, logger *slog.Logger) error {
	first, applied := make(chan struct{}), make(chan struct{})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		ran <- r.Run(runCtx, replica.RunOptions{
			Interval: 500 * time.Millisecond,
			OnSync: func(res replica.SyncResult, err error) {
				if err != nil {
					logger.Warn("sync", "error", err)
					return
				}
				for _, m := range res.Moves {
					fmt.Printf("synced (%s): %s %d -> %d\n", res.Trigger, m.DatasetID, m.From, m.To)
					switch {
					case m.DatasetID == emulator.DemoPermits && m.To == 1:
						close(first)
					case m.DatasetID == emulator.DemoPermits && m.To == 2:
						close(applied)
					}
				}
			},
		})
	}()
	if err := within(20*time.Second, first, "the first sync"); err != nil {
		return err
	}
	if err := demo.Next(ctx); err != nil { // Ploti publishes version 2 meanwhile
		return err
	}
	if err := within(20*time.Second, applied, "version 2 applied by Run"); err != nil {
		return err
	}
	cancel()
	cancelled := time.Now()
	select {
	case err := <-ran:
		if err != nil {
			return fmt.Errorf("Run after the cancel: %w", err)
		}
		fmt.Printf("Run returned %s after the cancel\n", time.Since(cancelled).Round(time.Millisecond))
	case <-time.After(time.Second):
		return errors.New("Run did not return within a second of the cancel")
	}
	return nil
}

// within waits for c, or fails after d.
func within(d time.Duration, c <-chan struct{}, what string) error {
	select {
	case <-c:
		return nil
	case <-time.After(d):
		return fmt.Errorf("no %s within %s", what, d)
	}
}
