package emulator

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// FaultKind is what an injected fault does to a request.
type FaultKind int

const (
	// FaultStatus answers Fault.Status (with the error envelope when
	// Fault.Code is set, and Retry-After when Fault.RetryAfter is).
	FaultStatus FaultKind = iota
	// FaultReset closes the connection without an answer (a TCP reset).
	FaultReset
	// FaultTruncate serves a file's first half as if it were the whole file
	// (a well-framed short body: bytes and sha256 do not match); an API
	// answer's first half likewise (JSON cut short).
	FaultTruncate
	// FaultCutOff announces the whole file (or API answer) but drops the
	// connection halfway.
	FaultCutOff
	// FaultCorrupt serves a file of the right length with some bytes
	// flipped; an API answer with some bytes made NUL (JSON that does not
	// parse).
	FaultCorrupt
	// FaultSlow waits Fault.Delay (real time) before answering normally.
	FaultSlow
)

// String names the kind as a log line shows it, such as "status" or "reset".
func (k FaultKind) String() string {
	names := []string{"status", "reset", "truncate", "cut_off", "corrupt", "slow"}
	if k >= 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// Fault is one injected misbehaviour, for Inject.
type Fault struct {
	// Match selects requests: an optional method and a space, then a pattern
	// for the URL path as path.Match reads it ('*' matches within one
	// segment); a pattern ending in "/**" matches everything below. Examples:
	// "GET /v1/feeds/subscriptions/*/events", "/files/**", "/v1/**".
	Match string
	// Kind is what happens.
	Kind FaultKind
	// Status and Code are the answer of a FaultStatus ("" Code: no body).
	Status int
	Code   string
	// RetryAfter, when positive, is sent as the Retry-After header.
	RetryAfter int
	// Delay is how long a FaultSlow waits.
	Delay time.Duration
	// Count is how many matching requests it hits; zero means one, negative
	// means every one until ClearFaults.
	Count int
	// Skip is how many matching requests pass untouched before the fault
	// hits (a file's body after its footer, for a ranged download).
	Skip int
}

type fault struct {
	Fault
	left, skip int
}

// Inject adds a fault. Faults are tried in the order injected; the first
// that matches a request and has hits left applies.
func (e *Emulator) Inject(f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	left := f.Count
	if left == 0 {
		left = 1
	}
	e.faults = append(e.faults, &fault{Fault: f, left: left, skip: f.Skip})
}

// FailNext makes the next n requests whose path matches pattern (see
// Fault.Match) answer status, with the error envelope and a Retry-After of
// one second for 429 and 503.
func (e *Emulator) FailNext(pattern string, status, n int) {
	f := Fault{Match: pattern, Kind: FaultStatus, Status: status, Count: max(n, 1)}
	switch status {
	case http.StatusTooManyRequests:
		f.Code, f.RetryAfter = "rate_limited", 1
	case http.StatusServiceUnavailable:
		f.Code, f.RetryAfter = "plan_unavailable", 1
	case http.StatusBadRequest:
		f.Code = "invalid_input"
	case http.StatusNotFound:
		f.Code = "not_found"
	case http.StatusConflict:
		f.Code = "busy"
	case http.StatusGone:
		f.Code = "expired"
	}
	e.Inject(f)
}

// FaultHits is how many requests injected faults have hit so far, by kind:
// a fault injected but never matched by a request is not counted, so a
// test can hold the client to what actually reached it.
func (e *Emulator) FaultHits() map[FaultKind]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[FaultKind]int, len(e.faultHits))
	for k, n := range e.faultHits {
		out[k] = n
	}
	return out
}

// ClearFaults removes every injected fault.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = nil
}

func faultMatches(pattern string, r *http.Request) bool {
	if m, p, ok := strings.Cut(pattern, " "); ok {
		if m != r.Method {
			return false
		}
		pattern = p
	}
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		return r.URL.Path == prefix || strings.HasPrefix(r.URL.Path, prefix+"/")
	}
	ok, _ := path.Match(pattern, r.URL.Path)
	return ok
}

// takeFault finds the fault for a request and uses one of its hits.
func (e *Emulator) takeFault(r *http.Request, file bool) *Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range e.faults {
		if f.left == 0 || !faultMatches(f.Match, r) {
			continue
		}
		if f.skip > 0 {
			f.skip--
			continue
		}
		if f.left > 0 {
			f.left--
		}
		if e.faultHits == nil {
			e.faultHits = map[FaultKind]int{}
		}
		e.faultHits[f.Kind]++
		ff := f.Fault
		return &ff
	}
	return nil
}

// applyFault applies a status, reset or slow fault; it reports whether the
// request was answered. A body fault rides on the returned request's context
// to serveBody.
func (e *Emulator) applyFault(w http.ResponseWriter, r *http.Request, file bool) (bool, *http.Request) {
	f := e.takeFault(r, file)
	if f == nil {
		return false, r
	}
	// The path only: a file link's query holds its signature.
	e.log.Debug("emulator: fault injected", "kind", f.Kind.String(), "method", r.Method, "path", r.URL.Path, "match", f.Match)
	switch f.Kind {
	case FaultStatus:
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		if f.Code == "" {
			w.WriteHeader(f.Status)
			return true, r
		}
		writeError(w, &apiError{f.Status, f.Code, "injected fault"})
		return true, r
	case FaultReset:
		resetConn(w)
		return true, r
	case FaultSlow:
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
		}
		return false, r
	default:
		return false, r.WithContext(withBodyFault(r.Context(), f))
	}
}

func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// serveBody sends a file, spoiled as a body fault says.
func (e *Emulator) serveBody(w http.ResponseWriter, r *http.Request, rel string, f *os.File, size int64) {
	w.Header().Set("Content-Type", contentType(rel))
	bf := bodyFault(r.Context())
	if e.noRanges.Load() {
		r.Header.Del("Range")
	}
	if bf == nil {
		http.ServeContent(w, r, "", time.Time{}, f)
		return
	}
	switch bf.Kind {
	case FaultTruncate:
		w.Header().Set("Content-Length", strconv.FormatInt(size/2, 10))
		io.CopyN(w, f, size/2)
	case FaultCutOff:
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		io.CopyN(w, f, size/2)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	case FaultCorrupt:
		b, err := io.ReadAll(f)
		if err != nil {
			http.Error(w, "read failed", http.StatusInternalServerError)
			return
		}
		for i := len(b) / 3; i < len(b)/3+16 && i < len(b); i++ {
			b[i] ^= 0xff
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	}
}

// limiter is the per-key rate limit on the emulator clock.
type limiter struct {
	all, strict []time.Time
}

func prune(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-time.Minute)) {
		i++
	}
	return ts[i:]
}

// allow records a call, or says how many seconds to wait.
func (l *limiter) allow(now time.Time, strict bool) (bool, int) {
	l.all, l.strict = prune(l.all, now), prune(l.strict, now)
	wait := func(ts []time.Time) int {
		return max(1, int(math.Ceil(ts[0].Add(time.Minute).Sub(now).Seconds())))
	}
	if len(l.all) >= 120 {
		return false, wait(l.all)
	}
	if strict && len(l.strict) >= 20 {
		return false, wait(l.strict)
	}
	l.all = append(l.all, now)
	if strict {
		l.strict = append(l.strict, now)
	}
	return true, 0
}
