package replica

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// docs/design.md invariant 4: bad input from the network "fails that dataset
// with a clear error ... and lets the other datasets go on". A manifest
// entry whose fields do not decode (a version that is no number) is its
// dataset's bad input, as an event that does not decode is: the other
// dataset loads, the bootstrap stores the cursor, and the next sync
// repairs the failed one through the versions API.
func TestSync_ManifestEntryThatDoesNotDecode(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	var spoil atomic.Bool
	spoil.Store(true)
	proxied := answerRewriter(t, em, func(path string) bool { return strings.HasSuffix(path, "/manifest") && spoil.Load() }, func(m map[string]any) {
		ds, _ := m["datasets"].([]any)
		spoiled := false
		for _, e := range ds {
			if e, ok := e.(map[string]any); ok && e["datasetId"] == "ds_permits" {
				e["version"], spoiled = "one", true // a version that is no number
			}
		}
		if !spoiled {
			t.Errorf("no ds_permits entry in the manifest: %v", m)
		}
	})
	r := mustOpen(t, em, sub, "", fastRetries, func(o *Options) { o.APIURL = proxied })

	res, err := r.Sync(ctx)
	if !errors.Is(err, ErrPartial) || len(res.Failed) != 1 || res.Failed[0] != "ds_permits" || res.SnapshotsLoaded != 1 {
		t.Fatalf("bootstrap with ds_permits's entry spoiled: %v, %+v; want ds_permits failed and ds_parcels loaded", err, res)
	}
	assertMatchesTruth(t, r, em, "ds_parcels", 1)
	d := datasetRow(t, r, "ds_permits")
	if d.Status != storage.StatusFailed || !strings.Contains(d.LastError, "manifest entry of ds_permits") || !strings.Contains(d.LastError, "version") {
		t.Fatalf("ds_permits after the bootstrap: %s, %q; want failed naming its manifest entry", d.Status, d.LastError)
	}
	if mustStatus(t, r).Cursor == "" {
		t.Fatal("the bootstrap stored no cursor")
	}
	spoil.Store(false)
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", 1)
}
