package emulator

import (
	"context"
	"encoding/json"
	"testing"
)

// schemas-and-holds.txt names as breaking (held, a MAJOR bump) "a column
// removed or retyped, or the key changed from one set of columns to
// another or dropped". A key added where there was none is none of these:
// it is a MINOR change, not held, and arrives as schema_changed then
// updated ("A MINOR change on its own arrives as feed.dataset.updated").
func TestEmulator_KeyAddedWhereNone_IsMinorNotHeld(t *testing.T) {
	const ds = "ds_fl_orange_unkeyed"
	em := mustEmulator(t)
	if err := em.AddDataset(DatasetSpec{ID: ds, Title: "Orange County Unkeyed", PlaceID: "fl-orange",
		Topic: "development-activity", Columns: permitColumns()}); err != nil {
		t.Fatal(err)
	}
	sub := mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{ds}})
	rows := func() []Row {
		return []Row{permit("P-1", "1.00", 1), permit("P-2", "2.00", 2), permit("P-3", "3.00", 3)}
	}
	ctx := context.Background()
	if _, err := em.Publish(ctx, ds, rows()); err != nil {
		t.Fatal(err)
	}
	rel, err := em.Publish(ctx, ds, rows(), WithSchema(permitColumns(), []string{"permit_number"}))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Held || rel.SchemaBump != "minor" || rel.SchemaVersion != "1.1" || rel.ResyncReason != "" {
		t.Fatalf("key added where none: release %+v, want not held, minor, 1.1, no resync", rel)
	}
	evs := allEvents(t, em, sub)
	if got, want := eventTypes(evs), "added resync_required(first_version) schema_changed updated"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	var ch struct {
		Bump       string `json:"bump"`
		KeyColumns struct {
			From []string `json:"from"`
			To   []string `json:"to"`
		} `json:"keyColumns"`
	}
	if err := json.Unmarshal(evs[2].Data.SchemaChange, &ch); err != nil {
		t.Fatal(err)
	}
	if ch.Bump != "minor" || len(ch.KeyColumns.From) != 0 || len(ch.KeyColumns.To) != 1 {
		t.Fatalf("schemaChange %s, want a minor bump naming the key added", evs[2].Data.SchemaChange)
	}
}

// "... or the key changed from one set of columns to another or dropped
// (a MAJOR bump)": a key dropped is held for review.
func TestEmulator_KeyDropped_IsMajorHeld(t *testing.T) {
	em := mustEmulator(t)
	mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, []Row{permit("P-1", "1.00", 1), permit("P-2", "2.00", 2)})
	rel := mustPublish(t, em, []Row{permit("P-1", "1.00", 1), permit("P-2", "2.00", 2)}, WithSchema(permitColumns(), nil))
	if !rel.Held || rel.HoldReason != "schema_change" || rel.SchemaBump != "major" || rel.SchemaVersion != "2.0" {
		t.Fatalf("key dropped: release %+v, want held for schema_change, major 2.0", rel)
	}
}
