package emulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// fileRef is a file the emulator serves, by its path relative to e.dir.
type fileRef struct {
	rel         string
	bytes       int64
	sha256      string
	name        string // attachments only
	contentType string // attachments only
}

func describeFile(rel, path string) (fileRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileRef{}, fmt.Errorf("describe file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fileRef{}, fmt.Errorf("describe file: %w", err)
	}
	return fileRef{rel: rel, bytes: n, sha256: hex.EncodeToString(h.Sum(nil))}, nil
}

func writeJSONFile(path, rel string, v any) (fileRef, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fileRef{}, fmt.Errorf("encode %s: %w", rel, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fileRef{}, fmt.Errorf("write %s: %w", rel, err)
	}
	return describeFile(rel, path)
}

// sign is the signature of a file path with an expiry.
func (e *Emulator) sign(rel string, expires int64) string {
	m := hmac.New(sha256.New, e.secret)
	fmt.Fprintf(m, "%s\n%d", rel, expires)
	return hex.EncodeToString(m.Sum(nil))
}

// linker signs links for one answer: all with the same expiry.
type linker struct {
	e       *Emulator
	base    string
	expires time.Time
}

func (e *Emulator) newLinker(fileBase string) linker {
	return linker{e: e, base: fileBase, expires: e.nowLocked().Add(e.linkLifetimeLocked())}
}

func (l linker) url(rel string) string {
	exp := l.expires.Unix()
	return fmt.Sprintf("%s/%s?expires=%d&sig=%s", l.base, rel, exp, l.e.sign(rel, exp))
}

// obj is a file object: url, bytes, sha256.
func (l linker) obj(f fileRef) map[string]any {
	return map[string]any{"url": l.url(f.rel), "bytes": f.bytes, "sha256": f.sha256}
}

func (l linker) objPtr(f *fileRef) any {
	if f == nil {
		return nil
	}
	return l.obj(*f)
}

func (l linker) list(fs []fileRef) []map[string]any {
	out := make([]map[string]any, 0, len(fs))
	for _, f := range fs {
		out = append(out, l.obj(f))
	}
	return out
}

func (l linker) attachments(fs []fileRef) []map[string]any {
	out := make([]map[string]any, 0, len(fs))
	for _, f := range fs {
		out = append(out, map[string]any{
			"name": f.name, "contentType": f.contentType, "url": l.url(f.rel), "bytes": f.bytes, "sha256": f.sha256,
		})
	}
	return out
}

// serveFile answers a signed link on the file server. A request that carries
// an Authorization header is refused with 400 and counted in KeyLeaks.
func (e *Emulator) serveFile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		e.keyLeaks.Add(1)
		writeError(w, &apiError{http.StatusBadRequest, "invalid_input", "file links take no Authorization header"})
		return
	}
	done, r := e.applyFault(w, r, true)
	if done {
		return
	}
	rel := strings.TrimPrefix(r.URL.Path, "/")
	if !strings.HasPrefix(rel, "files/") || strings.Contains(rel, "..") {
		writeError(w, &apiError{http.StatusNotFound, "not_found", "no such file"})
		return
	}
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(e.sign(rel, exp))) {
		writeError(w, &apiError{http.StatusForbidden, "link_invalid", "the link's signature does not match"})
		return
	}
	if !e.Now().Before(time.Unix(exp, 0)) {
		writeError(w, &apiError{http.StatusForbidden, "link_expired", "the link has expired; ask for fresh links"})
		return
	}
	if e.fileGone(rel) {
		writeError(w, &apiError{http.StatusNotFound, "not_found", "the file is past retention"})
		return
	}
	f, err := os.Open(e.abs(rel))
	if err != nil {
		writeError(w, &apiError{http.StatusNotFound, "not_found", "no such file"})
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, "stat failed", http.StatusInternalServerError)
		return
	}
	e.serveBody(w, r, rel, f, st.Size())
}

// SetRanges says whether file links answer Range requests: on (the
// default), a request for some of a file's bytes gets a 206 with them, as
// http.ServeContent answers; off, the Range header is ignored and the
// whole file comes with a 200, as from a host that serves no ranges
// (Ploti's documentation does not say that its signed links do).
func (e *Emulator) SetRanges(on bool) { e.noRanges.Store(!on) }

// fileGone tells whether a file belongs to a version past retention.
func (e *Emulator) fileGone(rel string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	gone := func(d *dataset) bool {
		for _, v := range d.versions {
			if v.filesGone && strings.HasPrefix(rel, fmt.Sprintf("files/%s/v%d/", d.tag, v.num)) {
				return true
			}
		}
		return false
	}
	// A dataset's tag is d and its place in dsOrder, from 1: one look-up,
	// not a look at every dataset (a catch-up over 2,000 datasets asked
	// for 3,600 files, and the loop cost the bench's serving 4.9 s).
	tag, _, _ := strings.Cut(strings.TrimPrefix(rel, "files/"), "/")
	if n, err := strconv.Atoi(strings.TrimPrefix(tag, "d")); err == nil && n >= 1 && n <= len(e.dsOrder) {
		if d := e.datasets[e.dsOrder[n-1]]; d != nil && d.tag == tag {
			return gone(d)
		}
	}
	for _, d := range e.datasets {
		if strings.HasPrefix(rel, "files/"+d.tag+"/") && gone(d) {
			return true
		}
	}
	return false
}

func contentType(rel string) string {
	switch {
	case strings.HasSuffix(rel, ".parquet"):
		return "application/vnd.apache.parquet"
	case strings.HasSuffix(rel, ".json"):
		return "application/json"
	}
	return "application/octet-stream"
}

func (e *Emulator) linkLifetimeLocked() time.Duration {
	if e.linkLife > 0 {
		return e.linkLife
	}
	return LinkLifetime
}

// SetLinkLifetime makes links signed from now on last d instead of an hour
// (for links that expire early); zero restores LinkLifetime.
func (e *Emulator) SetLinkLifetime(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.linkLife = d
}
