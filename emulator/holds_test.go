package emulator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// only keeps the given columns of rows.
func only(rows []Row, cols []Column) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{}
		for _, c := range cols {
			if v, ok := r[c.Name]; ok {
				out[i][c.Name] = v
			}
		}
	}
	return out
}

func permits(n int, prefix string) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = permit(fmt.Sprintf("%s%d", prefix, i), "1.00", float64(i))
	}
	return rows
}

// Docs (schemas-and-holds.txt, "Holds"): each check holds the version, its
// subscribers get feed.dataset.delayed once with the reason, and the held
// version never appears in the versions API.
func TestEmulator_Holds(t *testing.T) {
	tests := []struct {
		name   string
		rows   []Row
		opts   []PublishOption
		hold   string
		reason string
	}{
		// "key_violation: the dataset's key has duplicates or nulls in this version"
		{"key duplicates", append(permits(10, "P-"), permit("P-1", "2.00", 1)), nil, "key_violation", "data_check"},
		{"key nulls", append(permits(10, "P-"), Row{"valuation": "1.00"}), nil, "key_violation", "data_check"},
		// "a version with fewer than 70% of the last released version's rows"
		{"row drop", permits(6, "P-"), nil, "row_drop", "data_check"},
		// "identity_ambiguous: most of the last released version's records
		// matched no record in this version while the row count barely moved"
		{"ids turn over", permits(10, "Q-"), nil, "identity_ambiguous", "data_check"},
		// "identity_unresolved: Ploti could not decide which of this version's
		// records continue a previous record"
		{"unresolved", permits(10, "P-"), []PublishOption{Hold("identity_unresolved")}, "identity_unresolved", "processing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			em := mustEmulator(t)
			sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
			mustPublish(t, em, permits(10, "P-"))
			rel := mustPublish(t, em, tt.rows, tt.opts...)
			if !rel.Held || rel.HoldReason != tt.hold {
				t.Fatalf("release = %+v, want held %s", rel, tt.hold)
			}
			evs := allEvents(t, em, sub)
			if got, want := eventTypes(evs), "added resync_required(first_version) delayed("+tt.reason+")"; got != want {
				t.Fatalf("events = %s, want %s", got, want)
			}
			if st := apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/2", nil); st != 404 {
				t.Fatalf("held version answered %d", st)
			}
			// "It is sent once per held version, including to a subscription
			// that adds the dataset while it waits."
			late := mustSub(t, em, SubscriptionSpec{DatasetIDs: []string{dsPermits}})
			if got, want := eventTypes(allEvents(t, em, late)), "added delayed("+tt.reason+")"; got != want {
				t.Fatalf("late events = %s, want %s", got, want)
			}
			// "Staff can release any held version except a key_violation,
			// which can only be discarded."
			_, err := em.ReleaseHeld(dsPermits)
			if tt.hold == "key_violation" {
				if !errors.Is(err, ErrNotReleasable) {
					t.Fatalf("ReleaseHeld = %v, want ErrNotReleasable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := eventTypes(allEvents(t, em, sub)[3:]); got != "updated" {
				t.Fatalf("after release: %s", got)
			}
		})
	}
}

// Docs: "Ploti discards it. The dataset's next version follows from the one
// you hold." and "One discarded or replaced leaves a gap in the version
// numbers."; "A newer version of the dataset replaces a held one".
func TestEmulator_Holds_DiscardAndReplace(t *testing.T) {
	em := mustEmulator(t)
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(10, "P-"))
	mustPublish(t, em, permits(5, "P-")) // v2 held: row drop
	if err := em.DiscardHeld(dsPermits); err != nil {
		t.Fatal(err)
	}
	if err := em.DiscardHeld(dsPermits); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second discard = %v", err)
	}
	mustPublish(t, em, permits(4, "P-")) // v3 held: row drop
	// v4 replaces v3; "Its changes, row count and schema version are measured
	// from the last released version, not from other held ones."
	rel := mustPublish(t, em, append(permits(10, "P-"), permit("P-new", "1.00", 99)))
	if rel.Held || rel.Version != 4 || *rel.PreviousVersion != 1 || rel.Added != 1 || rel.Removed != 0 {
		t.Fatalf("v4 = %+v", rel)
	}
	evs := allEvents(t, em, sub)
	if got, want := eventTypes(evs), "added resync_required(first_version) delayed(data_check) delayed(data_check) updated"; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	if *evs[4].Data.Version != 4 || *evs[4].Data.PreviousVersion != 1 {
		t.Fatalf("updated = %+v", evs[4].Data)
	}
	for v, want := range map[int]int{1: 200, 2: 404, 3: 404, 4: 200} {
		if got := apiGet(t, em, fmt.Sprintf("/v1/feeds/datasets/%s/versions/%d", dsPermits, v), nil); got != want {
			t.Errorf("version %d: %d, want %d", v, got, want)
		}
	}
}

// Docs: "When a held or discarded version already took a number for another
// shape, the new shape takes the next free one."
func TestEmulator_SchemaNumbers_SkipTakenByDiscarded(t *testing.T) {
	em := mustEmulator(t)
	mustPublish(t, em, permits(3, "P-"))
	cols := permitColumns()
	rel := mustPublish(t, em, only(permits(3, "P-"), cols[:7]), WithSchema(cols[:7], []string{"permit_number"}))
	if rel.SchemaVersion != "2.0" || !rel.Held {
		t.Fatalf("held = %+v", rel)
	}
	if err := em.DiscardHeld(dsPermits); err != nil {
		t.Fatal(err)
	}
	rows := only(permits(3, "P-"), cols[1:])
	for i, r := range rows {
		r["valuation"] = fmt.Sprint(i)
	}
	rel = mustPublish(t, em, rows, WithSchema(cols[1:], []string{"valuation"}), SkipReview())
	if rel.SchemaVersion != "3.0" || rel.ResyncReason != "key_columns_changed" {
		t.Fatalf("next major = %+v, want 3.0", rel)
	}
	var list struct {
		Schemas []struct {
			SchemaVersion string `json:"schemaVersion"`
		} `json:"schemas"`
	}
	mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/schemas", &list)
	if len(list.Schemas) != 2 || list.Schemas[0].SchemaVersion != "1.0" || list.Schemas[1].SchemaVersion != "3.0" {
		t.Fatalf("schemas = %+v", list)
	}
}

// Docs (feed-events.txt): "record_ids_changed: ... The version's files
// include an id map from each id you hold to the one it carries now. It can
// change a few ids or all of them." It wins over every other reason.
func TestEmulator_ReplaceIDs(t *testing.T) {
	em := mustEmulator(t)
	ctx := context.Background()
	sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
	mustPublish(t, em, permits(4, "P-"))
	rel, err := em.ReplaceIDs(ctx, dsPermits, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if rel.ResyncReason != "record_ids_changed" || rel.Held || rel.RowCount != 4 {
		t.Fatalf("release = %+v", rel)
	}
	if got := eventTypes(allEvents(t, em, sub)[2:]); got != "resync_required(record_ids_changed)" {
		t.Fatalf("events = %s", got)
	}
	var v versionBody
	apiGet(t, em, "/v1/feeds/datasets/"+dsPermits+"/versions/2", &v)
	if v.Files.IDMap == nil || v.Files.Changes != nil || !v.ResyncRequired {
		t.Fatalf("version = %+v", v)
	}
	path, _ := em.IDMapFile(ctx, dsPermits, 2)
	got := queryRows(t, testDB(t), "SELECT from_id, to_id FROM read_parquet('"+path+"') ORDER BY 1")
	want := []string{"rec_d1_1|rec_d1_5", "rec_d1_2|rec_d1_6", "rec_d1_3|rec_d1_3", "rec_d1_4|rec_d1_4"}
	if !slices.Equal(got, want) {
		t.Fatalf("id map = %v, want %v", got, want)
	}
	st, body := download(t, v.Files.IDMap.URL)
	if st != 200 || int64(len(body)) != v.Files.IDMap.Bytes {
		t.Fatalf("id map download: %d", st)
	}
}

// Docs (feed-events.txt): "After a version is released again, the dataset's
// next version sent is a resync_required, even when a newer release arrives
// before the rebuild. Its reason is previous_unavailable unless that version
// also changes the schema ... Its records are matched to what Ploti kept for
// the version released again, so a record it matches keeps its id."
func TestEmulator_ReRelease(t *testing.T) {
	for _, minor := range []bool{false, true} {
		t.Run(fmt.Sprintf("minor=%v", minor), func(t *testing.T) {
			em := mustEmulator(t)
			sub := mustSub(t, em, SubscriptionSpec{Places: []string{"fl-orange"}})
			mustPublish(t, em, permits(10, "A-"))
			m1 := Cursor(sub, 2)
			mustPublish(t, em, append(permits(10, "A-"), permits(3, "B-")...)) // B-* get rec_d1_21..23
			if err := em.ReRelease(dsPermits, 1); err != nil {
				t.Fatal(err)
			}
			rows := append(permits(10, "A-"), permits(1, "B-")...)
			var opts []PublishOption
			want := "previous_unavailable"
			if minor {
				cols := append(permitColumns(), Column{Name: "units", Type: "integer"})
				opts = append(opts, WithSchema(cols, []string{"permit_number"}))
				want = "schema_changed"
			}
			rel := mustPublish(t, em, rows, opts...)
			if rel.ResyncReason != want || *rel.PreviousVersion != 2 || rel.Held {
				t.Fatalf("release = %+v, want %s", rel, want)
			}
			// B-0 was not in v1, so it does not keep v2's id: it gets 23 + 11.
			snap, _ := em.SnapshotFiles(context.Background(), dsPermits, 3)
			got := queryRows(t, testDB(t), "SELECT permit_number, _ploti_record_id FROM "+parquetList(snap)+" WHERE permit_number IN ('A-0', 'B-0') ORDER BY 1")
			if w := []string{"A-0|rec_d1_1", "B-0|rec_d1_34"}; !slices.Equal(got, w) {
				t.Fatalf("ids = %v, want %v", got, w)
			}
			// asOf reaching a version released again answers 410.
			if st := apiGet(t, em, "/v1/feeds/subscriptions/"+sub+"/manifest?asOf="+m1, nil); st != 410 {
				t.Fatalf("asOf: %d, want 410", st)
			}
			// Only the next version is a resync.
			if rel := mustPublish(t, em, rows, opts...); rel.ResyncRequired {
				t.Fatalf("version after = %+v", rel)
			}
			if !strings.Contains(eventTypes(allEvents(t, em, sub)), "resync_required("+want+")") {
				t.Fatalf("events lack the resync")
			}
		})
	}
}
