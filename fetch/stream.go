package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// streamTail is at most how many of a Parquet file's last bytes Stream
// asks for first (and at most a quarter of the file): its footer (the row
// groups' places) and the 8 bytes that frame it. A footer longer than
// that is asked for again whole.
const streamTail = 256 << 10

// Stream is a Parquet file downloaded in order while its reader reads the
// parts already on disk (a load that waited for the whole file
// cost the download plus the load). Client.Stream fetches the file's
// footer first with a Range request and writes it at the end of a file of
// the full size in the spool dir; a goroutine then fetches the body from
// its first byte, hashing it. Arrived waits for a prefix, Done for the
// end and the verification (size, sha256, Parquet framing); Close stops
// the download and removes the file.
//
// The file keeps its ".part" name throughout: it is verified only when
// Done says so, and a reader must not take it for a complete file before.
type Stream struct {
	c       *Client
	op      string
	path    string
	size    int64 // the whole file's bytes (the link's)
	tailAt  int64 // where the footer already on disk starts: the body is [0, tailAt)
	file    ploti.File
	refresh func(context.Context) (ploti.File, error)
	cancel  context.CancelFunc
	end     chan struct{} // closed when the body goroutine has finished

	mu    sync.Mutex
	moved chan struct{} // closed (and replaced) whenever have grows or the stream ends
	have  int64         // body bytes on disk, from the first
	err   error         // why the stream ended badly; nil while running or once verified
	done  bool
}

// Stream starts fetching f, a Parquet file of known size, as a Stream
// into SpoolDir/name.part. It returns an error wrapping ErrNoRanges, and
// leaves nothing behind, when the link's server does not answer a Range
// request for the file's last bytes with a 206 whose Content-Range fits
// the file: the caller then downloads it whole (Download). Ploti's
// documentation does not say that signed links serve ranges, so this is
// a fast path that is tried, never relied on. The body's download uses
// ctx: cancelling it stops the stream, as Close does.
func (c *Client) Stream(ctx context.Context, f ploti.File, name string, refresh func(context.Context) (ploti.File, error)) (*Stream, error) {
	op := "stream " + name
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if c.spool == "" {
		return nil, fmt.Errorf("%s: no spool dir in options", op)
	}
	if f.Bytes == nil || *f.Bytes < 12 {
		return nil, fmt.Errorf("%s: %w: the link gives no size", op, ErrNoRanges)
	}
	if err := os.MkdirAll(c.spool, 0o700); err != nil {
		return nil, fmt.Errorf("%s: create spool dir: %w", op, err)
	}
	s := &Stream{c: c, op: op, path: filepath.Join(c.spool, name) + partSuffix, size: *f.Bytes, file: f, refresh: refresh,
		moved: make(chan struct{}), end: make(chan struct{})}
	if err := s.footer(ctx); err != nil {
		os.Remove(s.path)
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go s.run(sctx)
	return s, nil
}

// Path is the file's local path (the .part file the body is written into).
func (s *Stream) Path() string { return s.path }

// Size is the whole file's bytes.
func (s *Stream) Size() int64 { return s.size }

// Have is how many of the file's first bytes are on disk: the whole size
// once the body has arrived (the footer was there first).
func (s *Stream) Have() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.have >= s.tailAt {
		return s.size
	}
	return s.have
}

// Arrived waits until the file's first n bytes are on disk. It returns
// the stream's error when the download failed first, or ctx's.
func (s *Stream) Arrived(ctx context.Context, n int64) error {
	n = min(n, s.tailAt)
	for {
		s.mu.Lock()
		have, err, done, moved := s.have, s.err, s.done, s.moved
		s.mu.Unlock()
		switch {
		case have >= n:
			return nil
		case err != nil:
			return err
		case done:
			return fmt.Errorf("%s: %w: stopped at byte %d", s.op, errTransport, have)
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done waits for the end of the download and returns nil when the whole
// file arrived and matches the link's size and sha256; otherwise the
// error (ErrChecksum, ErrSize, ErrNotParquet, or the transfer's).
func (s *Stream) Done(ctx context.Context) error {
	select {
	case <-s.end:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the download if it still runs and removes the file.
func (s *Stream) Close() {
	s.cancel()
	<-s.end
	os.Remove(s.path)
}

// footer fetches the file's last bytes (its footer) with Range requests
// and writes them at the end of the .part file, made the file's size.
func (s *Stream) footer(ctx context.Context) error {
	n := max(8, min(streamTail, s.size/4))
	tail, err := s.suffix(ctx, n)
	if err != nil {
		return err
	}
	if string(tail[len(tail)-4:]) != "PAR1" {
		return fmt.Errorf("%s: %w: no PAR1 magic at the end", s.op, ErrNotParquet)
	}
	meta := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if meta == 0 || meta+12 > s.size {
		return fmt.Errorf("%s: %w: footer of %d bytes does not fit in %d", s.op, ErrNotParquet, meta, s.size)
	}
	if meta+8 > n {
		if tail, err = s.suffix(ctx, meta+8); err != nil {
			return err
		}
		n = meta + 8
	}
	fh, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", s.op, err)
	}
	defer fh.Close()
	if err := fh.Truncate(s.size); err != nil {
		return fmt.Errorf("%s: %w", s.op, err)
	}
	if _, err := fh.WriteAt(tail, s.size-n); err != nil {
		return fmt.Errorf("%s: write %s: %w", s.op, s.path, err)
	}
	s.tailAt = s.size - n
	return fh.Close()
}

// suffix asks for the file's last n bytes and returns them; an answer
// other than a 206 of exactly those bytes is ErrNoRanges. A link that
// has expired is refreshed once.
func (s *Stream) suffix(ctx context.Context, n int64) ([]byte, error) {
	for attempt := 1; ; attempt++ {
		b, err := s.suffixOnce(ctx, n)
		link := errors.Is(err, ErrLinkExpired) || errors.Is(err, ErrLinkInvalid)
		if err == nil || !link || s.refresh == nil || attempt > 1 {
			return b, err
		}
		nf, rerr := s.refresh(ctx)
		if rerr != nil {
			return nil, fmt.Errorf("%w (refresh link: %w)", err, rerr)
		}
		if err := s.setFile(nf); err != nil {
			return nil, err
		}
	}
}

func (s *Stream) suffixOnce(ctx context.Context, n int64) ([]byte, error) {
	resp, err := s.get(ctx, "bytes=-"+strconv.FormatInt(n, 10))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	start, end, total, ok := contentRange(resp.Header.Get("Content-Range"))
	if resp.StatusCode != http.StatusPartialContent || !ok || total != s.size || end != s.size-1 || start != s.size-n {
		return nil, fmt.Errorf("%s: %w: asked for the last %d bytes, got %d %q", s.op, ErrNoRanges, n, resp.StatusCode, resp.Header.Get("Content-Range"))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, b); err != nil {
		return nil, fmt.Errorf("%s: read footer: %w: %w", s.op, errTransport, err)
	}
	return b, nil
}

// get makes one GET of the link with a Range header.
func (s *Stream) get(ctx context.Context, rng string) (*http.Response, error) {
	u, err := url.Parse(s.file.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: link %s is not an absolute http(s) url", s.op, redactRawURL(s.file.URL))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.file.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: build request for %s: %w", s.op, redactURL(u), err)
	}
	req.Header.Set("User-Agent", s.c.ua)
	req.Header.Set("Range", rng)
	s.c.log.Debug("get file range", slog.String(logOp, s.op), slog.String(logURL, redactURL(u)), slog.String("range", rng))
	return s.c.do(s.c.files, req, s.op, true)
}

// setFile takes a refreshed link; it must describe the same bytes.
func (s *Stream) setFile(f ploti.File) error {
	if f.Bytes == nil || *f.Bytes != s.size || !strings.EqualFold(f.SHA256, s.file.SHA256) {
		return fmt.Errorf("%s: %w: a fresh link describes other bytes", s.op, ErrNoRanges)
	}
	s.file = f
	return nil
}

// run fetches the body into the file, resuming by Range after a
// transient failure, then verifies the whole file.
func (s *Stream) run(ctx context.Context) {
	defer close(s.end)
	h := sha256.New()
	err := s.body(ctx, h)
	if err == nil {
		err = s.verify(h)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.done = err, true
	close(s.moved)
}

// body tries until the body [0, tailAt) is on disk, as Download's run:
// a fresh link after a 403, a backoff (and a fresh link) after a
// transient failure, within Options.MaxAttempts.
func (s *Stream) body(ctx context.Context, h hash.Hash) error {
	if s.tailAt == 0 {
		return nil
	}
	fh, err := os.OpenFile(s.path, os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", s.op, err)
	}
	defer fh.Close()
	ctx = withBudget(ctx)
	b := s.c.newBackoff()
	for attempt := 1; ; attempt++ {
		err := s.once(ctx, fh, h)
		if err == nil {
			return fh.Close()
		}
		link := errors.Is(err, ErrLinkExpired) || errors.Is(err, ErrLinkInvalid)
		if ctx.Err() != nil || (!link && !IsTransient(err)) || (link && s.refresh == nil) {
			return err
		}
		if attempt >= s.c.maxAttempts {
			return fmt.Errorf("%w (%s)", err, gaveUp(attempt))
		}
		s.c.log.Warn("stream again", logs.Err(err), slog.String(logOp, s.op), slog.Int(logAttempt, attempt))
		if !link {
			if perr := s.c.pause(ctx, err, s.c.waitFor(err, b)); perr != nil {
				return perr
			}
		}
		if s.refresh != nil {
			nf, rerr := s.refresh(ctx)
			if rerr != nil {
				return fmt.Errorf("%w (refresh link: %w)", err, rerr)
			}
			if err := s.setFile(nf); err != nil {
				return err
			}
		}
	}
}

// once makes one GET of the body from the first byte not on disk. A 200
// is taken only from the first byte (a server that ignores the Range
// sends the whole file, whose first tailAt bytes are the body); a resume
// needs a 206 that starts where the file stops.
func (s *Stream) once(ctx context.Context, fh *os.File, h hash.Hash) error {
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := time.AfterFunc(s.c.idle, func() { cancel(ErrStalled) })
	defer watch.Stop()
	stalled := func(err error) error {
		if ctx.Err() == nil && errors.Is(context.Cause(dctx), ErrStalled) {
			return fmt.Errorf("%s: %w after %s", s.op, ErrStalled, s.c.idle)
		}
		return err
	}
	have := s.arrived()
	resp, err := s.get(dctx, fmt.Sprintf("bytes=%d-%d", have, s.tailAt-1))
	if err != nil {
		return stalled(err)
	}
	defer resp.Body.Close()
	switch start, _, _, ok := contentRange(resp.Header.Get("Content-Range")); {
	case resp.StatusCode == http.StatusOK && have == 0:
	case resp.StatusCode == http.StatusPartialContent && ok && start == have:
	default:
		return fmt.Errorf("%s: %w: asked for bytes from %d, got %d %q", s.op, ErrNoRanges, have, resp.StatusCode, resp.Header.Get("Content-Range"))
	}
	if _, err := fh.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", s.op, err)
	}
	w := &streamWriter{s: s, f: fh, h: h}
	body := io.LimitReader(&idleReader{r: resp.Body, t: watch, d: s.c.idle}, s.tailAt-have)
	_, err = io.CopyBuffer(w, body, make([]byte, 256<<10))
	switch {
	case w.err != nil:
		return fmt.Errorf("%s: write %s: %w", s.op, s.path, w.err)
	case err != nil:
		return stalled(fmt.Errorf("%s: read body after %d bytes: %w: %w", s.op, s.arrived(), errTransport, err))
	case s.arrived() < s.tailAt:
		return fmt.Errorf("%s: body ended at byte %d of %d: %w", s.op, s.arrived(), s.tailAt, errTransport)
	}
	return nil
}

func (s *Stream) arrived() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.have
}

// grew records n more bytes on disk and wakes the waiters.
func (s *Stream) grew(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.have += int64(n)
	close(s.moved)
	s.moved = make(chan struct{})
}

// verify hashes the footer after the body and checks the whole file.
func (s *Stream) verify(h hash.Hash) error {
	fh, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("%s: %w", s.op, err)
	}
	defer fh.Close()
	if _, err := io.Copy(h, io.NewSectionReader(fh, s.tailAt, s.size-s.tailAt)); err != nil {
		return fmt.Errorf("%s: reread footer: %w", s.op, err)
	}
	if want := s.file.SHA256; want != "" && !strings.EqualFold(hex.EncodeToString(h.Sum(nil)), want) {
		return fmt.Errorf("%s: %w: got %x, want %s", s.op, ErrChecksum, h.Sum(nil), want)
	}
	if err := checkParquet(s.path); err != nil {
		return fmt.Errorf("%s: %w", s.op, err)
	}
	return nil
}

// streamWriter writes the body at the file's end of data, hashing it, and
// tells the waiters after each write.
type streamWriter struct {
	s   *Stream
	f   *os.File
	h   hash.Hash
	err error
}

func (w *streamWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.s.grew(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

// contentRange reads "bytes a-b/n".
func contentRange(v string) (start, end, total int64, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, 0, 0, false
	}
	rng, size, ok := strings.Cut(rest, "/")
	a, b, ok2 := strings.Cut(rng, "-")
	if !ok || !ok2 {
		return 0, 0, 0, false
	}
	var e1, e2, e3 error
	start, e1 = strconv.ParseInt(a, 10, 64)
	end, e2 = strconv.ParseInt(b, 10, 64)
	total, e3 = strconv.ParseInt(size, 10, 64)
	if e1 != nil || e2 != nil || e3 != nil || start < 0 || end < start || total <= end {
		return 0, 0, 0, false
	}
	return start, end, total, true
}
