package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/replica"
)

// Options.VerifyEvery: the daemon runs Replica.Verify in the
// sync that comes first once it is due (the loop wakes a sync for it), on
// the file the sync has open, and exports the result in /metrics.

// verifyMetrics are the verify figures on /metrics.
type verifyMetrics struct {
	runs     *prometheus.CounterVec
	datasets *prometheus.GaugeVec
	last     prometheus.Gauge
	duration prometheus.Gauge
}

// Results of a verify run, the label values of ploti_replica_verify_runs_total.
const (
	verifyOK      = "ok"
	verifyDiffers = "differs"
	verifyFailed  = "failed"
)

func newVerifyMetrics(reg *prometheus.Registry) (*verifyMetrics, error) {
	m := &verifyMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ploti_replica_verify_runs_total",
			Help: "Verify runs (--verify-every), by result: ok (every dataset verified or unverifiable), differs, failed (could not run, or verified nothing for a failure)."}, []string{"result"}),
		datasets: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ploti_replica_verify_datasets",
			Help: "Datasets by verdict in the last verify run: verified, differs, unverifiable (version past retention, or watched)."}, []string{"verdict"}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ploti_replica_verify_last_run_timestamp_seconds",
			Help: "When the last verify run ended (Unix seconds); 0 before the first."}),
		duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ploti_replica_verify_duration_seconds",
			Help: "How long the last verify run took."}),
	}
	if err := register(reg, m.runs, m.datasets, m.last, m.duration); err != nil {
		return nil, err
	}
	for _, r := range []string{verifyOK, verifyDiffers, verifyFailed} {
		m.runs.WithLabelValues(r)
	}
	for _, v := range []string{replica.VerdictVerified, replica.VerdictDiffers, replica.VerdictUnverifiable} {
		m.datasets.WithLabelValues(v)
	}
	return m, nil
}

func (m *verifyMetrics) observe(rep replica.VerifyReport, err error, at time.Time) {
	m.last.Set(float64(at.Unix()))
	if err != nil {
		m.runs.WithLabelValues(verifyFailed).Inc()
		return
	}
	result := verifyOK
	switch {
	case !rep.OK():
		result = verifyDiffers
	case rep.NothingVerified() != "":
		result = verifyFailed
	}
	m.runs.WithLabelValues(result).Inc()
	m.duration.Set(rep.Duration.Seconds())
	m.datasets.WithLabelValues(replica.VerdictVerified).Set(float64(rep.Verified + rep.Repaired))
	m.datasets.WithLabelValues(replica.VerdictDiffers).Set(float64(rep.Differ))
	m.datasets.WithLabelValues(replica.VerdictUnverifiable).Set(float64(rep.Unverifiable))
}

// verifyDue is how long until the next verify run; ok false when
// VerifyEvery is off.
func (d *Daemon) verifyDue() (time.Duration, bool) {
	if d.verifyEvery <= 0 {
		return 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(d.nextVerify.Sub(d.now()), 0), true
}

// maybeVerify runs Verify on the open replica when it is due.
func (d *Daemon) maybeVerify(ctx context.Context, r *replica.Replica) {
	if wait, on := d.verifyDue(); !on || wait > 0 {
		return
	}
	rep, err := r.Verify(ctx, replica.VerifyOptions{})
	at := d.now()
	d.mu.Lock()
	d.nextVerify = at.Add(d.verifyEvery)
	d.mu.Unlock()
	d.verifyMetrics.observe(rep, err, at)
	switch {
	case err != nil:
		d.log.Warn("verify: could not run; it runs again at its next time", logs.Err(err))
	case rep.NothingVerified() != "":
		d.log.Warn("verify: no dataset could be verified; it runs again at its next time",
			slog.Int("unverifiable", rep.Unverifiable), slog.String("reason", rep.NothingVerified()))
	case !rep.OK():
		for _, c := range rep.Datasets {
			if c.Verdict == replica.VerdictDiffers {
				d.log.Warn("verify: the table differs from the version it holds; `ploti-replica verify --repair` reloads it",
					slog.String("dataset", c.DatasetID), slog.Int("version", c.Version), slog.Any("differences", c.Differences))
			}
		}
	default:
		d.log.Info("verify: every dataset verified",
			slog.Int("verified", rep.Verified), slog.Int("unverifiable", rep.Unverifiable), logs.Ms("took", rep.Duration))
	}
}
