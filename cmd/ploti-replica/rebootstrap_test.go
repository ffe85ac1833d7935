package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// A stored cursor the API refuses (400 invalid_input): sync names
// --rebootstrap, which reloads the file from a fresh manifest.
func TestSync_rebootstrap(t *testing.T) {
	ctx := context.Background()
	_, d, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	db, err := backends.Open(ctx, vars["PLOTI_DB"], storage.Options{})
	must(t, err)
	must(t, db.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, emulator.Cursor(d.SubscriptionID, 99999)) }))
	must(t, db.Close())
	code, _, errs := cli(t, vars, "sync")
	if code != exitFailure || !strings.Contains(errs, "ploti-replica sync --rebootstrap") {
		t.Fatalf("sync after a foreign cursor: exit %d\n%s", code, errs)
	}
	out := mustCLI(t, vars, "sync", "--rebootstrap")
	if !strings.Contains(out, "bootstrapped from the manifest") || !strings.Contains(out, "3 snapshot(s) loaded") {
		t.Fatalf("sync --rebootstrap:\n%s", out)
	}
	must(t, d.Next(ctx))
	if out := mustCLI(t, vars, "sync"); !strings.Contains(out, "3 changes file(s) merged") {
		t.Fatalf("sync after the rebootstrap:\n%s", out)
	}
}
