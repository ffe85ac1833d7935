package emulator

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Wire is the network between a client and Ploti, as the emulator
// imitates it: every request, to the API or for a file, waits Latency
// before its answer starts (the round trip), and file bodies in flight
// share Bandwidth bytes a second (one link: two downloads at once each get
// half). API bodies are not capped: they are small, and at Ploti they come
// from another host than the files. The cap is exact over a whole run: the
// file bytes served by time t never exceed Bandwidth × t plus one chunk,
// so total file bytes / Bandwidth is a lower bound of any bootstrap.
type Wire struct {
	// Latency is added before each answer; zero adds none.
	Latency time.Duration
	// Bandwidth is the file bytes a second shared by every download; zero
	// leaves files uncapped.
	Bandwidth int64
}

// OfficeWire looks like a good office link: 50 MB/s, 40 ms a request.
var OfficeWire = Wire{Latency: 40 * time.Millisecond, Bandwidth: 50_000_000}

// wireChunk is how many bytes of a file body go out in one paced write.
const wireChunk = 32 << 10

// wireState is the wire in use and the link's schedule.
type wireState struct {
	mu   sync.Mutex
	w    Wire
	next time.Time // when the link is free: the end of the last chunk's slot
}

// SetWire makes the emulator answer over w from now on; the zero Wire (the
// default) answers at loopback speed. Tests leave it off.
func (e *Emulator) SetWire(w Wire) {
	e.wire.mu.Lock()
	defer e.wire.mu.Unlock()
	e.wire.w, e.wire.next = w, time.Time{}
}

func (s *wireState) get() Wire {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w
}

// slot reserves the link for n bytes and returns when they have gone
// through it: after the slots reserved before, at Bandwidth.
func (s *wireState) slot(n int, bw int64) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slotAt(time.Now(), n, bw)
}

// wireIdle is how far behind its schedule the link may fall and still
// make it up. The schedule is absolute: a writer that wakes up late sends
// its next chunks without waiting until it is back on time, so a run of
// chunks takes its bytes over the cap, not that plus every late wake-up
// (a chunk's slot is 0.66 ms at 50 MB/s; Go's timers wake up tens to
// hundreds of microseconds late, and with the schedule restarted at each
// late wake-up a 484 MiB file took 20 s instead of 10.2). A link further
// behind than this was idle: its schedule starts again from now, and at
// most this much goes out above the cap.
const wireIdle = 20 * time.Millisecond

// slotAt is slot at the time now.
func (s *wireState) slotAt(now time.Time, n int, bw int64) time.Time {
	if now.Sub(s.next) > wireIdle {
		s.next = now
	}
	s.next = s.next.Add(time.Duration(float64(n) / float64(bw) * float64(time.Second)))
	return s.next
}

// wired puts h behind the wire: the latency before it runs, and, for file
// bodies (paths under /files/, on either listener), the shared bandwidth.
func (e *Emulator) wired(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wire := e.wire.get()
		if wire.Latency > 0 && !sleepCtx(r.Context(), wire.Latency) {
			return
		}
		if wire.Bandwidth > 0 && strings.HasPrefix(r.URL.Path, "/files/") {
			w = &pacedWriter{ResponseWriter: w, s: &e.wire, bw: wire.Bandwidth, ctx: r.Context()}
		}
		h.ServeHTTP(w, r)
	})
}

// sleepCtx waits d, or less when ctx ends first; it reports whether ctx
// is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pacedWriter writes a body in chunks, each once its slot on the link has
// passed. It hides the ResponseWriter's ReadFrom, so that a file body
// goes through Write and not sendfile.
type pacedWriter struct {
	http.ResponseWriter
	s   *wireState
	bw  int64
	ctx context.Context
}

func (p *pacedWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), wireChunk)
		if !sleepCtx(p.ctx, time.Until(p.s.slot(n, p.bw))) {
			return written, p.ctx.Err()
		}
		m, err := p.ResponseWriter.Write(b[:n])
		written += m
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// Flush passes a flush through (FaultCutOff flushes before it drops the
// connection).
func (p *pacedWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
