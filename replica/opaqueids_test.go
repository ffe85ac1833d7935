package replica

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// docs/wire.md 2: "Dataset ids and place ids are opaque strings: use them
// exactly as given." Ids that read the same once made safe for a file
// name ("ds_a", "ds.a", "ds a"), or once a case-insensitive file system
// folds them ("ds_A"), get spool names of their own: before, they shared
// one, and their concurrent loads failed or read each other's files.
func TestFileName_oneNamePerDatasetID(t *testing.T) {
	ids := []string{"ds_a", "ds.a", "ds a", "ds/a", "ds_A", "DS_A", "ds-a", "ds_a_"}
	seen := map[string]string{}
	for _, id := range ids {
		for _, kind := range []string{"snapshot", "changes", "idMap", "schema"} {
			name := strings.ToLower(fileName(id, 3, kind, 0, ".parquet"))
			if other, ok := seen[name]; ok {
				t.Fatalf("dataset ids %q and %q share the spool name %q", other, id, name)
			}
			seen[name] = id
		}
	}
	if got := fileName("ds_permits", 2, "snapshot", 0, ".parquet"); got != "ds_permits-v2-snapshot-0.parquet" {
		t.Fatalf("a safe id's spool name changed: %q", got)
	}
}

func TestSync_DatasetIDsThatReadTheSameOnceMadeSafe(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	ids := []string{"ds_a", "ds.a", "ds a", "ds/a"}
	for _, id := range ids {
		must(t, em.AddDataset(emulator.DatasetSpec{ID: id, Title: id, PlaceID: "fl-orange", Topic: "development-activity",
			KeyColumns: []string{"k"}, Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "n", Type: "integer"}}}))
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	publish := func(round int) {
		for i, id := range ids {
			_, err := em.Publish(ctx, id, []emulator.Row{{"k": id, "n": int64(i + round)}, {"k": "other", "n": int64(10*i + round)}})
			must(t, err)
		}
	}
	publish(0)
	r := mustOpen(t, em, sub, "")
	for version := 1; version <= 2; version++ {
		if version == 2 {
			publish(1) // merges this time
		}
		if res := mustSync(t, r); len(res.Failed) != 0 {
			t.Fatalf("v%d: failed %v", version, res.Failed)
		}
		for _, id := range ids {
			assertMatchesTruth(t, r, em, id, version)
		}
	}
}

// The same for the folder that keeps a dataset's attachments beside the
// file: "ds a" and "ds_a" shared one, so that one's files overwrote the
// other's, and the prune after one's sync removed the other's.
func TestScenario_AttachmentsOfDatasetIDsThatReadTheSame(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	ids := []string{"ds_a", "ds a"}
	content := map[string][]byte{}
	for _, id := range ids {
		content[id] = bytes.Repeat([]byte("manual of "+id+"\n"), 100)
		must(t, em.AddDataset(emulator.DatasetSpec{ID: id, Title: id, PlaceID: "fl-orange", KeyColumns: []string{"k"},
			Columns:     []emulator.Column{{Name: "k", Type: "string"}},
			Attachments: []emulator.Attachment{{Name: "manual.txt", ContentType: "text/plain", Data: content[id]}}}))
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	for _, id := range ids {
		_, err := em.Publish(ctx, id, []emulator.Row{{"k": id}})
		must(t, err)
	}
	r := mustOpen(t, em, sub, "", func(o *Options) { o.AttachmentsInlineMax = -1 })
	if !isFile(r.db) {
		t.Skip("a database keeps attachments inline")
	}
	if res := mustSync(t, r); len(res.AttachmentsFailed) != 0 {
		t.Fatalf("attachments failed: %v", res.AttachmentsFailed)
	}
	for _, id := range ids {
		if got := keptAttachments(t, r, id)["manual.txt"]; !bytes.Equal(got.Content, content[id]) {
			t.Fatalf("%s's manual (%s) = %.20q…, want its own", id, got.Path, got.Content)
		}
	}
}

// docs/wire.md 2 sets no length on a dataset id: two ids longer than
// PostgreSQL's identifiers (63 bytes), the same in their first 70
// characters, load and merge into tables of their own on either engine
// (PostgreSQL refused a table name past 63 bytes, and the dataset failed).
func TestSync_DatasetIDsLongerThanAnIdentifier(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	long := "ds_fl_orange_" + strings.Repeat("building_permits_", 4)
	ids := []string{long + "residential", long + "commercial"}
	for _, id := range ids {
		must(t, em.AddDataset(emulator.DatasetSpec{ID: id, Title: id, PlaceID: "fl-orange", KeyColumns: []string{"k"},
			Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "n", Type: "integer"}}}))
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	r := mustOpen(t, em, sub, "")
	for version := 1; version <= 2; version++ {
		for i, id := range ids {
			_, err := em.Publish(ctx, id, []emulator.Row{{"k": "a", "n": int64(i + version)}, {"k": "b", "n": int64(i)}})
			must(t, err)
		}
		if res := mustSync(t, r); len(res.Failed) != 0 {
			t.Fatalf("v%d: failed %v", version, res.Failed)
		}
		tables := map[string]bool{}
		for _, id := range ids {
			assertMatchesTruth(t, r, em, id, version)
			tables[datasetRow(t, r, id).Table] = true
		}
		if len(tables) != len(ids) {
			t.Fatalf("v%d: %d tables for %d datasets", version, len(tables), len(ids))
		}
	}
}

// A dataset id of 3,000 characters, and an attachment name of 240, fit
// the file system's names (255 bytes): spool files, the attachments
// folder and file are cut, with a hash of the whole name, so two ids (or
// names) alike in their first characters stay apart. Before, the dataset
// failed on every sync ("file name too long").
func TestSync_NamesLongerThanAFileName(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	long := "ds_" + strings.Repeat("x", 3000)
	ids := []string{long + "a", long + "b"}
	names := []string{strings.Repeat("n", 240) + "1.pdf", strings.Repeat("n", 240) + "2.pdf"}
	for _, id := range ids {
		var atts []emulator.Attachment
		for _, n := range names {
			atts = append(atts, emulator.Attachment{Name: n, ContentType: "application/pdf", Data: []byte(id[len(id)-1:] + n[240:])})
		}
		must(t, em.AddDataset(emulator.DatasetSpec{ID: id, Title: "long", PlaceID: "fl-orange", KeyColumns: []string{"k"},
			Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "n", Type: "integer"}}, Attachments: atts}))
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.AttachmentsInlineMax = -1 })
	for version := 1; version <= 2; version++ {
		for i, id := range ids {
			_, err := em.Publish(ctx, id, []emulator.Row{{"k": "a", "n": int64(i + version)}, {"k": "b", "n": int64(i)}})
			must(t, err)
		}
		res := mustSync(t, r)
		if len(res.Failed) != 0 || len(res.AttachmentsFailed) != 0 {
			t.Fatalf("v%d: failed %v, attachments failed %v", version, res.Failed, res.AttachmentsFailed)
		}
		for _, id := range ids {
			assertMatchesTruth(t, r, em, id, version)
		}
	}
	if !isFile(r.db) {
		return
	}
	for _, id := range ids {
		kept := keptAttachments(t, r, id)
		for _, n := range names {
			if want := id[len(id)-1:] + n[240:]; string(kept[n].Content) != want {
				t.Fatalf("attachment %.10s… of %.10s…%s = %q (%s), want %q", n, id, id[len(id)-1:], kept[n].Content, kept[n].Path, want)
			}
		}
	}
}
