package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// RunRows checks a sync's _ploti.sync_runs row on db, on any engine: the
// start writes nothing of its own; the first transaction to commit after
// it writes the row (one a rollback undid does not); the end finishes that
// row, in a transaction or after it, and a sync that committed nothing
// gets its whole row at its end.
func RunRows(t *testing.T, db *storage.DB) {
	t.Helper()
	ctx := context.Background()
	type row struct {
		n, finished int
		result      string
	}
	read := func() row {
		t.Helper()
		var r row
		if err := db.SQL().QueryRowContext(ctx, `SELECT count(*), count(finished_at), coalesce(max(result), '')
			FROM _ploti.sync_runs`).Scan(&r.n, &r.finished, &r.result); err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(tx *storage.Tx) error {
		return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a", Table: "a", Status: storage.StatusCurrent})
	}

	// A sync that commits nothing: its whole row at its end.
	db.StartRun("")
	if got := read(); got.n != 0 {
		t.Fatalf("the start wrote a row of its own: %+v", got)
	}
	if err := db.FinishRun(ctx, storage.Run{Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != (row{1, 1, "ok"}) {
		t.Fatalf("after a sync that committed nothing: %+v, want one finished row", got)
	}

	// A sync whose first transaction rolls back, and whose second commits.
	db.StartRun("c1")
	refused := errors.New("refused")
	if err := db.Update(ctx, func(tx *storage.Tx) error { return refused }); !errors.Is(err, refused) {
		t.Fatal(err)
	}
	if got := read(); got.n != 1 {
		t.Fatalf("a transaction rolled back left the run's row: %+v", got)
	}
	if err := db.Update(ctx, put); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.n != 2 || got.finished != 1 {
		t.Fatalf("after the sync's first commit: %+v, want its row, unfinished", got)
	}
	if err := db.Update(ctx, put); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		return tx.FinishRun(ctx, storage.Run{Result: "partial", CursorTo: "c2"})
	}); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != (row{2, 2, "partial"}) {
		t.Fatalf("after the sync's end in its last transaction: %+v, want two finished rows", got)
	}
	// Recorded again after the walk (the watches ran after it).
	if err := db.FinishRun(ctx, storage.Run{Result: "ok", CursorTo: "c2"}); err != nil {
		t.Fatal(err)
	}
	var from, to string
	if err := db.SQL().QueryRowContext(ctx, `SELECT cursor_from, cursor_to FROM _ploti.sync_runs
		WHERE run_id = (SELECT max(run_id) FROM _ploti.sync_runs)`).Scan(&from, &to); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.n != 2 || from != "c1" || to != "c2" {
		t.Fatalf("after the sync's end recorded again: %+v, cursors %q to %q", got, from, to)
	}
	last, err := db.LastRun(ctx)
	if err != nil || last == nil || last.Result != "ok" || last.CursorFrom != "c1" {
		t.Fatalf("LastRun: %+v, %v", last, err)
	}
}
