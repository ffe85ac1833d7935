package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// RunRows checks a sync's _ploti.sync_runs row on db, on any engine: the
// start writes nothing of its own; the first of the sync's transactions
// to commit writes the row (one a rollback undid does not, nor one that
// is not the sync's); the end finishes that row, in a transaction or
// after it, and a sync that committed nothing gets its whole row at its
// end. A transaction of an earlier sync committing late does not lend its
// row to the next.
func RunRows(t *testing.T, db *storage.DB) {
	t.Helper()
	runs := runTable{t: t, db: db}
	runs.committedNothing()
	runs.committed()
	runs.lateTransaction()
}

// runTable reads _ploti.sync_runs for RunRows.
type runTable struct {
	t  *testing.T
	db *storage.DB
}

// runCounts is what runTable.read reads: the rows, the finished ones, and
// the greatest result.
type runCounts struct {
	n, finished int
	result      string
}

func (r runTable) read() runCounts {
	r.t.Helper()
	var c runCounts
	if err := r.db.SQL().QueryRowContext(context.Background(), `SELECT count(*), count(finished_at), coalesce(max(result), '')
		FROM _ploti.sync_runs`).Scan(&c.n, &c.finished, &c.result); err != nil {
		r.t.Fatal(err)
	}
	return c
}

// committedNothing: a sync that commits nothing gets its whole row at its end.
func (r runTable) committedNothing() {
	r.t.Helper()
	ctx := r.db.StartRun(context.Background(), "")
	if got := r.read(); got.n != 0 {
		r.t.Fatalf("the start wrote a row of its own: %+v", got)
	}
	if err := r.db.FinishRun(ctx, storage.Run{Result: "ok"}); err != nil {
		r.t.Fatal(err)
	}
	if got := r.read(); got != (runCounts{1, 1, "ok"}) {
		r.t.Fatalf("after a sync that committed nothing: %+v, want one finished row", got)
	}
}

// committed: a sync whose first transaction rolls back, whose second
// commits, and whose end is recorded in its last one and again after it.
func (r runTable) committed() {
	r.t.Helper()
	ctx := r.db.StartRun(context.Background(), "c1")
	put := func(tx *storage.Tx) error {
		return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a", Table: "a", Status: storage.StatusCurrent})
	}
	// A caller's transaction while the sync runs is not the sync's.
	if err := r.db.Update(context.Background(), put); err != nil {
		r.t.Fatal(err)
	}
	if got := r.read(); got.n != 1 {
		r.t.Fatalf("a transaction that is not the sync's wrote its row: %+v", got)
	}
	refused := errors.New("refused")
	if err := r.db.Update(ctx, func(tx *storage.Tx) error { return refused }); !errors.Is(err, refused) {
		r.t.Fatal(err)
	}
	if got := r.read(); got.n != 1 {
		r.t.Fatalf("a transaction rolled back left the run's row: %+v", got)
	}
	for range 2 {
		if err := r.db.Update(ctx, put); err != nil {
			r.t.Fatal(err)
		}
		if got := r.read(); got.n != 2 || got.finished != 1 {
			r.t.Fatalf("after the sync's commits: %+v, want its row once, unfinished", got)
		}
	}
	if err := r.db.Update(ctx, func(tx *storage.Tx) error {
		return tx.FinishRun(ctx, storage.Run{Result: "partial", CursorTo: "c2"})
	}); err != nil {
		r.t.Fatal(err)
	}
	if got := r.read(); got != (runCounts{2, 2, "partial"}) {
		r.t.Fatalf("after the sync's end in its last transaction: %+v, want two finished rows", got)
	}
	// Recorded again after the walk (the watches ran after it).
	if err := r.db.FinishRun(ctx, storage.Run{Result: "ok", CursorTo: "c2"}); err != nil {
		r.t.Fatal(err)
	}
	last, err := r.db.LastRun(ctx)
	if got := r.read(); err != nil || got.n != 2 || last == nil || last.Result != "ok" || last.CursorFrom != "c1" || last.CursorTo != "c2" {
		r.t.Fatalf("after the sync's end recorded again: %+v; LastRun %+v, %v", got, last, err)
	}
}

// lateTransaction: a transaction of a sync that began before its first
// commit and commits after the next sync started.
func (r runTable) lateTransaction() {
	r.t.Helper()
	before := r.read()
	early := r.db.StartRun(context.Background(), "s1")
	tx, err := r.db.Begin(early)
	if err != nil {
		r.t.Fatal(err)
	}
	next := r.db.StartRun(context.Background(), "s2")
	if err := tx.Commit(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.db.FinishRun(early, storage.Run{Result: "ok"}); err == nil {
		r.t.Fatal("the earlier sync's end was recorded after the next sync started")
	}
	if err := r.db.FinishRun(next, storage.Run{Result: "ok"}); err != nil {
		r.t.Fatal(err)
	}
	last, err := r.db.LastRun(context.Background())
	if got := r.read(); err != nil || got.n != before.n+2 || got.finished != before.finished+1 || last == nil || last.CursorFrom != "s2" {
		r.t.Fatalf("after an earlier sync's late commit: %+v (before %+v); LastRun %+v, %v", got, before, last, err)
	}
}
