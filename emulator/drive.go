package emulator

// Driving the emulator by hand: the demo world's next versions, a version
// Ploti holds, and publishing on a timer. The control endpoints
// (control.go) call these methods, so a test in Go and a person at the
// command line drive the same thing.

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// setDemo makes d the world PublishNext, HoldNext and PublishEvery drive.
func (e *Emulator) setDemo(d *Demo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.demo = d
}

// demoWorld is the seeded demo world, or ErrNotFound.
func (e *Emulator) demoWorld(op string) (*Demo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if e.demo == nil {
		return nil, fmt.Errorf("%s: %w: no demo world is seeded (SeedDemo, SeedDemoWorld or SeedDemoCatalog)", op, ErrNotFound)
	}
	return e.demo, nil
}

// PublishNext publishes the next version of each named dataset of the demo
// world, or of every one (a round, as Demo.Step) when none is named. Each
// dataset's round decides the kind of change (DemoKind): mostly updates,
// now and then a MINOR change, new ids or a MAJOR change. It returns
// ErrNotFound for a dataset outside the demo world or when none is seeded.
func (e *Emulator) PublishNext(ctx context.Context, datasetIDs ...string) ([]Release, error) {
	d, err := e.demoWorld("publish next")
	if err != nil {
		return nil, err
	}
	if len(datasetIDs) == 0 {
		return d.Step(ctx)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Release
	for _, id := range datasetIDs {
		st, err := d.stateLocked("publish next", id)
		if err != nil {
			return out, err
		}
		rel, err := d.publishLocked(ctx, id, DemoKind(st.round+1))
		if err != nil {
			return out, err
		}
		out = append(out, rel)
	}
	return out, nil
}

// HoldNext publishes the next version of a demo dataset as one Ploti holds
// for review with reason (empty: row_drop, where the version has half the
// rows): subscribers get feed.dataset.delayed and nothing else until the
// version is released (ReleaseHeld) or a later one replaces it. reason is
// one of row_drop, schema_change, identity_ambiguous, identity_unresolved
// and key_violation (ErrInvalid otherwise).
func (e *Emulator) HoldNext(ctx context.Context, datasetID, reason string) (Release, error) {
	d, err := e.demoWorld("hold next")
	if err != nil {
		return Release{}, err
	}
	if reason == "" {
		reason = "row_drop"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.holdLocked(ctx, datasetID, reason)
}

// PublishEvery publishes a round of the demo world (PublishNext with no
// dataset) every interval of real time until ctx is done or the emulator
// closes, and hands each round's versions, or its error, to report (nil:
// none). It returns nil when ctx ends, ErrClosed when the emulator closed,
// and ErrNotFound at once when no demo world is seeded.
func (e *Emulator) PublishEvery(ctx context.Context, interval time.Duration, report func([]Release, error)) error {
	if interval <= 0 {
		return fmt.Errorf("publish every %s: %w: want an interval above zero", interval, ErrInvalid)
	}
	if _, err := e.demoWorld("publish every"); err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		rels, err := e.PublishNext(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if report != nil {
			report(rels, err)
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
	}
}
