package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// cursorProxy is a proxy in front of the emulator whose events pages may
// get another next_cursor (next), and which reads a cursor it made up,
// "K~n", as the emulator's K.
func cursorProxy(tb testing.TB, em *emulator.Emulator, next func(asked, given string) string) string {
	tb.Helper()
	target, err := url.Parse(em.URL())
	must(tb, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	direct := proxy.Director
	proxy.Director = func(req *http.Request) {
		direct(req)
		q := req.URL.Query()
		if c := q.Get("cursor"); strings.Contains(c, "~") {
			q.Set("cursor", c[:strings.Index(c, "~")])
			req.URL.RawQuery = q.Encode()
		}
	}
	var mu sync.Mutex
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, "/events") || resp.StatusCode != http.StatusOK {
			return nil
		}
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return err
		}
		if evs, _ := v["events"].([]any); len(evs) > 0 {
			given, _ := v["nextCursor"].(string)
			mu.Lock()
			v["nextCursor"] = next(resp.Request.URL.Query().Get("cursor"), given)
			mu.Unlock()
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// A walk of the log ends however the server answers: a cursor that comes
// back after another (k → k+1 → k), or pages of the same events under
// ever new cursors, stop the sync at once with an error naming the
// cursor.
func TestSync_WalkEnds(t *testing.T) {
	for _, tt := range []struct {
		name  string
		next  func(first *string) func(asked, given string) string
		words string
	}{
		{"a cycle of two cursors", func(first *string) func(string, string) string {
			return func(asked, given string) string {
				if *first == "" {
					*first = asked
				}
				if asked == *first {
					return given // k → k+1
				}
				return *first // the page after k+1 points back at k
			}
		}, "was read before in this sync"},
		{"the same events under new cursors", func(_ *string) func(string, string) string {
			n := 0
			return func(asked, given string) string {
				n++
				if i := strings.Index(asked, "~"); i >= 0 {
					asked = asked[:i]
				}
				return asked + "~" + strconv.Itoa(n)
			}
		}, "the same 1 events as a page read before"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			em := mustEmulator(t)
			sub, permits, _ := seedTwo(t, em)
			var armed atomic.Bool
			var first string
			next := tt.next(&first)
			proxied := cursorProxy(t, em, func(asked, given string) string {
				if !armed.Load() {
					return given
				}
				return next(asked, given)
			})
			r := mustOpen(t, em, sub, "", fastRetries, func(o *Options) { o.APIURL, o.PageSize = proxied, 1 })
			mustSync(t, r)
			for i := 1; i <= 3; i++ {
				_, err := em.Publish(ctx, "ds_permits", permits(i))
				must(t, err)
			}
			armed.Store(true)
			start := time.Now()
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := r.Sync(sctx)
			if err == nil || !strings.Contains(err.Error(), tt.words) || !strings.Contains(err.Error(), "after cursor ") {
				t.Fatalf("sync: %v; want it stopped, naming the cursor, with %q", err, tt.words)
			}
			if el := time.Since(start); el > 30*time.Second {
				t.Fatalf("took %v", el)
			}
		})
	}
}
