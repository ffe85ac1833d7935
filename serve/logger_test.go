package serve

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ploti-replica/ploti-replica/replica"
)

// The daemon's own lines (here its sync's) go to Options.Logger when set,
// else to Replica.Logger; a duration is a whole count of milliseconds.
func TestDaemon_logsToOptionsLoggerElseTheReplicas(t *testing.T) {
	em, sub := testEmulator(t)
	for _, own := range []bool{true, false} {
		var daemonLog, replicaLog bytes.Buffer
		jsonLog := func(b *bytes.Buffer) *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }
		opts := Options{DB: filepath.Join(t.TempDir(), "feeds.duckdb"), Registry: prometheus.NewRegistry(), Poll: time.Hour,
			Replica: replica.Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, Logger: jsonLog(&replicaLog)}}
		want := &replicaLog
		if own {
			opts.Logger, want = jsonLog(&daemonLog), &daemonLog
		}
		d, err := New(opts)
		must(t, err)
		srv := httptest.NewServer(d.Handler())
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		waitSyncs(t, srv.URL, 1)
		cancel()
		select {
		case err := <-done:
			must(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return within 10s of the cancel")
		}
		srv.Close()
		line := ""
		for l := range strings.SplitSeq(want.String(), "\n") {
			if strings.Contains(l, `"msg":"sync"`) {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, `"result":"ok"`) || !strings.Contains(line, `"events_applied":`) {
			t.Fatalf("own logger %v: no sync line in the logger that should have it:\n%s", own, want)
		}
		if own && strings.Contains(replicaLog.String(), `"msg":"sync"`) {
			t.Fatalf("the daemon's sync line went to Replica.Logger too:\n%s", replicaLog.String())
		}
		if i := strings.Index(line, `"duration_ms":`); i < 0 || strings.ContainsAny(strings.SplitN(line[i:], ",", 2)[0], ".e") {
			t.Fatalf("duration_ms is not a whole count of milliseconds: %s", line)
		}
	}
}
