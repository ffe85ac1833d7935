package replica

import (
	"context"
	"errors"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Behind reads the same log as Sync, after the same stored cursor, so its
// errors are the package's own: ErrSubscriptionGone "means the API does not
// know the file's subscription (404)", and ErrForeignCursor "means the API
// refused the stored cursor as one it never gave (400 invalid_input)".
func TestBehind_ErrorsAreThePackagesOwn(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	if n, err := r.Behind(ctx, 10); err != nil || n != 0 {
		t.Fatalf("behind after a sync: %d, %v; want 0", n, err)
	}
	good, err := r.db.Subscription(ctx)
	must(t, err)
	must(t, r.db.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, emulator.Cursor(sub, 99999)) }))
	if _, err := r.Behind(ctx, 10); !errors.Is(err, ErrForeignCursor) {
		t.Fatalf("behind with a cursor the API never gave: %v; want ErrForeignCursor", err)
	}
	must(t, r.db.Update(ctx, func(tx *storage.Tx) error { return tx.SetCursor(ctx, good.Cursor) }))
	must(t, em.DeleteSubscription(sub))
	if _, err := r.Behind(ctx, 10); !errors.Is(err, ErrSubscriptionGone) {
		t.Fatalf("behind after the subscription was deleted: %v; want ErrSubscriptionGone", err)
	}
}
