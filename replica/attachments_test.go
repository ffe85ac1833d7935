package replica

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// keptAttachments reads a dataset's kept attachments, with each one's
// content (from the table or from its file).
func keptAttachments(t *testing.T, r *Replica, datasetID string) map[string]storage.Attachment {
	t.Helper()
	list, err := r.db.Attachments(context.Background(), datasetID, true)
	must(t, err)
	out := map[string]storage.Attachment{}
	for _, a := range list {
		if !a.Inline() {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(r.db.Path()), filepath.FromSlash(a.Path)))
			must(t, err)
			a.Content = b
		}
		out[a.Name] = a
	}
	return out
}

// subscriptions-manifest-files.txt: the manifest lists each dataset "with
// that version and signed links to its snapshot, schema and attachments,
// the files Ploti holds for the dataset"; "Attachments are in whatever
// format Ploti stored them, named by contentType." They are downloaded,
// verified and kept in _ploti.attachments: inline up to a limit, as a file
// beside the replica above it.
func TestScenario_Attachments(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	dict := []byte("column,meaning\npermit,the permit number\n")
	manual := bytes.Repeat([]byte("%PDF-1.4 manual "), 200) // 3200 bytes
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_permits", Title: "Permits", PlaceID: "fl-orange", KeyColumns: []string{"permit"},
		Columns: permitCols[:1], Attachments: []emulator.Attachment{
			{Name: "dictionary.csv", ContentType: "text/csv", Data: dict},
			{Name: "../manual.pdf", ContentType: "application/pdf", Data: manual}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	row := func(i int) []emulator.Row { return []emulator.Row{{"permit": "P-1"}, {"permit": "P-" + itoa(i+1)}} }
	_, err = em.Publish(ctx, "ds_permits", row(1))
	must(t, err)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.AttachmentsInlineMax = 1024 })
	mustSync(t, r)
	kept := keptAttachments(t, r, "ds_permits")
	d, m := kept["dictionary.csv"], kept["../manual.pdf"]
	if !d.Inline() || !bytes.Equal(d.Content, dict) || d.SHA256 != sha(dict) || d.Bytes != int64(len(dict)) || d.ContentType != "text/csv" || d.Version != 1 {
		t.Fatalf("dictionary = %+v, want inline, its bytes and sha256, version 1", d)
	}
	if !isFile(r.db) {
		// A database keeps every attachment inline: no folder beside it.
		if !m.Inline() || !bytes.Equal(m.Content, manual) || m.SHA256 != sha(manual) {
			t.Fatalf("manual = %s %+v, want inline in the database", m.Path, m.Bytes)
		}
	} else if m.Inline() || !bytes.Equal(m.Content, manual) || m.SHA256 != sha(manual) || !strings.HasPrefix(m.Path, "replica.duckdb.attachments/ds_permits/v1/") || strings.Contains(m.Path, "..") {
		t.Fatalf("manual = %s %+v, want a file beside the replica, under its folder", m.Path, m.Bytes)
	}

	// A new version with the same files: nothing downloaded (every
	// attachment download would fail now), nothing written (the rows say
	// which version brought each file; decision 13: the sync's last commit
	// stays its data's).
	_, err = em.Publish(ctx, "ds_permits", row(2))
	must(t, err)
	em.Inject(emulator.Fault{Match: "/files/d1/attachments/**", Kind: emulator.FaultCorrupt, Count: -1}) // ds_permits is d1
	res := mustSync(t, r)
	syncs, err := r.db.AttachmentSyncs(ctx)
	must(t, err)
	if len(res.AttachmentsFailed) != 0 || keptAttachments(t, r, "ds_permits")["../manual.pdf"].Version != 1 || syncs["ds_permits"].Version != 1 {
		t.Fatalf("unchanged attachments of v2: %+v, sync %+v", res, syncs["ds_permits"])
	}

	// A changed dictionary, but its download is corrupt: the data goes on,
	// the attachments stay those of v2, and the next sync keeps them.
	dict2 := []byte("column,meaning\npermit,the permit's number\nunits,dwelling units\n")
	must(t, em.SetAttachments("ds_permits", []emulator.Attachment{
		{Name: "dictionary.csv", ContentType: "text/csv", Data: dict2},
		{Name: "../manual.pdf", ContentType: "application/pdf", Data: manual}}))
	_, err = em.Publish(ctx, "ds_permits", row(3))
	must(t, err)
	res = mustSync(t, r)
	if len(res.AttachmentsFailed) != 1 || datasetRow(t, r, "ds_permits").Version != 3 {
		t.Fatalf("a corrupt attachment: %+v, v%d", res, datasetRow(t, r, "ds_permits").Version)
	}
	if got := keptAttachments(t, r, "ds_permits")["dictionary.csv"]; !bytes.Equal(got.Content, dict) || got.Version != 1 {
		t.Fatalf("after a corrupt download the kept dictionary = v%d %q", got.Version, got.Content)
	}
	syncs, err = r.db.AttachmentSyncs(ctx)
	must(t, err)
	if s := syncs["ds_permits"]; s.Version != 3 || !strings.Contains(s.Error, "sha256") {
		t.Fatalf("attachment sync = %+v, want the failure of v3 recorded", s)
	}
	em.ClearFaults()
	res = mustSync(t, r)
	kept = keptAttachments(t, r, "ds_permits")
	if d, m := kept["dictionary.csv"], kept["../manual.pdf"]; len(res.AttachmentsFailed) != 0 || !bytes.Equal(d.Content, dict2) || d.Version != 3 || m.Version != 1 {
		t.Fatalf("the next sync: %+v; dictionary v%d %q, manual v%d", res, d.Version, d.Content, m.Version)
	}
	// The manual's file is still the one kept under v1's folder.
	entries, _ := filepath.Glob(filepath.Join(r.db.Path()+".attachments", "ds_permits", "*", "*"))
	if isFile(r.db) && len(entries) != 1 {
		t.Fatalf("attachment files = %v, want the manual's only", entries)
	}
}

// Attachments are kept verified (bytes, sha256) under their names: two of
// a version whose names read the same once made safe for a file ("a
// b.txt", "a_b.txt"), or once a case-insensitive file system folds them
// ("A_B.txt"), are kept in files of their own. Before, they shared one,
// and one's row named the other's bytes.
func TestScenario_AttachmentsWhoseNamesReadTheSame(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	names := []string{"a b.txt", "a_b.txt", "A_B.txt"}
	var atts []emulator.Attachment
	for _, n := range names {
		atts = append(atts, emulator.Attachment{Name: n, ContentType: "text/plain", Data: bytes.Repeat([]byte(n+"\n"), 50)})
	}
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_a", Title: "A", PlaceID: "fl-orange", KeyColumns: []string{"k"},
		Columns: []emulator.Column{{Name: "k", Type: "string"}}, Attachments: atts}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	_, err = em.Publish(ctx, "ds_a", []emulator.Row{{"k": "x"}})
	must(t, err)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.AttachmentsInlineMax = -1 })
	if res := mustSync(t, r); len(res.AttachmentsFailed) != 0 {
		t.Fatalf("attachments failed: %v", res.AttachmentsFailed)
	}
	kept := keptAttachments(t, r, "ds_a")
	for _, a := range atts {
		got := kept[a.Name]
		if !bytes.Equal(got.Content, a.Data) || got.SHA256 != sha(a.Data) {
			t.Fatalf("%q (%s) = %.20q…, want its own bytes", a.Name, got.Path, got.Content)
		}
		if isFile(r.db) && (!strings.HasPrefix(got.Path, "replica.duckdb.attachments/ds_a/v1/") || !strings.HasSuffix(got.Path, ".txt")) {
			t.Fatalf("%q kept as %s, want a .txt file under the version's folder", a.Name, got.Path)
		}
	}
}

// One bad attachment fails alone: a version lists two, one's sha256 never
// matches; the good one of that version is kept, the bad one keeps the
// row kept before under its name, and the sync's result and status say
// which failed and why.
func TestScenario_OneBadAttachmentFailsAlone(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	dict, notes := []byte("column,meaning\npermit,the permit\n"), []byte("notes v1\n")
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_permits", Title: "Permits", PlaceID: "fl-orange", KeyColumns: []string{"permit"},
		Columns: permitCols[:1], Attachments: []emulator.Attachment{
			{Name: "dictionary.csv", ContentType: "text/csv", Data: dict}, {Name: "notes.txt", ContentType: "text/plain", Data: notes}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	_, err = em.Publish(ctx, "ds_permits", []emulator.Row{{"permit": "P-1"}})
	must(t, err)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)

	dict2, notes2 := []byte("column,meaning\npermit,the permit's number\n"), []byte("notes v2\n")
	must(t, em.SetAttachments("ds_permits", []emulator.Attachment{
		{Name: "dictionary.csv", ContentType: "text/csv", Data: dict2}, {Name: "notes.txt", ContentType: "text/plain", Data: notes2}}))
	_, err = em.Publish(ctx, "ds_permits", []emulator.Row{{"permit": "P-1"}, {"permit": "P-2"}})
	must(t, err)
	em.Inject(emulator.Fault{Match: "/files/d1/attachments/*/*-notes.txt", Kind: emulator.FaultCorrupt, Count: -1})
	res := mustSync(t, r)
	kept := keptAttachments(t, r, "ds_permits")
	if d := kept["dictionary.csv"]; !bytes.Equal(d.Content, dict2) || d.Version != 2 {
		t.Fatalf("the good attachment of v2: v%d %q, want v2's", d.Version, d.Content)
	}
	if n := kept["notes.txt"]; !bytes.Equal(n.Content, notes) || n.Version != 1 {
		t.Fatalf("the bad one: v%d %q, want the one kept before (v1)", n.Version, n.Content)
	}
	if len(res.AttachmentFailures) != 1 || !strings.Contains(res.AttachmentFailures[0].Reason, `"notes.txt"`) ||
		!strings.Contains(res.AttachmentFailures[0].Reason, "1 of 2 not kept") {
		t.Fatalf("the sync's result: %+v, want notes.txt named as the one not kept", res.AttachmentFailures)
	}
	st, err := r.Status(ctx)
	must(t, err)
	if e := st.Datasets[0].AttachmentsError; !strings.Contains(e, `"notes.txt"`) {
		t.Fatalf("status says %q of the attachments, want notes.txt named", e)
	}
	em.ClearFaults()
	mustSync(t, r)
	if n := keptAttachments(t, r, "ds_permits")["notes.txt"]; !bytes.Equal(n.Content, notes2) || n.Version != 2 {
		t.Fatalf("after the fault: notes v%d %q, want v2's", n.Version, n.Content)
	}
	if st, _ := r.Status(ctx); st.Datasets[0].AttachmentsError != "" {
		t.Fatalf("status still says %q after the next sync kept them all", st.Datasets[0].AttachmentsError)
	}
}
