package duckdb

import (
	"context"
	"reflect"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// Within a Memo scope the registry's list is read once until a
// transaction begins or ends. A title written past the registry's
// statements (straight through SQL(), which nothing in the engine does)
// shows what was read again and what was not.
func TestDB_Memo_readsTheListOnceBetweenTransactions(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	put := func(title string) {
		t.Helper()
		if err := db.Update(ctx, func(tx *storage.Tx) error {
			return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a", Table: "ds_a", Title: title, Status: storage.StatusPending, Source: storage.SourceFeed,
				Columns: testCols, KeyColumns: []string{"permit"}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	behind := func(title string) {
		t.Helper()
		if _, err := db.SQL().Exec("UPDATE _ploti.datasets SET title = ?", title); err != nil {
			t.Fatal(err)
		}
	}
	title := func(states bool) string {
		t.Helper()
		read := db.Datasets
		if states {
			read = db.DatasetStates
		}
		ds, err := read(ctx)
		if err != nil || len(ds) != 1 {
			t.Fatalf("read: %v, %d rows", err, len(ds))
		}
		if states != (len(ds[0].Columns) == 0) {
			t.Fatalf("states %v: %d columns", states, len(ds[0].Columns))
		}
		return ds[0].Title
	}
	put("A")
	behind("B")
	if got := title(false); got != "B" {
		t.Fatalf("outside a scope: %q, want every read to read", got)
	}
	end := db.Memo()
	if got := title(true); got != "B" { // read whole, kept
		t.Fatalf("first read in the scope: %q", got)
	}
	behind("C")
	if got, got2 := title(false), title(true); got != "B" || got2 != "B" {
		t.Fatalf("in the scope, nothing begun: %q and %q, want the kept B", got, got2)
	}
	// A caller's change to its rows is its own.
	ds, _ := db.Datasets(ctx)
	ds[0].Title, ds[0].Columns[0].Name, ds[0].KeyColumns[0] = "mine", "mine", "mine"
	again, _ := db.Datasets(ctx)
	if again[0].Title != "B" || again[0].Columns[0].Name == "mine" || again[0].KeyColumns[0] != "permit" {
		t.Fatalf("a caller's change reached the kept list: %+v", again[0])
	}
	put("D") // a transaction: what was kept is gone
	if got := title(false); got != "D" {
		t.Fatalf("after a commit: %q, want D", got)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	behind("E") // while a transaction is open: read, not kept past its end
	if got := title(false); got != "E" {
		t.Fatalf("after a begin: %q, want E", got)
	}
	behind("F")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := title(false); got != "F" {
		t.Fatalf("after a rollback: %q, want F", got)
	}
	end()
	end() // a second end does nothing
	behind("G")
	if got := title(false); got != "G" {
		t.Fatalf("after the scope: %q, want every read to read", got)
	}
	// Nested scopes keep the list until the outer one ends.
	outer, inner := db.Memo(), db.Memo()
	title(false)
	inner()
	behind("H")
	if got := title(false); got != "G" {
		t.Fatalf("in the outer scope: %q, want the kept G", got)
	}
	outer()
	if got := title(false); got != "H" {
		t.Fatalf("after both scopes: %q, want H", got)
	}
	// The states read in a scope are DatasetStates' own answer.
	plain, _ := db.DatasetStates(ctx)
	end = db.Memo()
	defer end()
	kept, _ := db.DatasetStates(ctx)
	if !reflect.DeepEqual(plain, kept) {
		t.Fatalf("DatasetStates %+v outside a scope, %+v in one", plain[0], kept[0])
	}
}
