package replica

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Reads through ReadOnly() while syncs run see whole versions only: the
// registry's version and the table's rows of one query, or of one
// transaction, always agree.
func TestReadOnly_seesWholeVersionsDuringSync(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	table := datasetRow(t, r, "ds_permits").Table
	ro := r.ReadOnly()
	var stop atomic.Bool
	reads := make(chan error, 1)
	var seen atomic.Int64
	go func() {
		defer close(reads)
		for !stop.Load() {
			tx, err := ro.BeginTx(ctx, nil)
			if err != nil {
				reads <- err
				return
			}
			s, err := readPermits(ctx, tx, table)
			tx.Rollback()
			if err != nil {
				reads <- err
				return
			}
			if !s.whole() {
				reads <- fmt.Errorf("a read saw part of a version: %+v", s)
				return
			}
			seen.Add(1)
		}
	}()
	for v := 2; v <= 6; v++ {
		_, err := em.Publish(ctx, "ds_permits", permits(v))
		must(t, err)
		mustSync(t, r)
	}
	stop.Store(true)
	if err := <-reads; err != nil {
		t.Fatal(err)
	}
	if seen.Load() == 0 {
		t.Fatal("no read ran during the syncs")
	}
	if s, err := readPermits(ctx, ro, table); err != nil || s.version != 6 || !s.whole() {
		t.Fatalf("after the syncs ReadOnly() reads %+v (%v), want version 6 whole", s, err)
	}
}

// A transaction begun on ReadOnly() reads one snapshot: a sync that
// commits a new version meanwhile is not seen in it, and is after it.
func TestReadOnly_transactionReadsOneSnapshot(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	table := datasetRow(t, r, "ds_permits").Table
	ro := r.ReadOnly()
	tx, err := ro.BeginTx(ctx, nil)
	must(t, err)
	before, err := readPermits(ctx, tx, table)
	must(t, err)
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	synced := make(chan error, 1)
	go func() { _, err := r.Sync(ctx); synced <- err }()
	select { // a PostgreSQL reload would wait for the transaction's lock on the table
	case err := <-synced:
		must(t, err)
		synced <- nil
	case <-time.After(5 * time.Second):
	}
	during, err := readPermits(ctx, tx, table)
	must(t, err)
	must(t, tx.Commit())
	must(t, <-synced)
	if during != before || before.version != 1 {
		t.Fatalf("one transaction read %+v, then %+v after a sync committed", before, during)
	}
	if after, err := readPermits(ctx, ro, table); err != nil || after.version != 2 || !after.whole() {
		t.Fatalf("after the transaction ReadOnly() reads %+v (%v), want version 2 whole", after, err)
	}
}

// A Reader opened with Marks can write through DB(), not through
// ReadOnly().
func TestReadOnly_readerWithMarks(t *testing.T) {
	onlyInAFile(t, "marks")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	path := filepath.Join(t.TempDir(), "r.duckdb")
	r := mustOpen(t, em, sub, path)
	mustSync(t, r)
	must(t, r.Close())
	rd, err := OpenReader(ctx, path, ReaderOptions{Marks: true})
	must(t, err)
	defer rd.Close()
	if _, err := rd.ReadOnly().ExecContext(ctx, "CREATE TABLE ro_x (a int)"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("CREATE through a marks Reader's ReadOnly(): %v, want ErrReadOnly", err)
	}
	var n int
	if err := rd.ReadOnly().QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'ro_x'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("ro_x made: %d (%v)", n, err)
	}
}
