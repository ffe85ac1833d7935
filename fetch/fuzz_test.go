package fetch

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Seeds beyond testdata/fuzz/<FuzzName>/ (Go's corpus format).
var eventPageSeeds = []string{
	`{"events": [], "nextCursor": "c0"}`,
	`{"events": [{"id": "evt_000000000042", "type": "feed.dataset.updated", "timestamp": "2026-11-20T10:00:01Z",
	  "subscriptionId": "sub_1", "data": {"datasetId": "ds_fl_orange_permits", "version": 7, "previousVersion": 5,
	  "schemaVersion": "2.1", "links": {"version": "https://api.ploti.ai/v1/feeds/datasets/ds_fl_orange_permits/versions/7"}}}],
	  "nextCursor": "c42"}`,
	`{"events": [{"id": "p", "type": "ping", "timestamp": "2026-11-20T10:00:01Z", "data": {}}], "nextCursor": "c"}`,
	`{"events": [{"id": "e", "type": "feed.dataset.added", "timestamp": "2026-11-20T10:00:01+02:00", "data": null,
	  "links": {"dataset": "https://api.ploti.ai/v1/feeds/datasets/x"}}], "nextCursor": "c"}`,
	`{"events": [{"id": "e", "type": "feed.dataset.schema_changed", "timestamp": "2026-11-20T10:00:01Z",
	  "data": {"datasetId": "d", "version": 3, "schemaChange": {"bump": "major", "added": [{"name": "u", "type": "integer",
	  "items": null, "precision": null, "geometry": null}], "removed": [], "retyped": [{"name": "v", "from": {"type": "string"},
	  "to": {"type": "decimal", "precision": {"precision": 14, "scale": 2}}}], "keyColumns": {"from": ["a"], "to": ["b"]}}}}],
	  "nextCursor": "c"}`,
	`{"events": [{"id": "e", "type": "feed.dataset.stale", "timestamp": "2026-11-20T10:00:01Z",
	  "data": {"datasetId": "d", "lastCheckedAt": "2026-11-20T10:00:01Z", "nextCheckBy": "2026-11-21T10:00:01Z"}}], "nextCursor": "c"}`,
	`{"events": [{"id": "e", "type": "feed.dataset.updated", "data": {"version": "7"}}], "nextCursor": "c"}`,
	`{"events": null}`,
	`[]`,
	`null`,
	``,
}

var manifestSeeds = []string{
	`{"subscriptionId": "sub_1", "eventCursor": "c42", "generatedAt": "2026-11-20T10:00:00Z",
	  "datasets": [{"datasetId": "ds_a", "version": 7, "schemaVersion": "2.1", "keyed": true, "keyColumns": ["permit_number"],
	  "rowCount": 182344, "files": {"snapshot": [{"url": "https://files.test/p0.parquet?sig=x", "bytes": 1048576, "sha256": "ab"}],
	  "schema": {"url": "https://files.test/schema.json?sig=x", "bytes": 900}, "attachments": [{"name": "d.pdf",
	  "contentType": "application/pdf", "url": "https://files.test/d.pdf?sig=x", "bytes": 5000}]},
	  "linksExpireAt": "2026-11-20T11:00:00Z"}],
	  "unavailable": [{"datasetId": "ds_b", "version": 8, "reason": "rebuilding"}, {"datasetId": "ds_c", "reason": "building"}]}`,
	`{"eventCursor": "c", "datasets": [], "unavailable": []}`,
	`{"eventCursor": "c", "datasets": [{"files": {"idMap": null, "changes": null}}]}`,
	`{"eventCursor": "", "datasets": []}`,
	`{"eventCursor": 5}`,
	`{}`,
	``,
}

// FuzzDecodeEventPage: decoding never panics, and a page that decodes
// re-encodes to a fixed point (encode, decode, encode gives the same bytes).
func FuzzDecodeEventPage(f *testing.F) {
	for _, s := range eventPageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeEventPage(b)
		if err != nil {
			return
		}
		b1, err := json.Marshal(p)
		if err != nil {
			return // e.g. a time outside what encoding/json can write
		}
		p2, err := DecodeEventPage(b1)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b1, err)
		}
		b2, err := json.Marshal(p2)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("round trip differs:\n%s\n%s", b1, b2)
		}
		if p2.NextCursor != p.NextCursor || len(p2.Events) != len(p.Events) {
			t.Fatalf("round trip lost the cursor or events")
		}
	})
}

// FuzzDecodeManifest: decoding never panics, and a manifest that decodes
// round-trips.
func FuzzDecodeManifest(f *testing.F) {
	for _, s := range manifestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			return
		}
		b1, err := json.Marshal(m)
		if err != nil {
			return
		}
		m2, err := DecodeManifest(b1)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b1, err)
		}
		b2, _ := json.Marshal(m2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("round trip differs:\n%s\n%s", b1, b2)
		}
	})
}

// TestDecodeEventPage_RoundTrip checks a valid page keeps every field
// through encode and decode.
func TestDecodeEventPage_RoundTrip(t *testing.T) {
	p, err := DecodeEventPage([]byte(eventPageSeeds[1]))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := DecodeEventPage(b)
	if err != nil {
		t.Fatal(err)
	}
	e, g := p.Events[0], q.Events[0]
	if g.ID != e.ID || g.Type != e.Type || !g.Timestamp.Equal(e.Timestamp) || g.SubscriptionID != "sub_1" ||
		*g.Data.Version != 7 || *g.Data.PreviousVersion != 5 || g.Data.SchemaVersion != "2.1" ||
		g.Data.Links == nil || g.Data.Links.Version != e.Data.Links.Version || q.NextCursor != "c42" {
		t.Fatalf("round trip changed the event:\n%+v\n%+v", e, g)
	}
}

// TestFuzzCorpus_Valid: the corpus files named as valid decode, so the
// fuzzers start from inputs that reach the round trip.
func TestFuzzCorpus_Valid(t *testing.T) {
	tests := []struct {
		fuzz, file string
		decode     func([]byte) error
	}{
		{"FuzzDecodeEventPage", "all_types", func(b []byte) error { _, err := DecodeEventPage(b); return err }},
		{"FuzzDecodeEventPage", "empty_caught_up", func(b []byte) error { _, err := DecodeEventPage(b); return err }},
		{"FuzzDecodeEventPage", "ping_and_unknown", func(b []byte) error { _, err := DecodeEventPage(b); return err }},
		{"FuzzDecodeManifest", "full", func(b []byte) error { _, err := DecodeManifest(b); return err }},
		{"FuzzDecodeManifest", "empty", func(b []byte) error { _, err := DecodeManifest(b); return err }},
	}
	for _, tt := range tests {
		raw, err := os.ReadFile(filepath.Join("testdata", "fuzz", tt.fuzz, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		_, lit, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s/%s: %v", tt.fuzz, tt.file, err)
		}
		if err := tt.decode([]byte(s)); err != nil {
			t.Errorf("%s/%s: %v", tt.fuzz, tt.file, err)
		}
	}
}
