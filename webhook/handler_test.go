package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/webhook"
)

const testMaxBody = 512

// delivery describes one request to the Handler.
type delivery struct {
	method  string        // default POST
	secret  string        // default testSecret
	id      string        // webhook-id; default "msg_1"
	at      time.Duration // signing time relative to testNow
	body    string
	tamper  string // if set, the body sent instead of the one signed
	sig     string // if set, the webhook-signature sent instead
	omit    string // a header to leave out
	chunked bool   // hide the length, so the limit is met while reading
}

// request builds the signed request for d.
func (d delivery) request(tb testing.TB) *http.Request {
	tb.Helper()
	method, secret, id := d.method, d.secret, d.id
	if method == "" {
		method = http.MethodPost
	}
	if secret == "" {
		secret = testSecret
	}
	if id == "" {
		id = "msg_1"
	}
	ts := testNow.Add(d.at)
	sig := mustSign(tb, secret, id, ts, []byte(d.body))
	if d.sig != "" {
		sig = d.sig
	}
	sent := d.body
	if d.tamper != "" {
		sent = d.tamper
	}
	var body io.Reader = strings.NewReader(sent)
	if d.chunked {
		body = io.MultiReader(body) // unknown length
	}
	r := httptest.NewRequest(method, "/webhook", body)
	r.Header = headers(id, strconv.FormatInt(ts.Unix(), 10), sig)
	r.Header.Del(d.omit)
	return r
}

// event returns a JSON event body.
func event(id, typ string) string {
	return fmt.Sprintf(`{"id":%q,"type":%q,"timestamp":"2026-11-20T10:00:01Z","subscriptionId":"sub_1","data":{"datasetId":"ds_x","version":7}}`, id, typ)
}

// recorder collects a Handler's callbacks.
type recorder struct {
	mu       sync.Mutex
	events   []webhook.Event
	others   []webhook.Event
	observed []webhook.Result
}

func (rec *recorder) onEvent(_ context.Context, e webhook.Event) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.events = append(rec.events, e)
}

func (rec *recorder) onOther(_ context.Context, e webhook.Event) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.others = append(rec.others, e)
}

func (rec *recorder) observe(r webhook.Result) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.observed = append(rec.observed, r)
}

// fixture is a Handler wired to a recorder and a Trigger.
type fixture struct {
	h    *webhook.Handler
	trig *webhook.Trigger
	rec  *recorder
	logs *bytes.Buffer
	now  time.Time
}

// mustFixture returns a Handler whose clock reads f.now, logging at debug
// level into f.logs.
func mustFixture(tb testing.TB) *fixture {
	tb.Helper()
	f := &fixture{trig: webhook.NewTrigger(), rec: &recorder{}, logs: &bytes.Buffer{}, now: testNow}
	clock := func() time.Time { return f.now }
	h, err := webhook.NewHandler(webhook.HandlerOptions{
		Verifier: mustVerifier(tb, testSecret, clock),
		Trigger:  f.trig,
		OnEvent:  f.rec.onEvent,
		OnOther:  f.rec.onOther,
		Observe:  f.rec.observe,
		MaxBody:  testMaxBody,
		Logger:   slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		tb.Fatalf("NewHandler: %v", err)
	}
	f.h = h
	return f
}

// serve sends r and returns the response's status and JSON result.
func (f *fixture) serve(tb testing.TB, r *http.Request) (int, webhook.Result) {
	tb.Helper()
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	if got, want := w.Header().Get("Content-Type"), "application/json"; got != want {
		tb.Fatalf("Content-Type = %q, want %q", got, want)
	}
	var resp struct{ Result webhook.Result }
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		tb.Fatalf("decode answer %q: %v", w.Body.String(), err)
	}
	return w.Code, resp.Result
}

// signalled reports whether a signal is pending, taking it.
func (f *fixture) signalled() bool {
	select {
	case <-f.trig.C():
		return true
	default:
		return false
	}
}

func TestHandler_ServeHTTP(t *testing.T) {
	feed := event("evt_1", "feed.dataset.updated")
	other := mustSign(t, otherSecret, "msg_1", testNow, []byte(feed))
	right := mustSign(t, testSecret, "msg_1", testNow, []byte(feed))
	padded := feed + strings.Repeat(" ", testMaxBody-len(feed))
	tests := []struct {
		name       string
		d          delivery
		wantStatus int
		wantResult webhook.Result
		wantEvents int // OnEvent calls, each also signalling the Trigger
		wantOthers int
	}{
		{name: "feed event", d: delivery{body: feed}, wantStatus: 202, wantResult: webhook.ResultOK, wantEvents: 1},
		{name: "rotated secret, several signatures", d: delivery{body: feed, sig: "v2,AAAA " + other + " " + right},
			wantStatus: 202, wantResult: webhook.ResultOK, wantEvents: 1},
		{name: "feed event within tolerance", d: delivery{body: feed, at: -4 * time.Minute}, wantStatus: 202, wantResult: webhook.ResultOK, wantEvents: 1},
		{name: "body exactly at the limit", d: delivery{body: padded, chunked: true}, wantStatus: 202, wantResult: webhook.ResultOK, wantEvents: 1},
		{name: "ping", d: delivery{body: `{"id":"evt_p","type":"ping","timestamp":"2026-11-20T10:00:01Z","data":{}}`},
			wantStatus: 200, wantResult: webhook.ResultPing, wantOthers: 1},
		{name: "dataset watch event", d: delivery{body: event("evt_w", "dataset.changed")}, wantStatus: 200, wantResult: webhook.ResultOther, wantOthers: 1},
		{name: "request event", d: delivery{body: event("evt_r", "data_request.ready")}, wantStatus: 200, wantResult: webhook.ResultOther, wantOthers: 1},
		{name: "feed without dot is not feed", d: delivery{body: event("evt_f", "feedback")}, wantStatus: 200, wantResult: webhook.ResultOther, wantOthers: 1},
		{name: "wrong signature", d: delivery{body: feed, secret: otherSecret}, wantStatus: 401, wantResult: webhook.ResultBadSignature},
		{name: "several wrong signatures", d: delivery{body: feed, sig: other + " " + other}, wantStatus: 401, wantResult: webhook.ResultBadSignature},
		{name: "body changed after signing", d: delivery{body: feed, tamper: feed + "\n"}, wantStatus: 401, wantResult: webhook.ResultBadSignature},
		{name: "missing webhook-id", d: delivery{body: feed, omit: webhook.HeaderID}, wantStatus: 400, wantResult: webhook.ResultMissingHeaders},
		{name: "missing webhook-timestamp", d: delivery{body: feed, omit: webhook.HeaderTimestamp}, wantStatus: 400, wantResult: webhook.ResultMissingHeaders},
		{name: "missing webhook-signature", d: delivery{body: feed, omit: webhook.HeaderSignature}, wantStatus: 400, wantResult: webhook.ResultMissingHeaders},
		{name: "too old", d: delivery{body: feed, at: -testTolerance - time.Second}, wantStatus: 401, wantResult: webhook.ResultTooOld},
		{name: "too far ahead", d: delivery{body: feed, at: testTolerance + time.Second}, wantStatus: 401, wantResult: webhook.ResultTooNew},
		{name: "oversized body", d: delivery{body: padded + " "}, wantStatus: 413, wantResult: webhook.ResultTooLarge},
		{name: "oversized body of unknown length", d: delivery{body: padded + " ", chunked: true}, wantStatus: 413, wantResult: webhook.ResultTooLarge},
		{name: "malformed JSON", d: delivery{body: `{"id":"evt_1","type":`}, wantStatus: 400, wantResult: webhook.ResultBadJSON},
		{name: "JSON array", d: delivery{body: `[]`}, wantStatus: 400, wantResult: webhook.ResultBadJSON},
		{name: "no id", d: delivery{body: `{"type":"feed.dataset.updated","data":{}}`}, wantStatus: 400, wantResult: webhook.ResultBadJSON},
		{name: "no type", d: delivery{body: `{"id":"evt_1","data":{}}`}, wantStatus: 400, wantResult: webhook.ResultBadJSON},
		{name: "bad event timestamp", d: delivery{body: `{"id":"evt_1","type":"feed.dataset.updated","timestamp":"yesterday"}`}, wantStatus: 400, wantResult: webhook.ResultBadJSON},
		{name: "GET", d: delivery{method: http.MethodGet, body: feed}, wantStatus: 405, wantResult: webhook.ResultBadMethod},
		{name: "PUT", d: delivery{method: http.MethodPut, body: feed}, wantStatus: 405, wantResult: webhook.ResultBadMethod},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustFixture(t)
			status, result := f.serve(t, tc.d.request(t))
			if status != tc.wantStatus || result != tc.wantResult {
				t.Fatalf("answer = %d %q, want %d %q", status, result, tc.wantStatus, tc.wantResult)
			}
			if got, want := f.signalled(), tc.wantEvents > 0; got != want {
				t.Fatalf("signalled = %v, want %v", got, want)
			}
			if got, want := len(f.rec.events), tc.wantEvents; got != want {
				t.Fatalf("OnEvent calls = %d, want %d", got, want)
			}
			if got, want := len(f.rec.others), tc.wantOthers; got != want {
				t.Fatalf("OnOther calls = %d, want %d", got, want)
			}
			if got, want := fmt.Sprint(f.rec.observed), fmt.Sprint([]webhook.Result{tc.wantResult}); got != want {
				t.Fatalf("observed %s, want %s", got, want)
			}
			if got, want := f.h.Stats()[tc.wantResult], uint64(1); got != want {
				t.Fatalf("Stats()[%s] = %d, want %d", tc.wantResult, got, want)
			}
		})
	}
}

func TestHandler_ServeHTTP_event(t *testing.T) {
	f := mustFixture(t)
	body := event("evt_42", "feed.dataset.updated")
	f.serve(t, delivery{id: "msg_9", body: body}.request(t))
	if len(f.rec.events) != 1 {
		t.Fatalf("OnEvent calls = %d, want 1", len(f.rec.events))
	}
	e := f.rec.events[0]
	if got, want := fmt.Sprint(e.ID, e.Type, e.SubscriptionID, e.DeliveryID), fmt.Sprint("evt_42", "feed.dataset.updated", "sub_1", "msg_9"); got != want {
		t.Fatalf("event = %s, want %s", got, want)
	}
	if got, want := e.Timestamp, time.Date(2026, 11, 20, 10, 0, 1, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("Timestamp = %v, want %v", got, want)
	}
	if got, want := string(e.Data), `{"datasetId":"ds_x","version":7}`; got != want {
		t.Fatalf("Data = %s, want %s", got, want)
	}
	if got, want := string(e.Raw), body; got != want {
		t.Fatalf("Raw = %s, want %s", got, want)
	}
}

func TestHandler_ServeHTTP_allow(t *testing.T) {
	f := mustFixture(t)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/webhook", nil))
	if got, want := w.Header().Get("Allow"), http.MethodPost; got != want {
		t.Fatalf("Allow = %q, want %q", got, want)
	}
}

// TestHandler_ServeHTTP_duplicate guards "delivery is at least once": a
// repeated event id gets 2xx and no second signal, whatever the delivery.
func TestHandler_ServeHTTP_duplicate(t *testing.T) {
	feed := event("evt_1", "feed.dataset.updated")
	ping := `{"id":"evt_p","type":"ping","data":{}}`
	steps := []struct {
		name       string
		advance    time.Duration // clock change before the step
		d          delivery
		wantResult webhook.Result
		wantSignal bool
	}{
		{name: "first delivery", d: delivery{id: "msg_1", body: feed}, wantResult: webhook.ResultOK, wantSignal: true},
		{name: "same delivery replayed", d: delivery{id: "msg_1", body: feed}, wantResult: webhook.ResultDuplicate},
		{name: "retry signed later", advance: 4 * time.Minute, d: delivery{id: "msg_1", body: feed}, wantResult: webhook.ResultDuplicate},
		{name: "another delivery of the event", d: delivery{id: "msg_2", body: feed}, wantResult: webhook.ResultDuplicate},
		{name: "another event", d: delivery{id: "msg_3", body: event("evt_2", "feed.dataset.added")}, wantResult: webhook.ResultOK, wantSignal: true},
		{name: "ping", d: delivery{id: "msg_4", body: ping}, wantResult: webhook.ResultPing},
		{name: "ping again", d: delivery{id: "msg_4", body: ping}, wantResult: webhook.ResultDuplicate},
		{name: "bad signature does not count as seen", d: delivery{id: "msg_5", body: event("evt_3", "feed.dataset.added"), secret: otherSecret},
			wantResult: webhook.ResultBadSignature},
		{name: "then the good one", d: delivery{id: "msg_5", body: event("evt_3", "feed.dataset.added")}, wantResult: webhook.ResultOK, wantSignal: true},
		{name: "after the window", advance: webhook.DefaultSeenWindow, d: delivery{id: "msg_1", body: feed}, wantResult: webhook.ResultOK, wantSignal: true},
	}
	f := mustFixture(t)
	for _, st := range steps {
		f.now = f.now.Add(st.advance)
		st.d.at += f.now.Sub(testNow) // sign at the current time
		_, result := f.serve(t, st.d.request(t))
		if result != st.wantResult {
			t.Fatalf("%s: result = %q, want %q", st.name, result, st.wantResult)
		}
		if got := f.signalled(); got != st.wantSignal {
			t.Fatalf("%s: signalled = %v, want %v", st.name, got, st.wantSignal)
		}
	}
	if got, want := len(f.rec.events), 4; got != want {
		t.Fatalf("OnEvent calls = %d, want %d", got, want)
	}
	stats := f.h.Stats()
	if got, want := fmt.Sprint(stats[webhook.ResultOK], stats[webhook.ResultDuplicate]), "4 4"; got != want {
		t.Fatalf("ok, duplicate = %s, want %s", got, want)
	}
}

// TestHandler_ServeHTTP_concurrentDuplicates checks that of many
// simultaneous deliveries of one event exactly one is signalled.
func TestHandler_ServeHTTP_concurrentDuplicates(t *testing.T) {
	f := mustFixture(t)
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		r := delivery{id: fmt.Sprintf("msg_%d", i), body: event("evt_1", "feed.dataset.updated")}.request(t)
		wg.Go(func() { f.h.ServeHTTP(httptest.NewRecorder(), r) })
	}
	wg.Wait()
	stats := f.h.Stats()
	if got, want := fmt.Sprint(stats[webhook.ResultOK], stats[webhook.ResultDuplicate]), fmt.Sprint(1, n-1); got != want {
		t.Fatalf("ok, duplicate = %s, want %s", got, want)
	}
	if got, want := len(f.rec.events), 1; got != want {
		t.Fatalf("OnEvent calls = %d, want %d", got, want)
	}
}

// TestHandler_ServeHTTP_server sends real HTTP requests, so that the limit
// is also met on a chunked body read from the network.
func TestHandler_ServeHTTP_server(t *testing.T) {
	f := mustFixture(t)
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	tests := []struct {
		name       string
		d          delivery
		wantStatus int
	}{
		{name: "feed event", d: delivery{body: event("evt_1", "feed.dataset.updated")}, wantStatus: 202},
		{name: "oversized chunked", d: delivery{body: strings.Repeat("x", 4*testMaxBody), chunked: true}, wantStatus: 413},
		{name: "oversized with length", d: delivery{body: strings.Repeat("x", 4*testMaxBody)}, wantStatus: 413},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.d.request(t)
			req, err := http.NewRequestWithContext(t.Context(), r.Method, srv.URL+"/webhook", r.Body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header = r.Header
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got, want := resp.StatusCode, tc.wantStatus; got != want {
				t.Fatalf("status = %d, want %d", got, want)
			}
		})
	}
}

func TestNewHandler(t *testing.T) {
	if _, err := webhook.NewHandler(webhook.HandlerOptions{}); !errors.Is(err, webhook.ErrNoVerifier) {
		t.Fatalf("NewHandler without Verifier = %v, want ErrNoVerifier", err)
	}
	h, err := webhook.NewHandler(webhook.HandlerOptions{Verifier: mustVerifier(t, testSecret, fixedClock)})
	if err != nil {
		t.Fatal(err)
	}
	stats := h.Stats()
	for _, r := range webhook.Results() {
		if n, ok := stats[r]; !ok || n != 0 {
			t.Fatalf("Stats()[%s] = %d, %v; want 0, true", r, n, ok)
		}
	}
	// The default limit is 1 MiB and the zero Logger logs nothing.
	body := event("evt_1", "feed.dataset.updated") + strings.Repeat(" ", webhook.DefaultMaxBody)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, delivery{body: body}.request(t))
	if got, want := w.Code, http.StatusRequestEntityTooLarge; got != want {
		t.Fatalf("status = %d, want %d", got, want)
	}
}

func TestResult_Status(t *testing.T) {
	for _, r := range webhook.Results() {
		t.Run(string(r), func(t *testing.T) {
			s := r.Status()
			ok := r == webhook.ResultOK || r == webhook.ResultDuplicate || r == webhook.ResultPing || r == webhook.ResultOther
			if got, want := s >= 200 && s < 300, ok; got != want {
				t.Fatalf("Status() = %d: 2xx = %v, want %v", s, got, want)
			}
			// Only an event Keep could not record is answered 5xx: Ploti
			// retries a failed delivery (413 excepted), so it comes again.
			if got, want := s >= 500, r == webhook.ResultNotKept; got != want {
				t.Fatalf("Status() = %d: 5xx = %v, want %v", s, got, want)
			}
		})
	}
}

// TestHandler_logs checks that the Handler logs each request and that no
// log line holds the secret (docs/design.md invariant 5).
func TestHandler_logs(t *testing.T) {
	f := mustFixture(t)
	for _, d := range []delivery{
		{body: event("evt_1", "feed.dataset.updated")},
		{body: event("evt_1", "feed.dataset.updated")},
		{body: event("evt_2", "feed.dataset.updated"), secret: otherSecret},
		{body: event("evt_3", "feed.dataset.updated"), at: time.Hour},
		{body: "not json"},
	} {
		f.serve(t, d.request(t))
	}
	logs := f.logs.String()
	if got, want := strings.Count(logs, "\n"), 5; got != want {
		t.Fatalf("%d log lines, want %d:\n%s", got, want, logs)
	}
	for _, s := range []string{strings.TrimPrefix(testSecret, "whsec_"), string(testKey)} {
		if strings.Contains(logs, s) {
			t.Fatalf("logs contain the secret:\n%s", logs)
		}
	}
	for _, want := range []string{`"result":"ok"`, `"result":"duplicate"`, `"result":"bad_signature"`, `"result":"too_new"`, `"result":"bad_json"`, `"event_id":"evt_1"`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("logs lack %s:\n%s", want, logs)
		}
	}
}

// Keep records a non-feed event before the answer; when it fails the
// answer is 503 and the id is forgotten, so that Ploti's retry of the
// delivery is kept (at least once: watch-and-webhooks.txt, "A failed
// delivery is retried").
func TestHandler_Keep(t *testing.T) {
	var kept []string
	fail := true
	h, err := webhook.NewHandler(webhook.HandlerOptions{
		Verifier: mustVerifier(t, testSecret, func() time.Time { return testNow }),
		Keep: func(_ context.Context, e webhook.Event) error {
			if fail {
				return errors.New("disk full")
			}
			kept = append(kept, e.ID)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	send := func(body string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, delivery{body: body}.request(t))
		return w.Code
	}
	req := `{"id":"evt_r1","type":"data_request.ready","timestamp":"2026-11-20T10:00:01Z","data":{"requestId":"req_1","url":"https://app.ploti.ai/r/1"}}`
	if got := send(req); got != http.StatusServiceUnavailable {
		t.Fatalf("a delivery Keep failed: status %d, want 503", got)
	}
	fail = false
	if got := send(req); got != http.StatusOK {
		t.Fatalf("the retry: status %d, want 200", got)
	}
	if got := send(req); got != http.StatusOK {
		t.Fatalf("a repeat: status %d, want 200", got)
	}
	if got := send(event("evt_f", "feed.dataset.updated")); got != http.StatusAccepted {
		t.Fatalf("a feed event: status %d", got)
	}
	if got := send(`{"id":"p1","type":"ping","timestamp":"2026-11-20T10:00:01Z","data":{}}`); got != http.StatusOK {
		t.Fatalf("a ping: status %d", got)
	}
	if len(kept) != 1 || kept[0] != "evt_r1" {
		t.Fatalf("kept %v, want the request event once", kept)
	}
	if n := h.Stats()[webhook.ResultNotKept]; n != 1 {
		t.Fatalf("not kept counted %d times, want 1", n)
	}
}

// A refused delivery's log line says where it was refused as well as why
// (the brief's rule for bad input: "a clear error naming what and where"):
// serve can listen on two webhook paths with a secret each (a
// subscription's and a member's), and a secret put at the wrong path is
// found only from the path.
func TestHandler_logsTheRefusingPath(t *testing.T) {
	f := mustFixture(t)
	f.serve(t, delivery{body: event("evt_1", "feed.dataset.updated"), secret: otherSecret}.request(t))
	logs := f.logs.String()
	for _, want := range []string{`"result":"bad_signature"`, `"path":"/webhook"`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("the refusal's log line lacks %s:\n%s", want, logs)
		}
	}
}
