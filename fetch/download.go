package fetch

import (
	"bytes"
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
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// partSuffix marks a download in progress in the spool dir.
const partSuffix = ".part"

// Download fetches one signed file into the spool dir and returns the path
// of a complete, verified file, SpoolDir/name. name is a plain file name
// chosen by the caller (no directory, not ending in ".part").
//
// The file streams into name+".part" while it is hashed, then is checked:
// its length against f.Bytes and its sha256 against f.SHA256 when present,
// and, for a name ending in ".parquet", that it is a readable Parquet file.
// Only then is it renamed into place (replacing an older file of that
// name). On failure no file is left and the error wraps ErrSize,
// ErrChecksum, ErrNotParquet or the answer's sentinel.
//
// A 403 link_expired or link_invalid calls refresh for a fresh link and
// tries again at once; a transient failure (connection drop, stall, 5xx,
// 429) calls refresh too when it is non-nil and tries again after a
// backoff, resuming with a Range request when part of the file arrived.
// A file that arrives whole but fails verification is fetched again, at
// most twice, through a fresh link after a backoff when refresh is
// non-nil (damage on the way heals, a bad file at the source does not).
// All within Options.MaxAttempts. The API key is never sent with a file
// request, and redirects to another host or from https are refused.
func (c *Client) Download(ctx context.Context, f ploti.File, name string, refresh func(ctx context.Context) (ploti.File, error)) (string, error) {
	op := "download " + name
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	if c.spool == "" {
		return "", fmt.Errorf("%s: no spool dir in options", op)
	}
	if err := os.MkdirAll(c.spool, 0o700); err != nil {
		return "", fmt.Errorf("%s: create spool dir: %w", op, err)
	}
	final := filepath.Join(c.spool, name)
	d := &download{c: c, op: op, name: name, part: final + partSuffix, file: f}
	if err := d.run(ctx, refresh); err != nil {
		os.Remove(d.part)
		return "", err
	}
	if err := os.Rename(d.part, final); err != nil {
		os.Remove(d.part)
		return "", fmt.Errorf("%s: %w", op, err)
	}
	syncDir(c.spool)
	return final, nil
}

// download is one file's state across tries.
type download struct {
	c    *Client
	op   string
	name string
	part string
	file ploti.File
	have int64 // bytes at the start of the .part file kept from a try
}

// maxBadFileRetries is how often a download that arrived but failed
// verification (size, sha256, Parquet framing) is fetched again through a
// fresh link: damage on the way is transient, a bad file at the source
// fails every time and is refused.
const maxBadFileRetries = 2

// run tries until the .part file is complete and verified.
func (d *download) run(ctx context.Context, refresh func(context.Context) (ploti.File, error)) error {
	ctx = withBudget(ctx)
	b := d.c.newBackoff()
	badFiles := 0
	for attempt := 1; ; attempt++ {
		err := d.once(ctx)
		if err == nil {
			return nil
		}
		link := errors.Is(err, ErrLinkExpired) || errors.Is(err, ErrLinkInvalid)
		bad := errors.Is(err, ErrSize) || errors.Is(err, ErrChecksum) || errors.Is(err, ErrNotParquet)
		switch {
		case ctx.Err() == nil && bad && refresh != nil && badFiles >= maxBadFileRetries:
			return fmt.Errorf("%w (refused after %d downloads)", err, badFiles+1)
		case ctx.Err() == nil && bad && refresh != nil:
			badFiles++
		case ctx.Err() != nil || (!link && !IsTransient(err)) || (link && refresh == nil):
			return err
		}
		if attempt >= d.c.maxAttempts {
			return fmt.Errorf("%w (%s)", err, gaveUp(attempt))
		}
		d.c.log.Warn("download again", logs.Err(err), slog.String(logOp, d.op), slog.Int(logAttempt, attempt))
		if !link {
			if perr := d.c.pause(ctx, err, d.c.waitFor(err, b)); perr != nil {
				return perr
			}
		}
		if refresh != nil {
			nf, rerr := refresh(ctx)
			if rerr != nil {
				return fmt.Errorf("%w (refresh link: %w)", err, rerr)
			}
			d.setFile(nf)
		}
	}
}

// setFile takes a refreshed link; a partial file is kept for a resume only
// while the link still describes the same bytes.
func (d *download) setFile(f ploti.File) {
	sameBytes := (f.Bytes == nil) == (d.file.Bytes == nil) && (f.Bytes == nil || *f.Bytes == *d.file.Bytes)
	if !sameBytes || !strings.EqualFold(f.SHA256, d.file.SHA256) {
		d.have = 0
	}
	d.file = f
}

// once makes one GET of the link into the .part file and verifies it.
func (d *download) once(ctx context.Context) error {
	u, err := url.Parse(d.file.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: link %s is not an absolute http(s) url", d.op, redactRawURL(d.file.URL))
	}
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := time.AfterFunc(d.c.idle, func() { cancel(ErrStalled) })
	defer watch.Stop()
	stalled := func(err error) error {
		if ctx.Err() == nil && errors.Is(context.Cause(dctx), ErrStalled) {
			return fmt.Errorf("%s: GET %s: %w after %s", d.op, u.Path, ErrStalled, d.c.idle)
		}
		return err
	}

	req, err := http.NewRequestWithContext(dctx, http.MethodGet, d.file.URL, nil)
	if err != nil {
		return fmt.Errorf("%s: build request for %s: %w", d.op, redactURL(u), err)
	}
	req.Header.Set("User-Agent", d.c.ua)
	if d.have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(d.have, 10)+"-")
	}
	d.c.log.Debug("get file", slog.String(logOp, d.op), slog.String(logURL, redactURL(u)), slog.Int64(logBytes, d.have))
	resp, err := d.c.do(d.c.files, req, d.op, true)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusRequestedRangeNotSatisfiable {
			d.have = 0
			return fmt.Errorf("%w: %w", errTransport, err)
		}
		return stalled(err)
	}
	defer resp.Body.Close()
	offset, err := d.offset(resp)
	if err != nil {
		return err
	}
	h := sha256.New()
	if err := d.write(&idleReader{r: resp.Body, t: watch, d: d.c.idle}, offset, h); err != nil {
		return stalled(err)
	}
	return d.verify(h.Sum(nil))
}

// offset is where the answer's bytes start in the file: d.have for a 206
// that starts there, 0 for a 200 (a full body, the Range ignored).
func (d *download) offset(resp *http.Response) (int64, error) {
	switch resp.StatusCode {
	case http.StatusOK:
		return 0, nil
	case http.StatusPartialContent:
		if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); ok && start == d.have && d.have > 0 {
			return d.have, nil
		}
		d.have = 0
		return 0, fmt.Errorf("%s: GET %s: %w: unexpected Content-Range", d.op, resp.Request.URL.Path, errTransport)
	}
	return 0, &APIError{Op: d.op, Method: http.MethodGet, Path: resp.Request.URL.Path, Status: resp.StatusCode, Err: ErrUnexpectedStatus}
}

// contentRangeStart reads the first byte position of "bytes a-b/n".
func contentRangeStart(v string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, false
	}
	a, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(a, 10, 64)
	return n, err == nil && n >= 0
}

// write streams body into the .part file from offset, hashing the whole
// file into h (the kept prefix first). It stops one byte past f.Bytes, so
// an oversized answer is caught without reading it all.
func (d *download) write(body io.Reader, offset int64, h hash.Hash) error {
	fh, err := os.OpenFile(d.part, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", d.op, err)
	}
	defer fh.Close()
	if offset > 0 {
		if n, err := io.Copy(h, io.LimitReader(fh, offset)); err != nil || n != offset {
			d.have = 0
			return fmt.Errorf("%s: reread partial file: %w", d.op, errTransport)
		}
	}
	if err := fh.Truncate(offset); err != nil {
		return fmt.Errorf("%s: %w", d.op, err)
	}
	if _, err := fh.Seek(offset, io.SeekStart); err != nil {
		return fmt.Errorf("%s: %w", d.op, err)
	}
	if want := d.file.Bytes; want != nil {
		body = io.LimitReader(body, max(0, *want-offset)+1)
	}
	w := &fileWriter{f: fh}
	n, err := io.Copy(io.MultiWriter(w, h), body)
	d.have = offset + n
	switch {
	case w.err != nil:
		d.have = 0
		return fmt.Errorf("%s: write %s: %w", d.op, d.part, w.err)
	case err != nil:
		return fmt.Errorf("%s: read body after %d bytes: %w: %w", d.op, d.have, errTransport, err)
	}
	if err := fh.Sync(); err != nil {
		return fmt.Errorf("%s: %w", d.op, err)
	}
	return fh.Close()
}

// verify checks the finished .part file against the link's bytes and
// sha256 and, for Parquet, its framing.
func (d *download) verify(sum []byte) error {
	defer func() { d.have = 0 }() // a complete file is never resumed
	if want := d.file.Bytes; want != nil && d.have != *want {
		return fmt.Errorf("%s: %w: got %d bytes or more, want %d", d.op, ErrSize, d.have, *want)
	}
	if want := d.file.SHA256; want != "" && !strings.EqualFold(hex.EncodeToString(sum), want) {
		return fmt.Errorf("%s: %w: got %x, want %s", d.op, ErrChecksum, sum, want)
	}
	if strings.HasSuffix(strings.ToLower(d.name), ".parquet") {
		if err := checkParquet(d.part); err != nil {
			return fmt.Errorf("%s: %w", d.op, err)
		}
	}
	return nil
}

// checkParquet checks a Parquet file's framing: "PAR1" at both ends and a
// footer whose length (the 4 bytes before the last magic) fits the file.
func checkParquet(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	const magic = "PAR1"
	if size < 12 {
		return fmt.Errorf("%w: only %d bytes", ErrNotParquet, size)
	}
	head, tail := make([]byte, 4), make([]byte, 8)
	if _, err := fh.ReadAt(head, 0); err != nil {
		return err
	}
	if _, err := fh.ReadAt(tail, size-8); err != nil {
		return err
	}
	if !bytes.Equal(head, []byte(magic)) {
		return fmt.Errorf("%w: no PAR1 magic at the start", ErrNotParquet)
	}
	if !bytes.Equal(tail[4:], []byte(magic)) {
		return fmt.Errorf("%w: no PAR1 magic at the end (truncated?)", ErrNotParquet)
	}
	if footer := int64(binary.LittleEndian.Uint32(tail[:4])); footer == 0 || footer+12 > size {
		return fmt.Errorf("%w: footer of %d bytes does not fit in %d", ErrNotParquet, footer, size)
	}
	return nil
}

// checkName refuses names that are not a single plain file name.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("invalid spool file name %q", name)
	case strings.ContainsAny(name, `/\`+"\x00"), filepath.Base(name) != name:
		return fmt.Errorf("spool file name %q is not a plain file name", name)
	case strings.HasSuffix(name, partSuffix):
		return fmt.Errorf("spool file name %q ends in %s", name, partSuffix)
	}
	return nil
}

// Remove deletes a file Download left in the spool dir, and any .part of
// that name. A name that is not there is not an error.
func (c *Client) Remove(name string) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("remove spool file: %w", err)
	}
	if c.spool == "" {
		return nil
	}
	p := filepath.Join(c.spool, name)
	return errors.Join(removeIfExists(p), removeIfExists(p+partSuffix))
}

// RemoveSpool deletes the spool dir and everything in it. Call it when no
// Download is running, e.g. after a sync has loaded its files.
func (c *Client) RemoveSpool() error {
	if c.spool == "" {
		return nil
	}
	if err := os.RemoveAll(c.spool); err != nil {
		return fmt.Errorf("remove spool dir: %w", err)
	}
	return nil
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove spool file: %w", err)
	}
	return nil
}

// syncDir makes a rename in dir durable; best effort.
func syncDir(dir string) {
	if fh, err := os.Open(dir); err == nil {
		fh.Sync()
		fh.Close()
	}
}

// idleReader restarts the stall timer on every read.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.t.Reset(r.d)
	return n, err
}

// fileWriter remembers a write error, to tell a full disk (permanent)
// from a dropped connection (transient).
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}
