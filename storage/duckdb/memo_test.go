package duckdb

import (
	"context"
	"reflect"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// memoFile is a file of one registry row for the Memo tests: put writes
// its title in a transaction; behind writes it past the registry's
// statements (straight through SQL(), which nothing in the engine does),
// so that a read shows whether it read the table or the kept list; title
// reads it through Datasets or DatasetStates.
type memoFile struct {
	t  *testing.T
	db *storage.DB
}

func newMemoFile(t *testing.T) memoFile {
	f := memoFile{t: t, db: mustOpen(t)}
	f.put("A")
	return f
}

func (f memoFile) put(title string) {
	f.t.Helper()
	ctx := context.Background()
	if err := f.db.Update(ctx, func(tx *storage.Tx) error {
		return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a", Table: "ds_a", Title: title, Status: storage.StatusPending, Source: storage.SourceFeed,
			Columns: testCols, KeyColumns: []string{"permit"}})
	}); err != nil {
		f.t.Fatal(err)
	}
}

func (f memoFile) behind(title string) {
	f.t.Helper()
	if _, err := f.db.SQL().Exec("UPDATE _ploti.datasets SET title = ?", title); err != nil {
		f.t.Fatal(err)
	}
}

func (f memoFile) title(states bool) string {
	f.t.Helper()
	read := f.db.Datasets
	if states {
		read = f.db.DatasetStates
	}
	ds, err := read(context.Background())
	if err != nil || len(ds) != 1 {
		f.t.Fatalf("read: %v, %d rows", err, len(ds))
	}
	if states != (len(ds[0].Columns) == 0) {
		f.t.Fatalf("states %v: %d columns", states, len(ds[0].Columns))
	}
	return ds[0].Title
}

// Within a Memo scope the registry's list is read once until a
// transaction begins or ends; outside one every read reads.
func TestDB_Memo_readsTheListOnceBetweenTransactions(t *testing.T) {
	ctx := context.Background()
	f := newMemoFile(t)
	f.behind("B")
	if got := f.title(false); got != "B" {
		t.Fatalf("outside a scope: %q, want every read to read", got)
	}
	end := f.db.Memo()
	if got := f.title(true); got != "B" { // read whole, kept
		t.Fatalf("first read in the scope: %q", got)
	}
	f.behind("C")
	if got, got2 := f.title(false), f.title(true); got != "B" || got2 != "B" {
		t.Fatalf("in the scope, nothing begun: %q and %q, want the kept B", got, got2)
	}
	// A caller's change to its rows is its own.
	ds, _ := f.db.Datasets(ctx)
	ds[0].Title, ds[0].Columns[0].Name, ds[0].KeyColumns[0] = "mine", "mine", "mine"
	again, _ := f.db.Datasets(ctx)
	if again[0].Title != "B" || again[0].Columns[0].Name == "mine" || again[0].KeyColumns[0] != "permit" {
		t.Fatalf("a caller's change reached the kept list: %+v", again[0])
	}
	f.put("D") // a transaction: what was kept is gone
	if got := f.title(false); got != "D" {
		t.Fatalf("after a commit: %q, want D", got)
	}
	tx, err := f.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.behind("E") // while a transaction is open: read, and not kept past its end
	if got := f.title(false); got != "E" {
		t.Fatalf("after a begin: %q, want E", got)
	}
	f.behind("F")
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := f.title(false); got != "F" {
		t.Fatalf("after a rollback: %q, want F", got)
	}
	end()
	end() // a second end does nothing
	f.behind("G")
	if got := f.title(false); got != "G" {
		t.Fatalf("after the scope: %q, want every read to read", got)
	}
}

// Nested scopes keep the list until the outer one ends, and DatasetStates
// in a scope gives what it gives outside one.
func TestDB_Memo_scopesNest(t *testing.T) {
	ctx := context.Background()
	f := newMemoFile(t)
	outer, inner := f.db.Memo(), f.db.Memo()
	f.title(false)
	inner()
	f.behind("H")
	if got := f.title(false); got != "A" {
		t.Fatalf("in the outer scope: %q, want the kept A", got)
	}
	outer()
	if got := f.title(false); got != "H" {
		t.Fatalf("after both scopes: %q, want H", got)
	}
	plain, _ := f.db.DatasetStates(ctx)
	end := f.db.Memo()
	defer end()
	kept, _ := f.db.DatasetStates(ctx)
	if !reflect.DeepEqual(plain, kept) {
		t.Fatalf("DatasetStates %+v outside a scope, %+v in one", plain[0], kept[0])
	}
}
