package serve

import (
	"fmt"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
)

// stuckAfterFor is how long a sync may go without progress before
// /healthz calls it stuck: Options.StuckAfter, else what the API client's
// limits allow one call (its tries, each up to the whole-answer timeout,
// and the longest wait between them) plus the sync's Retry-After budget.
// With the defaults: 6 × (2m + 1m) + 5m = 23m.
func stuckAfterFor(o Options) time.Duration {
	if o.StuckAfter > 0 {
		return o.StuckAfter
	}
	var fo fetch.Options
	if o.Replica.FetchOptions != nil {
		o.Replica.FetchOptions(&fo)
	}
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	attempts := fo.MaxAttempts
	if attempts <= 0 {
		attempts = fetch.DefaultMaxAttempts
	}
	between := max(pick(fo.RetryMaxWait, fetch.DefaultRetryMaxWait), pick(fo.PlanUnavailableWait, fetch.DefaultPlanUnavailableWait))
	return time.Duration(attempts)*(pick(fo.APITotalTimeout, fetch.DefaultAPITotalTimeout)+between) +
		pick(fo.RetryAfterBudget, fetch.DefaultRetryAfterBudget)
}

// noteProgress is the sync's Progress, through the daemon: a sign of life
// for /healthz.
func (d *Daemon) noteProgress(next func(replica.Progress)) func(replica.Progress) {
	return func(p replica.Progress) {
		at := d.clock()
		d.mu.Lock()
		d.health.progressAt = at
		d.mu.Unlock()
		if next != nil {
			next(p)
		}
	}
}

func (d *Daemon) clock() time.Time {
	if d.now == nil {
		return time.Now()
	}
	return d.now()
}

// staleReason is why /healthz is not ok whatever the last sync's result: a
// sync that has made no progress for longer than its limits allow, or a
// last success older than the polls and one sync's limits allow; "" when
// neither.
func (d *Daemon) staleReason(h health, now time.Time) string {
	if h.Syncing && d.stuck > 0 && !h.progressAt.IsZero() {
		if idle := now.Sub(h.progressAt); idle > d.stuck {
			return fmt.Sprintf("stuck: the sync under way has made no progress for %s (more than the %s its limits allow)",
				idle.Round(time.Second), d.stuck)
		}
	}
	if d.poll > 0 && h.LastSuccessAt != nil {
		allowed := 3*d.poll + d.stuck
		if age := now.Sub(*h.LastSuccessAt); age > allowed {
			return fmt.Sprintf("stale: the last successful sync was %s ago, more than the %s three polls and a sync's limits allow",
				age.Round(time.Second), allowed)
		}
	}
	return ""
}
