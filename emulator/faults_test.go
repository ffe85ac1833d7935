package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func snapshotURL(t *testing.T, em *Emulator) fileObj {
	t.Helper()
	var v versionBody
	if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/1", &v); st != 200 {
		t.Fatalf("version: %d", st)
	}
	return v.Files.Snapshot[0]
}

func TestEmulator_Faults(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(50, "P-"))
	events := "/v1/feeds/subscriptions/" + sub + "/events"

	t.Run("429 burst with Retry-After", func(t *testing.T) {
		em.FailNext("/v1/**", 429, 2)
		for range 2 {
			resp := call(t, "GET", em.URL()+events, em.APIKey(), nil, nil)
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
				t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		}
		if st := apiGet(t, em, events, nil); st != 200 {
			t.Fatalf("after burst: %d", st)
		}
	})
	t.Run("500 without body", func(t *testing.T) {
		em.Inject(Fault{Match: "GET " + events, Kind: FaultStatus, Status: 500})
		if st := apiGet(t, em, events, nil); st != 500 {
			t.Fatalf("%d", st)
		}
	})
	t.Run("connection reset", func(t *testing.T) {
		// Go's transport retries a GET once when a reused connection dies,
		// so a fresh connection shows the reset.
		em.Inject(Fault{Match: events, Kind: FaultReset})
		req, _ := http.NewRequest("GET", em.URL()+events, nil)
		req.Header.Set("Authorization", "Bearer "+em.APIKey())
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		if _, err := client.Do(req); err == nil {
			t.Fatalf("no error from a reset")
		}
	})
	t.Run("slow", func(t *testing.T) {
		em.Inject(Fault{Match: events, Kind: FaultSlow, Delay: 50 * time.Millisecond})
		start := time.Now()
		if st := apiGet(t, em, events, nil); st != 200 || time.Since(start) < 50*time.Millisecond {
			t.Fatalf("%d after %v", st, time.Since(start))
		}
	})
	bodyTests := []struct {
		kind    FaultKind
		name    string
		wantErr bool
	}{
		{FaultTruncate, "truncated", false},
		{FaultCorrupt, "corrupt", false},
		{FaultCutOff, "cut off", true},
	}
	for _, tt := range bodyTests {
		t.Run(tt.name, func(t *testing.T) {
			f := snapshotURL(t, em)
			em.Inject(Fault{Match: "/files/**", Kind: tt.kind})
			resp, err := http.Get(f.URL)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tt.wantErr != (err != nil) {
				t.Fatalf("read error = %v", err)
			}
			sum := sha256.Sum256(b)
			if hex.EncodeToString(sum[:]) == f.SHA256 {
				t.Fatalf("spoiled body still matches sha256")
			}
			if st, b := download(t, f.URL); st != 200 || int64(len(b)) != f.Bytes {
				t.Fatalf("next download: %d, %d bytes", st, len(b))
			}
		})
	}
	t.Run("links expiring early", func(t *testing.T) {
		em.SetLinkLifetime(time.Minute)
		f := snapshotURL(t, em)
		em.Advance(2 * time.Minute)
		var eb errorBody
		if r := call(t, "GET", f.URL, "", nil, &eb); r.StatusCode != 403 || eb.Error.Code != "link_expired" {
			t.Fatalf("%d %s", r.StatusCode, eb.Error.Code)
		}
		em.SetLinkLifetime(0)
	})
}

// The standalone shape: one listener serving the API and the files (for
// `ploti-replica emulator --listen`), and Handler served by a caller.
func TestEmulator_StartOnAndHandler(t *testing.T) {
	em, err := New(Options{NoRateLimit: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := em.StartOn("127.0.0.1:0", ""); err != nil {
		t.Fatal(err)
	}
	dir := em.Dir()
	em.AddPlace(Place{ID: "fl-orange", Kind: "county", State: "fl"})
	em.AddDataset(DatasetSpec{ID: dsPermits, PlaceID: "fl-orange", KeyColumns: []string{"permit_number"}, Columns: permitColumns()})
	mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(3, "P-"))
	f := snapshotURL(t, em)
	if !strings.HasPrefix(f.URL, em.URL()+"/files/") {
		t.Fatalf("file link %s not on %s", f.URL, em.URL())
	}
	if st, _ := download(t, f.URL); st != 200 {
		t.Fatalf("download: %d", st)
	}
	srv := httptest.NewServer(em.Handler())
	defer srv.Close()
	resp := call(t, "GET", srv.URL+"/v1/feeds/datasets/"+dsPermits+"/versions/1", em.APIKey(), nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("through Handler: %d", resp.StatusCode)
	}
	if err := em.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := em.Publish(t.Context(), dsPermits, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp dir left behind: %v", err)
	}
}

// FaultHits counts the requests a fault hit, by kind; a fault no request
// matched counts nothing.
func TestEmulator_FaultHits(t *testing.T) {
	em := mustEmulator(t)
	mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(10, "P-"))
	em.Inject(Fault{Match: "/files/**", Kind: FaultStatus, Status: http.StatusInternalServerError, Count: 2})
	em.Inject(Fault{Match: "/no/such/path", Kind: FaultReset})
	link := snapshotURL(t, em).URL
	for i, want := range []int{500, 500, 200} {
		if st, _ := download(t, link); st != want {
			t.Fatalf("download %d: status %d, want %d", i, st, want)
		}
	}
	if got := em.FaultHits(); len(got) != 1 || got[FaultStatus] != 2 {
		t.Fatalf("FaultHits = %v, want two status hits and no reset", got)
	}
}
