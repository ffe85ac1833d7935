package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// A page's bookkeeping is held in the batch and written once, at
// Flush. A page applied in one batch must end exactly where the same
// events applied one batch each end.
func TestBatch_OnePageEqualsOneBatchPerEvent(t *testing.T) {
	at := time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC)
	next := at.Add(24 * time.Hour)
	evs := []ploti.Event{
		feedEvent(ploti.EventStale, "ds_a", nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &at, &next }),
		feedEvent(ploti.EventDelayed, "ds_a", ploti.Int(4), func(d *ploti.EventData) { d.Reason, d.Since = ploti.DelayDataCheck, &at }),
		feedEvent(ploti.EventStale, "ds_b", nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &at, &next }),
		feedEvent(ploti.EventAdded, "ds_c", nil),
		feedEvent(ploti.EventRemoved, "ds_b", nil, func(d *ploti.EventData) { d.Reason = ploti.RemovedPlanChanged }),
		feedEvent(ploti.EventStale, "ds_b", nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &at, &next }),
		feedEvent(ploti.EventDelayed, "ds_c", ploti.Int(1), func(d *ploti.EventData) { d.Reason, d.Since = ploti.DelayProcessing, &at }),
		feedEvent(ploti.EventUpdated, "ds_a", ploti.Int(2), func(d *ploti.EventData) { d.PreviousVersion = ploti.Int(1) }),
		feedEvent(ploti.EventStale, "ds_a", nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &next, &next }),
	}
	for i := range evs {
		evs[i].ID = fmt.Sprintf("evt_%03d", i+1)
		evs[i].Timestamp = at
	}
	ctx := context.Background()
	apply := func(t *testing.T, perEvent bool) (string, *storage.DB) {
		db := seedRegistry(t, at)
		x := &Executor{DB: db}
		b := NewBatch(db)
		for _, e := range evs {
			if _, err := x.Apply(ctx, b, e); err != nil {
				t.Fatalf("apply %s: %v", e.ID, err)
			}
			if perEvent {
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		return dump(t, db), db
	}
	one, db := apply(t, false)
	each, _ := apply(t, true)
	if one != each {
		t.Fatalf("one batch for the page:\n%s\none batch per event:\n%s", one, each)
	}
	// And the page's writes did land.
	holds, err := db.Holds(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(len(holds)), "2"; got != want {
		t.Fatalf("%s holds after the page, want %s: %+v", got, want, holds)
	}
	for id, want := range map[string]string{"ds_a": storage.StatusCurrent, "ds_b": storage.StatusRemoved, "ds_c": storage.StatusPending} {
		d, err := db.Dataset(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != want {
			t.Fatalf("%s is %s, want %s", id, d.Status, want)
		}
	}
	if !strings.Contains(one, `"evt_009"`) {
		t.Fatalf("the page's events are not all recorded as applied:\n%s", one)
	}
}

func feedEvent(typ, datasetID string, version *int, mod ...func(*ploti.EventData)) ploti.Event {
	e := ploti.Event{Type: typ, Data: ploti.EventData{DatasetID: datasetID, Version: version}}
	for _, m := range mod {
		m(&e.Data)
	}
	return e
}

// seedRegistry opens a fresh file holding ds_a and ds_b at version 3.
func seedRegistry(t *testing.T, at time.Time) *storage.DB {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, filepath.Join(t.TempDir(), "r.duckdb"), storage.Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	err = db.Update(ctx, func(tx *storage.Tx) error {
		for _, id := range []string{"ds_a", "ds_b"} {
			if err := tx.PutDataset(ctx, &storage.Dataset{ID: id, Version: 3, Status: storage.StatusCurrent, KeyColumns: []string{"k"},
				Columns: []ploti.Column{{Name: "k", Type: ploti.Type{Type: ploti.TypeString}}}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// dump renders the registry, the holds and the applied event ids.
func dump(t *testing.T, db *storage.DB) string {
	t.Helper()
	ctx := context.Background()
	ds, err := db.Datasets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	holds, err := db.Holds(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	rows, err := db.SQL().QueryContext(ctx, "SELECT event_id FROM _ploti.applied_events ORDER BY event_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, id)
	}
	b, err := json.MarshalIndent(map[string]any{"datasets": ds, "holds": holds, "applied": applied}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The batch's cache outlives the commit before a heavy action. The
// events after it must still be recorded, and the loaded dataset read again.
func TestBatch_HeavyActionInThePage(t *testing.T) {
	at := time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	evs := []ploti.Event{
		feedEvent(ploti.EventStale, "ds_a", nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &at, &at }),
		feedEvent(ploti.EventResyncRequired, "ds_b", ploti.Int(4), func(d *ploti.EventData) { d.Reason = ploti.ReasonPreviousUnavailable }),
		feedEvent(ploti.EventStale, "ds_b", nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &at, &at }),
		feedEvent(ploti.EventUpdated, "ds_b", ploti.Int(3), func(d *ploti.EventData) { d.PreviousVersion = ploti.Int(2) }),
		feedEvent(ploti.EventResyncRequired, "ds_a", ploti.Int(5), func(d *ploti.EventData) { d.Reason = ploti.ReasonPreviousUnavailable }),
		// The last: a skip after a heavy action, with nothing after it that
		// opens a transaction.
		feedEvent(ploti.EventUpdated, "ds_b", ploti.Int(2), func(d *ploti.EventData) { d.PreviousVersion = ploti.Int(1) }),
	}
	for i := range evs {
		evs[i].ID = fmt.Sprintf("evt_%03d", i+1)
		evs[i].Timestamp = at
	}
	run := func(perEvent bool) (string, *storage.DB) {
		db := seedRegistry(t, at)
		snap := filepath.Join(t.TempDir(), "snapshot.parquet")
		if _, err := db.SQL().ExecContext(ctx, `COPY (SELECT 'rec_' || i AS _ploti_record_id, 'p' AS _ploti_place_id, 'k' || i AS k
			FROM range(10) t(i)) TO `+storage.Literal(snap)+` (FORMAT parquet)`); err != nil {
			t.Fatal(err)
		}
		x := &Executor{DB: db, Source: &fileSource{path: snap, schema: &ploti.Schema{SchemaVersion: "1.0",
			Columns: []ploti.Column{{Name: "k", Type: ploti.Type{Type: ploti.TypeString}}}}}}
		b := NewBatch(db)
		defer b.Abort()
		for _, e := range evs {
			if _, err := x.Apply(ctx, b, e); err != nil {
				t.Fatalf("apply %s: %v", e.ID, err)
			}
			if perEvent {
				if err := b.Flush(); err != nil {
					t.Fatal(err)
				}
				b = NewBatch(db)
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		return dump(t, db), db
	}
	one, db := run(false)
	each, _ := run(true)
	if one != each {
		t.Fatalf("one batch for the page:\n%s\none batch per event:\n%s", one, each)
	}
	for _, id := range []string{"evt_001", "evt_002", "evt_003", "evt_004", "evt_005", "evt_006"} {
		if ok, err := db.IsApplied(ctx, id); err != nil || !ok {
			t.Fatalf("%s not recorded as applied (err %v):\n%s", id, err, one)
		}
	}
	d, err := db.Dataset(ctx, "ds_b")
	if err != nil {
		t.Fatal(err)
	}
	if d.Version != 4 || d.StaleLastCheckedAt == nil {
		t.Fatalf("ds_b after the page: version %d, stale check %v; want version 4 and the stale check after the load", d.Version, d.StaleLastCheckedAt)
	}
}

// "nothing scans all tables per event or per page". A batch
// scoped to a page's datasets reads their registry rows and holds only,
// and any other dataset's when an event asks for it, and ends exactly
// where a batch that reads the whole registry ends. ds_b's row is made
// unreadable while the scoped page runs: a batch that read it would fail.
func TestBatch_ScopeReadsThePagesDatasetsOnly(t *testing.T) {
	at := time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC)
	next := at.Add(24 * time.Hour)
	ctx := context.Background()
	stale := func(id string) ploti.Event {
		return feedEvent(ploti.EventStale, id, nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &at, &next })
	}
	setup := []ploti.Event{
		feedEvent(ploti.EventAdded, "ds_c", nil),
		feedEvent(ploti.EventDelayed, "ds_c", ploti.Int(1), func(d *ploti.EventData) { d.Reason, d.Since = ploti.DelayProcessing, &at }),
	}
	// The page is scoped to ds_a; ds_c, outside it, is read when asked,
	// with its hold.
	page := []ploti.Event{
		stale("ds_a"),
		feedEvent(ploti.EventDelayed, "ds_a", ploti.Int(4), func(d *ploti.EventData) { d.Reason, d.Since = ploti.DelayDataCheck, &at }),
		stale("ds_c"),
		feedEvent(ploti.EventDelayed, "ds_c", ploti.Int(2), func(d *ploti.EventData) { d.Reason, d.Since = ploti.DelayDataCheck, &at }),
	}
	for i := range setup {
		setup[i].ID, setup[i].Timestamp = fmt.Sprintf("evt_s%d", i), at
	}
	for i := range page {
		page[i].ID, page[i].Timestamp = fmt.Sprintf("evt_p%d", i), at
	}
	applyAll := func(b *Batch, x *Executor, evs []ploti.Event) error {
		for _, e := range evs {
			if _, err := x.Apply(ctx, b, e); err != nil {
				b.Abort()
				return fmt.Errorf("apply %s: %w", e.ID, err)
			}
		}
		return b.Flush()
	}
	exec := func(db *storage.DB, q string, args ...any) {
		t.Helper()
		if _, err := db.SQL().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	run := func(scoped bool) string {
		db := seedRegistry(t, at)
		x := &Executor{DB: db}
		if err := applyAll(NewBatch(db), x, setup); err != nil {
			t.Fatal(err)
		}
		b := NewBatch(db)
		var cols string
		if scoped {
			if err := db.SQL().QueryRowContext(ctx, "SELECT columns::VARCHAR FROM _ploti.datasets WHERE dataset_id = 'ds_b'").Scan(&cols); err != nil {
				t.Fatal(err)
			}
			exec(db, `UPDATE _ploti.datasets SET columns = '{"not": "a list"}' WHERE dataset_id = 'ds_b'`)
			// The device works: a batch that reads the whole registry fails.
			if err := applyAll(NewBatch(db), x, page[:1]); err == nil || !strings.Contains(err.Error(), "ds_b") {
				t.Fatalf("an unscoped batch with ds_b's row unreadable: %v, want an error naming ds_b", err)
			}
			b.Scope([]string{"ds_a"})
		}
		if err := applyAll(b, x, page); err != nil {
			t.Fatalf("scoped=%v: %v", scoped, err)
		}
		if scoped {
			exec(db, "UPDATE _ploti.datasets SET columns = ? WHERE dataset_id = 'ds_b'", cols)
		}
		return dump(t, db)
	}
	scoped, whole := run(true), run(false)
	if scoped != whole {
		t.Fatalf("a batch scoped to ds_a:\n%s\none that reads the whole registry:\n%s", scoped, whole)
	}
	for _, want := range []string{`"evt_p3"`, `data_check`} {
		if !strings.Contains(scoped, want) {
			t.Fatalf("the page did not land (%s missing):\n%s", want, scoped)
		}
	}
}

// A page's rows whose title, schema and the like did not change
// have their states written alone (storage.PutDatasetStates). What the
// batch takes for "as the registry holds it" must follow every write: a
// title a page gives, and the old title given back on the next page, in
// the same batch (its cache outlives the commit), both land.
func TestBatch_WritesTheDescriptionsItChangesAcrossPages(t *testing.T) {
	at := time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	db := seedRegistry(t, at)
	ids := []string{"ds_a", "ds_b", "ds_c", "ds_d"} // states go alone for two rows or more
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		return tx.PutDatasets(ctx, []*storage.Dataset{{ID: "ds_c", Table: "ds_c", Version: 1, Status: storage.StatusCurrent},
			{ID: "ds_d", Table: "ds_d", Version: 1, Status: storage.StatusCurrent}})
	}); err != nil {
		t.Fatal(err)
	}
	x := &Executor{DB: db}
	b := NewBatch(db)
	defer b.Abort()
	page := func(n int, titles map[string]string) {
		t.Helper()
		for _, id := range ids {
			checked := at.Add(time.Duration(n) * time.Hour)
			e := feedEvent(ploti.EventStale, id, nil, func(d *ploti.EventData) { d.LastCheckedAt, d.NextCheckBy = &checked, &checked })
			e.ID, e.Timestamp = fmt.Sprintf("evt_%d_%s", n, id), at
			if _, err := x.Apply(ctx, b, e); err != nil {
				t.Fatal(err)
			}
		}
		for id, title := range titles {
			b.Describe(&ploti.Dataset{ID: id, Title: title})
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			d, err := db.Dataset(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			want := at.Add(time.Duration(n) * time.Hour)
			if d.StaleLastCheckedAt == nil || !d.StaleLastCheckedAt.Equal(want) {
				t.Fatalf("page %d: %s's stale check %v, want %v", n, id, d.StaleLastCheckedAt, want)
			}
			if title, ok := titles[id]; ok && d.Title != title {
				t.Fatalf("page %d: %s's title %q, want %q", n, id, d.Title, title)
			}
		}
	}
	page(1, nil)
	page(2, map[string]string{"ds_a": "Permits"})
	page(3, nil)
	page(4, map[string]string{"ds_a": "", "ds_b": "Parcels"})
	page(5, map[string]string{"ds_a": ""})
	if d, _ := db.Dataset(ctx, "ds_b"); d == nil || d.Title != "Parcels" || len(d.Columns) != 1 {
		t.Fatalf("ds_b after five pages: %+v", d)
	}
}
