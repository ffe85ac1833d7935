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
		if got := runRow(1, SyncResult{}, tc.err).Result; got != tc.want {
			t.Errorf("runRow(%v).Result = %q, want %q", tc.err, got, tc.want)
		}
	}
}
