package emulator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// SpoilFile serves other content under a matching bytes and sha256; Truth
// and RestoreFiles keep the version's own file.
func TestEmulator_SpoilFile(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(10, "P-"))
	before := snapshotURL(t, em)
	if err := em.SpoilFileQuery(ctx, dsPermits, 1, "snapshot", 0, "SELECT * FROM original UNION ALL (SELECT * FROM original LIMIT 1)"); err != nil {
		t.Fatal(err)
	}
	after := snapshotURL(t, em)
	st, b := download(t, after.URL)
	sum := sha256.Sum256(b)
	if st != 200 || int64(len(b)) != after.Bytes || hex.EncodeToString(sum[:]) != after.SHA256 || after.SHA256 == before.SHA256 {
		t.Fatalf("spoiled file: status %d, %d bytes (link says %d), sha matches link: %v, differs from the original: %v",
			st, len(b), after.Bytes, hex.EncodeToString(sum[:]) == after.SHA256, after.SHA256 != before.SHA256)
	}
	rowsIn := func(path string) int {
		var n int
		if err := em.db.QueryRow("SELECT count(*) FROM read_parquet(" + lit(path) + ")").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tmp := t.TempDir() + "/s.parquet"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	truth, err := em.Truth(ctx, dsPermits, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsIn(tmp), 11; got != want {
		t.Fatalf("spoiled snapshot has %d rows, want %d", got, want)
	}
	if got, want := rowsIn(truth), 10; got != want {
		t.Fatalf("truth has %d rows, want %d (the version's own)", got, want)
	}
	if err := em.SpoilFile(ctx, dsPermits, 1, "schema", 0, func(string) ([]byte, error) { return []byte(`{"datasetId": `), nil }); err != nil {
		t.Fatal(err)
	}
	if err := em.SpoilFile(ctx, dsPermits, 1, "idMap", 0, nil); err == nil {
		t.Fatal("spoiling a file the version lacks: no error")
	}
	if err := em.RestoreFiles(dsPermits, 1); err != nil {
		t.Fatal(err)
	}
	if got := snapshotURL(t, em); got.SHA256 != before.SHA256 || got.Bytes != before.Bytes {
		t.Fatalf("after RestoreFiles: %+v, want %+v", got, before)
	}
	if st, b := download(t, snapshotURL(t, em).URL); st != 200 || int64(len(b)) != before.Bytes {
		t.Fatalf("restored download: %d, %d bytes", st, len(b))
	}
}

// Body faults spoil API answers too: JSON cut short or with NUL bytes, or
// a connection dropped halfway.
func TestEmulator_APIBodyFaults(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(5, "P-"))
	events := "/v1/feeds/subscriptions/" + sub + "/events"
	for _, tt := range []struct {
		name    string
		kind    FaultKind
		readErr bool
	}{
		{"truncated", FaultTruncate, false},
		{"corrupt", FaultCorrupt, false},
		{"cut off", FaultCutOff, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			em.Inject(Fault{Match: "GET " + events, Kind: tt.kind})
			req, _ := http.NewRequest("GET", em.URL()+events, nil)
			req.Header.Set("Authorization", "Bearer "+em.APIKey())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if (err != nil) != tt.readErr || resp.StatusCode != 200 {
				t.Fatalf("status %d, read error %v", resp.StatusCode, err)
			}
			var v any
			if json.Unmarshal(b, &v) == nil {
				t.Fatalf("spoiled answer parses: %q", b)
			}
			var page eventsPage
			if st := apiGet(t, em, events, &page); st != 200 || len(page.Events) == 0 || !strings.HasPrefix(page.Events[0].ID, "evt_") {
				t.Fatalf("next answer: %d %+v", st, page)
			}
		})
	}
}
