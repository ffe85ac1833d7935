package duckdb

import (
	"context"
	"errors"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Release gives the file up only with no connection in use (an open
// transaction keeps it); while released the handles stay but fail, and
// another open of the file (read-only, as `status`) succeeds; resume
// takes it back with the handles working again, the read-only one too.
func TestRelease(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	rel := db.Engine().(storage.Releaser)
	ro := db.Engine().(storage.ReadOnlyQuerier).ReadOnlySQL()
	var n int
	if err := ro.QueryRow("SELECT count(*) FROM _ploti.datasets").Scan(&n); err != nil {
		t.Fatal(err)
	}

	tx, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resume, err := rel.Release(ctx); resume != nil || err != nil {
		t.Fatalf("Release with a transaction open: %v, %v; want nil, nil (keep the file)", resume != nil, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("the transaction after a refused Release: %v", err)
	}

	resume, err := rel.Release(ctx)
	if err != nil || resume == nil {
		t.Fatalf("Release: %v", err)
	}
	if err := db.SQL().QueryRow("SELECT 1").Scan(&n); !errors.Is(err, errReleased) {
		t.Fatalf("a query while released: %v, want errReleased", err)
	}
	other, err := Open(ctx, db.Path(), storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		t.Fatalf("open the released file read-only: %v", err)
	}
	must(t, other.Close())
	if err := resume(ctx); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutSubscription(ctx, &storage.Subscription{ID: "sub_1"}) }); err != nil {
		t.Fatalf("a write after resume: %v", err)
	}
	if err := ro.QueryRow("SELECT count(*) FROM _ploti.subscription").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the read-only handle after resume: %d, %v", n, err)
	}

	// Another writer meanwhile: resume refuses the file.
	resume, err = rel.Release(ctx)
	if err != nil || resume == nil {
		t.Fatalf("Release: %v", err)
	}
	w, err := Open(ctx, db.Path(), storage.Options{Geometry: testGeometry, LockTimeout: -1})
	if err != nil {
		t.Fatalf("open the released file for writing: %v", err)
	}
	if err := w.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, "c9") }); err != nil {
		t.Fatal(err)
	}
	must(t, w.Close())
	if err := resume(ctx); err == nil {
		t.Fatal("resume after another writer changed the file: nil, want a refusal")
	}
}
