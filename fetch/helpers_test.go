package fetch

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

const testKey = "sk_test_SUPERSECRETKEY"

// sleeper records the waits a Client asks for and returns at once (or
// with the context's error).
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// recorded is what a test server saw of one request.
type recorded struct {
	Method, Path, RawQuery, Auth, UserAgent, Range string
	Body                                           []byte
}

// recorder is an httptest server that records every request and hands it
// to a handler the test sets.
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	handler http.HandlerFunc
}

func newRecorder(t testing.TB, h http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{handler: h}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{
			Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery,
			Auth: req.Header.Get("Authorization"), UserAgent: req.Header.Get("User-Agent"),
			Range: req.Header.Get("Range"), Body: body,
		})
		h := r.handler
		r.mu.Unlock()
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) Requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func (r *recorder) SetHandler(h http.HandlerFunc) {
	r.mu.Lock()
	r.handler = h
	r.mu.Unlock()
}

// MustClient builds a Client on baseURL with a recording sleeper, no rate
// limit and a spool dir in t.TempDir(), then applies mods.
func MustClient(tb testing.TB, baseURL string, mods ...func(*Options)) (*Client, *sleeper) {
	tb.Helper()
	s := &sleeper{}
	opts := Options{
		BaseURL:          baseURL,
		APIKey:           testKey,
		SpoolDir:         tb.TempDir() + "/spool",
		Sleep:            s.Sleep,
		DisableRateLimit: true,
		RetryMinWait:     100 * time.Millisecond,
		RetryMaxWait:     time.Second,
	}
	for _, m := range mods {
		m(&opts)
	}
	c, err := New(opts)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return c, s
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers the contract's error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// fakeParquet returns bytes with valid Parquet framing: magic, payload,
// a footer of footerLen bytes, its length and the magic again.
func fakeParquet(payload string) []byte {
	footer := []byte("footer-bytes")
	b := append([]byte("PAR1"), payload...)
	b = append(b, footer...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(footer)))
	return append(b, "PAR1"...)
}

func int64p(v int64) *int64 { return &v }

func mustParse(tb testing.TB, s string) *url.URL {
	tb.Helper()
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatalf("parse %q: %v", s, err)
	}
	return u
}
