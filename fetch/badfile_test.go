package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// "truncated and corrupt bodies": a file damaged on the way is
// fetched again through a fresh link and the download succeeds; a file
// that is bad at the source is refused after maxBadFileRetries more tries,
// with the verification error.
func TestClient_DownloadRefetchesABadFile(t *testing.T) {
	pq := fakeParquet("the rows")
	spoil := map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"corrupt":   func(b []byte) []byte { c := append([]byte(nil), b...); c[5] ^= 0xff; return c },
		"no footer": func(b []byte) []byte { c := append([]byte(nil), b...); copy(c[len(c)-4:], "XXXX"); return c },
	}
	want := map[string]error{"truncated": ErrSize, "corrupt": ErrChecksum, "no footer": ErrChecksum}
	for name, bad := range spoil {
		for _, badTimes := range []int{1, 2, 3, 100} {
			t.Run(fmt.Sprintf("%s bad %d times", name, badTimes), func(t *testing.T) {
				var served atomic.Int32
				srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
					if int(served.Add(1)) <= badTimes {
						w.Write(bad(pq))
						return
					}
					w.Write(pq)
				})
				c, sl := MustClient(t, "http://api.test")
				f := ploti.File{URL: srv.URL + "/p.parquet?sig=one", Bytes: int64p(int64(len(pq))), SHA256: sha(pq)}
				refreshes := 0
				refresh := func(context.Context) (ploti.File, error) {
					refreshes++
					g := f
					g.URL = srv.URL + "/p.parquet?sig=fresh"
					return g, nil
				}
				p, err := c.Download(context.Background(), f, "p.parquet", refresh)
				if badTimes <= maxBadFileRetries {
					if err != nil {
						t.Fatalf("bad %d times: Download: %v", badTimes, err)
					}
					if !strings.HasSuffix(p, "p.parquet") || refreshes != badTimes || len(sl.Waits()) != badTimes {
						t.Fatalf("path %q, %d refreshes, waits %v; want a refresh and a wait per bad download", p, refreshes, sl.Waits())
					}
					return
				}
				if !errors.Is(err, want[name]) || !strings.Contains(err.Error(), "refused after 3 downloads") {
					t.Fatalf("bad every time: err = %v, want %v refused after 3 downloads", err, want[name])
				}
				if got := len(srv.Requests()); got != maxBadFileRetries+1 {
					t.Fatalf("fetched %d times, want %d", got, maxBadFileRetries+1)
				}
				if left := spoolFiles(t, c); len(left) != 0 {
					t.Fatalf("spool holds %v after a refused file", left)
				}
			})
		}
	}
}
