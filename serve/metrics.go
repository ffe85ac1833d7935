package serve

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/webhook"
)

// serveMetrics are the daemon's Prometheus metrics, on a registry of their
// own (no global state) unless Options.Registry gives one. Every label value is registered at zero up front, so
// that rate() and absent() work from the first scrape.
type serveMetrics struct {
	reg      *prometheus.Registry
	syncs    *prometheus.CounterVec
	duration prometheus.Histogram
	applied  prometheus.Counter
	seen     prometheus.Counter
	datasets *prometheus.GaugeVec
	behind   prometheus.Gauge
	webhooks *prometheus.CounterVec
}

// datasetStatuses are the registry's statuses, the label values of
// ploti_replica_datasets.
var datasetStatuses = replica.DatasetStatuses()

// newServeMetrics registers the metrics on reg (nil: a registry of their
// own, with the Go and process collectors); lastSuccess and now feed the
// seconds-since-last-success gauge.
func newServeMetrics(reg *prometheus.Registry, lastSuccess func() *time.Time, now func() time.Time) (*serveMetrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &serveMetrics{
		reg: reg,
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ploti_replica_syncs_total",
			Help: "Syncs finished, by result: ok, partial (some datasets failed), failed, stopped (by shutdown)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ploti_replica_sync_duration_seconds",
			Help:    "How long each sync took, the file's open and close included.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{Name: "ploti_replica_events_applied_total",
			Help: "Feed events that changed the file."}),
		seen: prometheus.NewCounter(prometheus.CounterOpts{Name: "ploti_replica_events_seen_total",
			Help: "Feed events read from the log, applied or skipped."}),
		datasets: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ploti_replica_datasets",
			Help: "Datasets in the file by status, as the last sync left them."}, []string{"status"}),
		behind: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ploti_replica_events_behind",
			Help: "Events after the stored cursor when the last sync ended (-1: not known)."}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ploti_replica_webhook_requests_total",
			Help: "Requests to the webhook path, by how they were answered: ok (a new feed event), duplicate, ping, other, " +
				"or a rejection (bad_signature, too_old, too_new, too_large, missing_headers, …)."}, []string{"result"}),
	}
	sinceLast := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ploti_replica_seconds_since_last_success",
		Help: "Seconds since the last sync that succeeded; +Inf before the first."}, func() float64 {
		t := lastSuccess()
		if t == nil {
			return math.Inf(1)
		}
		return now().Sub(*t).Seconds()
	})
	if err := register(m.reg, m.syncs, m.duration, m.applied, m.seen, m.datasets, m.behind, m.webhooks, sinceLast); err != nil {
		return nil, err
	}
	for _, r := range []string{ResultOK, ResultPartial, ResultFailed, ResultStopped} {
		m.syncs.WithLabelValues(r)
	}
	for _, s := range datasetStatuses {
		m.datasets.WithLabelValues(s)
	}
	for _, r := range webhook.Results() {
		m.webhooks.WithLabelValues(string(r))
	}
	m.behind.Set(-1)
	return m, nil
}

// register registers cs on reg; an error (a name registered already, on a
// registry the daemon shares) names the metric.
func register(reg *prometheus.Registry, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("serve: register the metrics: %w", err)
		}
	}
	return nil
}

// handler serves /metrics.
func (m *serveMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// observeWebhook is webhook.HandlerOptions.Observe.
func (m *serveMetrics) observeWebhook(r webhook.Result) {
	m.webhooks.WithLabelValues(string(r)).Inc()
}

// observeSync counts a finished sync.
func (m *serveMetrics) observeSync(result string, took time.Duration, out syncOutcome) {
	m.syncs.WithLabelValues(result).Inc()
	m.duration.Observe(took.Seconds())
	m.applied.Add(float64(out.res.EventsApplied))
	m.seen.Add(float64(out.res.EventsSeen))
	if result == ResultStopped {
		return
	}
	m.behind.Set(float64(out.behind))
	if out.status == nil {
		return
	}
	counts := map[string]int{}
	for _, ds := range out.status.Datasets {
		counts[ds.Status]++
	}
	for _, s := range datasetStatuses {
		m.datasets.WithLabelValues(s).Set(float64(counts[s]))
		delete(counts, s)
	}
	for s, n := range counts { // a status this list does not know yet
		m.datasets.WithLabelValues(s).Set(float64(n))
	}
}
