package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// stallingProxy is a proxy in front of the emulator that, once stall is
// set, answers the API's requests with a 200 and its headers and then
// nothing until the client hangs up.
func stallingProxy(t *testing.T, em *emulator.Emulator) (string, *atomic.Bool) {
	t.Helper()
	target, err := url.Parse(em.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var stall atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stall.Load() && strings.HasPrefix(r.URL.Path, "/v1/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &stall
}

// A server that sends an answer's headers and then nothing ends `sync`
// with an error naming the request and the limit, and the flag that sets
// it; the sync does not hold the file until the server hangs up.
func TestSync_stalledAnswerEndsIt(t *testing.T) {
	em, _, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errs)
	}
	proxied, stall := stallingProxy(t, em)
	stall.Store(true)
	start := time.Now()
	// --api-url on the command line: the file moves to the proxy (a file
	// follows the API server it records unless told).
	code, _, errs := cli(t, vars, "sync", "--api-url", proxied, "--api-idle-timeout", "300ms", "--max-attempts", "2")
	took := time.Since(start)
	if code != exitFailure || !strings.Contains(errs, "GET /v1/feeds/subscriptions/") {
		t.Fatalf("sync against stalled answers: exit %d, stderr %q; want %d naming the request", code, errs, exitFailure)
	}
	assertHint(t, errs, "no byte for 300ms", "(hint: --api-idle-timeout")
	if took > 20*time.Second {
		t.Fatalf("took %v", took)
	}
}

// A Retry-After past --retry-after-budget (ten years) ends `sync` at once
// with the rate-limited exit code, saying when Ploti asked to come back.
func TestSync_retryAfterPastTheBudget(t *testing.T) {
	em, _, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errs)
	}
	em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultStatus, Status: 429,
		Code: "rate_limited", RetryAfter: 10 * 365 * 24 * 3600, Count: -1})
	defer em.ClearFaults()
	start := time.Now()
	code, _, errs := cli(t, vars, "sync")
	took := time.Since(start)
	when := time.Now().Add(10 * 365 * 24 * time.Hour).UTC().Format("2006-01-02T")
	if code != exitRateLimited || !strings.Contains(errs, "come back at "+when) {
		t.Fatalf("sync told to come back in ten years: exit %d, stderr %q; want %d saying when", code, errs, exitRateLimited)
	}
	assertHint(t, errs, "come back at ", "(hint: --retry-after-budget")
	if took > 30*time.Second {
		t.Fatalf("took %v, want at once", took)
	}
}

// While `sync` waits out a Retry-After, other processes open the file:
// `status` (in this process) and a reader in another process; the sync
// then takes the file back and ends with exit 0.
func TestSync_fileFreeWhileWaitingRetryAfter(t *testing.T) {
	em, d, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errs)
	}
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/events", Kind: emulator.FaultStatus, Status: 429,
		Code: "rate_limited", RetryAfter: 8})
	type result struct {
		code int
		errs string
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		code, _, errs := cli(t, vars, "sync", "--lock-timeout", "30s")
		done <- result{code, errs, time.Now()}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for em.FaultHits()[emulator.FaultStatus] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sync never met the 429")
		}
		time.Sleep(50 * time.Millisecond)
	}
	hit := time.Now()
	var code int
	var errs string
	for {
		code, _, errs = cli(t, vars, "status", "--lock-timeout", "0")
		if code == exitOK || time.Since(hit) > 4*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code != exitOK {
		t.Fatalf("status during the sync's Retry-After wait: exit %d, stderr %q; want the file free", code, errs)
	}
	opened := time.Since(hit)
	holdFile(t, vars["PLOTI_DB"], 100*time.Millisecond) // another process opens it too
	res := <-done
	if res.code != exitOK {
		t.Fatalf("the sync after the wait: exit %d\n%s", res.code, res.errs)
	}
	if res.at.Sub(hit) < 7*time.Second {
		t.Fatalf("the sync ended %v after the 429: it did not wait the Retry-After", res.at.Sub(hit))
	}
	t.Logf("status opened the file %v into the wait", opened)
}
