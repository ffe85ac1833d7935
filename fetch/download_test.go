package fetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// spoolFiles lists what the spool dir holds.
func spoolFiles(t *testing.T, c *Client) []string {
	t.Helper()
	entries, err := os.ReadDir(c.spool)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestClient_Download checks what Download verifies, and that a refused
// file leaves nothing in the spool dir.
func TestClient_Download(t *testing.T) {
	pq := fakeParquet("rows rows rows")
	truncated := pq[:len(pq)-5]
	badFooter := append(append([]byte("PAR1xx"), 0xff, 0xff, 0, 0), "PAR1"...)
	tests := []struct {
		name    string
		serve   []byte
		file    func(url string) ploti.File
		fname   string
		wantErr error
	}{
		{name: "parquet with bytes and sha", serve: pq, fname: "ds_a-v7-snapshot-0.parquet",
			file: func(u string) ploti.File { return ploti.File{URL: u, Bytes: int64p(int64(len(pq))), SHA256: sha(pq)} }},
		{name: "sha in upper case", serve: pq, fname: "a.parquet",
			file: func(u string) ploti.File { return ploti.File{URL: u, SHA256: strings.ToUpper(sha(pq))} }},
		{name: "no bytes no sha", serve: pq, fname: "a.parquet",
			file: func(u string) ploti.File { return ploti.File{URL: u} }},
		{name: "not parquet by name", serve: []byte(`{"a":1}`), fname: "schema.json",
			file: func(u string) ploti.File { return ploti.File{URL: u} }},
		{name: "sha mismatch", serve: pq, fname: "a.parquet", wantErr: ErrChecksum,
			file: func(u string) ploti.File { return ploti.File{URL: u, SHA256: sha([]byte("other"))} }},
		{name: "bigger than bytes", serve: pq, fname: "a.parquet", wantErr: ErrSize,
			file: func(u string) ploti.File { return ploti.File{URL: u, Bytes: int64p(int64(len(pq) - 1))} }},
		{name: "smaller than bytes", serve: pq, fname: "a.parquet", wantErr: ErrSize,
			file: func(u string) ploti.File { return ploti.File{URL: u, Bytes: int64p(int64(len(pq) + 1))} }},
		{name: "truncated parquet", serve: truncated, fname: "a.parquet", wantErr: ErrNotParquet,
			file: func(u string) ploti.File { return ploti.File{URL: u} }},
		{name: "truncated parquet with matching sha", serve: truncated, fname: "a.parquet", wantErr: ErrNotParquet,
			file: func(u string) ploti.File { return ploti.File{URL: u, SHA256: sha(truncated)} }},
		{name: "footer does not fit", serve: badFooter, fname: "a.parquet", wantErr: ErrNotParquet,
			file: func(u string) ploti.File { return ploti.File{URL: u} }},
		{name: "tiny parquet", serve: []byte("PAR1"), fname: "a.parquet", wantErr: ErrNotParquet,
			file: func(u string) ploti.File { return ploti.File{URL: u} }},
		{name: "empty parquet", serve: []byte{}, fname: "a.PARQUET", wantErr: ErrNotParquet,
			file: func(u string) ploti.File { return ploti.File{URL: u} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write(tt.serve) })
			c, sl := MustClient(t, "http://api.test")
			got, err := c.Download(context.Background(), tt.file(srv.URL+"/f?sig=s"), tt.fname, nil)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "download "+tt.fname+": ") {
					t.Fatalf("err = %q, want it to start with the op", err)
				}
				if got != "" {
					t.Fatalf("path %q returned with an error", got)
				}
				if left := spoolFiles(t, c); len(left) != 0 {
					t.Fatalf("spool holds %v after a refused file", left)
				}
				if len(srv.Requests()) != 1 || len(sl.Waits()) != 0 {
					t.Fatalf("a refused file was fetched again")
				}
				return
			}
			if err != nil {
				t.Fatalf("Download: %v", err)
			}
			if want := filepath.Join(c.spool, tt.fname); got != want {
				t.Fatalf("path = %q, want %q", got, want)
			}
			b, err := os.ReadFile(got)
			if err != nil || !bytes.Equal(b, tt.serve) {
				t.Fatalf("file = %q (%v), want %q", b, err, tt.serve)
			}
			if left := spoolFiles(t, c); len(left) != 1 {
				t.Fatalf("spool holds %v, want only the file", left)
			}
		})
	}
}

// TestClient_DownloadRefresh: an expired link asks for a fresh one and the
// download succeeds with it (docs/wire.md 1).
func TestClient_DownloadRefresh(t *testing.T) {
	pq := fakeParquet("data")
	for _, code := range []string{"link_expired", "link_invalid"} {
		t.Run(code, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("sig") != "fresh" {
					writeError(w, 403, code, "signature")
					return
				}
				w.Write(pq)
			})
			c, sl := MustClient(t, "http://api.test")
			var refreshes int
			refresh := func(ctx context.Context) (ploti.File, error) {
				refreshes++
				return ploti.File{URL: srv.URL + "/p0.parquet?sig=fresh", SHA256: sha(pq)}, nil
			}
			p, err := c.Download(context.Background(), ploti.File{URL: srv.URL + "/p0.parquet?sig=stale", SHA256: sha(pq)}, "p0.parquet", refresh)
			if err != nil {
				t.Fatalf("Download: %v", err)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, pq) {
				t.Fatalf("file = %q", b)
			}
			if refreshes != 1 {
				t.Fatalf("refreshes = %d, want 1", refreshes)
			}
			if w := sl.Waits(); len(w) != 0 {
				t.Fatalf("a link refresh waited %v", w)
			}
		})
	}
	t.Run("no refresh func", func(t *testing.T) {
		srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeError(w, 403, "link_expired", "") })
		c, _ := MustClient(t, "http://api.test")
		_, err := c.Download(context.Background(), ploti.File{URL: srv.URL + "/f"}, "f.bin", nil)
		if !errors.Is(err, ErrLinkExpired) || len(srv.Requests()) != 1 {
			t.Fatalf("err = %v after %d requests, want ErrLinkExpired after 1", err, len(srv.Requests()))
		}
	})
	t.Run("refresh fails", func(t *testing.T) {
		srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeError(w, 403, "link_expired", "") })
		c, _ := MustClient(t, "http://api.test")
		_, err := c.Download(context.Background(), ploti.File{URL: srv.URL + "/f"}, "f.bin",
			func(context.Context) (ploti.File, error) { return ploti.File{}, ErrNotSubscribed })
		if !errors.Is(err, ErrLinkExpired) || !errors.Is(err, ErrNotSubscribed) {
			t.Fatalf("err = %v, want both the link and the refresh error", err)
		}
	})
	t.Run("always expired gives up", func(t *testing.T) {
		srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeError(w, 403, "link_expired", "") })
		c, _ := MustClient(t, "http://api.test", func(o *Options) { o.MaxAttempts = 3 })
		var refreshes int
		_, err := c.Download(context.Background(), ploti.File{URL: srv.URL + "/f"}, "f.bin",
			func(context.Context) (ploti.File, error) { refreshes++; return ploti.File{URL: srv.URL + "/f"}, nil })
		if !errors.Is(err, ErrLinkExpired) || len(srv.Requests()) != 3 || refreshes != 2 {
			t.Fatalf("err = %v after %d requests and %d refreshes, want 3 and 2", err, len(srv.Requests()), refreshes)
		}
	})
}

// TestClient_DownloadResume: a connection dropped mid-body is retried with
// a refreshed link and resumed with Range from the bytes kept.
func TestClient_DownloadResume(t *testing.T) {
	pq := fakeParquet(strings.Repeat("0123456789", 1000))
	half := len(pq) / 2
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(pq)))
			w.Write(pq[:half])
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		http.ServeContent(w, r, "p.parquet", time.Time{}, bytes.NewReader(pq))
	})
	c, sl := MustClient(t, "http://api.test")
	var refreshes int
	f := ploti.File{URL: srv.URL + "/p.parquet?sig=1", Bytes: int64p(int64(len(pq))), SHA256: sha(pq)}
	p, err := c.Download(context.Background(), f, "p.parquet", func(context.Context) (ploti.File, error) {
		refreshes++
		g := f
		g.URL = srv.URL + "/p.parquet?sig=2"
		return g, nil
	})
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, pq) {
		t.Fatalf("resumed file differs")
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2", len(reqs))
	}
	if got, want := reqs[1].Range, "bytes="+strconv.Itoa(half)+"-"; got != want {
		t.Fatalf("second request Range = %q, want %q", got, want)
	}
	if reqs[1].RawQuery != "sig=2" || refreshes != 1 {
		t.Fatalf("second request used %q after %d refreshes, want the fresh link", reqs[1].RawQuery, refreshes)
	}
	if len(sl.Waits()) != 1 {
		t.Fatalf("waits = %v, want one backoff", sl.Waits())
	}
}

// TestClient_DownloadRestart: a server that ignores Range (200) restarts
// the file; a 5xx is retried without refresh when refresh is nil.
func TestClient_DownloadRestart(t *testing.T) {
	pq := fakeParquet(strings.Repeat("abc", 3000))
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Content-Length", strconv.Itoa(len(pq)))
			w.Write(pq[:100])
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case 2:
			w.WriteHeader(503)
		default:
			w.Write(pq) // 200, Range ignored
		}
	})
	c, sl := MustClient(t, "http://api.test")
	p, err := c.Download(context.Background(), ploti.File{URL: srv.URL + "/p", SHA256: sha(pq)}, "p.parquet", nil)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, pq) {
		t.Fatalf("restarted file differs")
	}
	if got := len(sl.Waits()); got != 2 {
		t.Fatalf("waits = %d, want 2", got)
	}
	if reqs := srv.Requests(); reqs[2].Range != "bytes=100-" {
		t.Fatalf("third request Range = %q", reqs[2].Range)
	}
}

// TestClient_DownloadStall: a body that stops arriving is abandoned after
// ReadIdleTimeout and fetched again.
func TestClient_DownloadStall(t *testing.T) {
	pq := fakeParquet("stall")
	var n atomic.Int32
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Content-Length", strconv.Itoa(len(pq)))
			w.Write(pq[:4])
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.Write(pq)
	})
	c, _ := MustClient(t, "http://api.test", func(o *Options) { o.ReadIdleTimeout = 100 * time.Millisecond })
	start := time.Now()
	if _, err := c.Download(context.Background(), ploti.File{URL: srv.URL + "/p"}, "p.parquet", nil); err != nil {
		t.Fatalf("Download: %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("stall detection took %v", el)
	}
	if got := n.Load(); got != 2 {
		t.Fatalf("requests = %d, want 2", got)
	}
}

// TestClient_DownloadRedirect: a file link redirecting to another host is
// followed (docs/wire.md 1: file links "may be on another host"), with no
// key there; one on the same host too; one from https to http is refused.
func TestClient_DownloadRedirect(t *testing.T) {
	other := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("elsewhere")) })
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/f?sig=z", http.StatusTemporaryRedirect)
		case "/near":
			http.Redirect(w, r, "/f", http.StatusFound)
		default:
			w.Write([]byte("here"))
		}
	})
	c, _ := MustClient(t, "http://api.test")
	p, err := c.Download(context.Background(), ploti.File{URL: srv.URL + "/away"}, "away.bin", nil)
	if err != nil {
		t.Fatalf("a redirect to another host: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "elsewhere" {
		t.Fatalf("file = %q", b)
	}
	if reqs := other.Requests(); len(reqs) != 1 || reqs[0].Auth != "" {
		t.Fatalf("the other host saw %+v, want one request with no Authorization", reqs)
	}
	from, _ := http.NewRequest("GET", "https://files.test/f", nil)
	to, _ := http.NewRequest("GET", "http://cdn.test/f?sig=z", nil)
	if err := checkFileRedirect(to, []*http.Request{from}); !errors.Is(err, ErrRedirect) || strings.Contains(err.Error(), "sig=z") {
		t.Fatalf("a file link from https to http: %v, want ErrRedirect without the signature", err)
	}
	p, err = c.Download(context.Background(), ploti.File{URL: srv.URL + "/near"}, "f.bin", nil)
	if err != nil {
		t.Fatalf("same-host redirect: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "here" {
		t.Fatalf("file = %q", b)
	}
}

func TestClient_DownloadCancel(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("PAR1"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c, _ := MustClient(t, "http://api.test")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Download(ctx, ploti.File{URL: srv.URL + "/p"}, "p.parquet", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if left := spoolFiles(t, c); len(left) != 0 {
		t.Fatalf("spool holds %v after a cancelled download", left)
	}
}

func TestClient_DownloadNames(t *testing.T) {
	c, _ := MustClient(t, "http://api.test")
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "../x", "x.part", "a\x00b"} {
		if _, err := c.Download(context.Background(), ploti.File{URL: "http://127.0.0.1:1/x"}, name, nil); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	noSpool, _ := MustClient(t, "http://api.test", func(o *Options) { o.SpoolDir = "" })
	if _, err := noSpool.Download(context.Background(), ploti.File{URL: "http://127.0.0.1:1/x"}, "x", nil); err == nil {
		t.Error("download without a spool dir accepted")
	}
}

func TestClient_RemoveSpool(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) })
	c, _ := MustClient(t, "http://api.test")
	ctx := context.Background()
	for _, name := range []string{"a.bin", "b.bin"} {
		if _, err := c.Download(ctx, ploti.File{URL: srv.URL + "/x"}, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(c.spool, "a.bin.part"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove("a.bin"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := c.Remove("never.bin"); err != nil {
		t.Fatalf("Remove of a missing file: %v", err)
	}
	if got := spoolFiles(t, c); len(got) != 1 || got[0] != "b.bin" {
		t.Fatalf("spool = %v, want [b.bin]", got)
	}
	if err := c.RemoveSpool(); err != nil {
		t.Fatalf("RemoveSpool: %v", err)
	}
	if _, err := os.Stat(c.spool); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spool dir still there: %v", err)
	}
}
