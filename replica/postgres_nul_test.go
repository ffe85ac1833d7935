package replica

import (
	"context"
	"fmt"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/internal/pgtest"
)

// A text value with NUL (U+0000), which PostgreSQL's text and jsonb cannot
// hold, loads on PostgreSQL with U+FFFD in its place, in a snapshot and in
// a merge, in a string, a list of strings and JSON, and verify, which
// reads the snapshot the same way, finds the table equal to it; so does
// the registry's text (a title).
func TestPostgres_NULInTextIsReplaced(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_nul", Title: "N\x00UL", PlaceID: "fl-orange", Topic: "development-activity",
		KeyColumns: []string{"k"}, Columns: []emulator.Column{
			{Name: "k", Type: "string"}, {Name: "note", Type: "string"},
			{Name: "tags", Type: "list", Items: &emulator.Column{Type: "string"}}, {Name: "extra", Type: "json"}}}))
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	_, err = em.PublishQuery(ctx, "ds_nul", `SELECT 'k' || i AS k, 'a' || chr(0) || 'b' || i AS note,
		['x' || chr(0), 'y'] AS tags, '{"s": "c\u0000d", "t": "\\u0000"}' AS extra FROM range(3) t(i)`)
	must(t, err)
	r := mustOpen(t, em, sub, pgtest.DB(t))
	mustSync(t, r)
	var note, tags, extra, escaped string
	must(t, r.DB().QueryRowContext(ctx, `SELECT note, tags::text, extra->>'s', extra->>'t' FROM ds_nul WHERE k = 'k1'`).Scan(&note, &tags, &extra, &escaped))
	if note != "a\uFFFDb1" || tags != "{x\uFFFD,y}" || extra != "c\uFFFDd" || escaped != `\u0000` {
		t.Fatalf("row k1 = %q %q %q %q, want NUL as U+FFFD and an escaped backslash kept", note, tags, extra, escaped)
	}
	d, err := r.db.Dataset(ctx, "ds_nul")
	must(t, err)
	if d.Title != "N\uFFFDUL" {
		t.Fatalf("title = %q, want NUL as U+FFFD", d.Title)
	}
	_, err = em.PublishQuery(ctx, "ds_nul", `SELECT 'k' || i AS k, 'e' || chr(0) || i AS note,
		[chr(0)] AS tags, '{"s": "\u0000"}' AS extra FROM range(4) t(i)`)
	must(t, err)
	mustSync(t, r)
	must(t, r.DB().QueryRowContext(ctx, `SELECT note FROM ds_nul WHERE k = 'k3'`).Scan(&note))
	if note != "e\uFFFD3" {
		t.Fatalf("merged row k3 note = %q", note)
	}
	rep, err := r.Verify(ctx, VerifyOptions{})
	if err != nil || !rep.OK() || rep.Verified != 1 {
		t.Fatalf("verify: %v, %+v", err, rep)
	}
}

// The same for a watched dataset, whose rows come as JSON: a key and a
// value with NUL load, and merge, with U+FFFD.
func TestPostgres_NULInAWatchedDataset(t *testing.T) {
	em := mustEmulator(t)
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	must(t, em.AddDataset(emulator.DatasetSpec{ID: "ds_nul", Title: "NUL", PlaceID: "fl-orange", KeyColumns: []string{"k"},
		Columns: []emulator.Column{{Name: "k", Type: "string"}, {Name: "note", Type: "string"}}}))
	rows := func(round int) []emulator.Row {
		return []emulator.Row{{"k": "a\x00", "note": fmt.Sprintf("x\x00%d", round)}, {"k": "b", "note": "plain"}}
	}
	mustPublishRows(t, em, "ds_nul", rows(0))
	_, err := em.Watch("ds_nul")
	must(t, err)
	r := mustOpenWatches(t, em, pgtest.DB(t))
	mustSync(t, r)
	mustPublishRows(t, em, "ds_nul", rows(1))
	if res := mustSync(t, r); res.WatchMerges != 1 {
		t.Fatalf("the second sync: %+v, want a merge", res)
	}
	var note string
	must(t, r.DB().QueryRowContext(context.Background(), "SELECT note FROM ds_nul WHERE k = 'a\uFFFD'").Scan(&note))
	if note != "x\uFFFD1" {
		t.Fatalf("the watched row with NUL = %q, want x\uFFFD1", note)
	}
}
