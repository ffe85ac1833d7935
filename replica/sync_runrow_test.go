package replica

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A sync cancelled (the CLI's SIGINT or SIGTERM) is recorded as stopped,
// as one stopped at a commit point is, not as failed: what it committed
// stays and nothing went wrong; a timeout still failed.
func TestRunRow_cancelledIsStopped(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{fmt.Errorf("apply page: %w", context.Canceled), "stopped"},
		{ErrStopped, "stopped"},
		{fmt.Errorf("sync: %w", ErrPartial), "partial"},
		{fmt.Errorf("events: %w", context.DeadlineExceeded), "failed"},
		{errors.New("disk full"), "failed"},
	} {
		if got := runRow(SyncResult{}, tc.err).Result; got != tc.want {
			t.Errorf("runRow(%v).Result = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A cancel that lands as DuckDB starts a statement can fail it with the
// engine's bare "INTERRUPT Error: Interrupted!" rather than the driver's
// context.Canceled (a CI run met it in the walk's read of
// _ploti.applied_events): the sync still reports context.Canceled, as
// documented for a cancelled sync, and its run is recorded as stopped.
func TestStoppedBy_aStatementTheCancelInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	interrupted := fmt.Errorf("read applied events: %w", errors.New("INTERRUPT Error: Interrupted!"))
	err := stoppedBy(ctx, interrupted)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stoppedBy(%v) = %v, want context.Canceled", interrupted, err)
	}
	if got := runRow(SyncResult{}, err).Result; got != "stopped" {
		t.Fatalf("run recorded %q, want stopped", got)
	}
	if err := stoppedBy(context.Background(), errors.New("disk full")); errors.Is(err, context.Canceled) {
		t.Fatalf("a sync nobody cancelled reads as cancelled: %v", err)
	}
}
