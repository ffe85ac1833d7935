package fetch

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A call allowed one try says so in words, not "gave up after 1
// attempts"; several tries keep their count.
func TestRetry_oneTryIsSaidInWords(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		want     string
	}{{1, "(tried once, with no retry allowed)"}, {2, "(gave up after 2 attempts)"}} {
		srv, _ := scripted(t, []answer{{status: 500}, {status: 500}})
		c, _ := MustClient(t, srv.URL, func(o *Options) { o.MaxAttempts = tc.attempts })
		_, err := c.Dataset(context.Background(), "ds_a")
		if !errors.Is(err, ErrServer) || !strings.HasSuffix(err.Error(), tc.want) || strings.Contains(err.Error(), "1 attempts") {
			t.Errorf("MaxAttempts %d: %v; want it to end %q", tc.attempts, err, tc.want)
		}
	}
}
