package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// A damaged file: bytes overwritten in a copy of a replica
// file, in a table's blocks or its header, the file cut short, or a
// write-ahead log beside it that is not this file's state: every command
// fails with an error that names the file and says how to rebuild it,
// never a panic or a hang, never a success over garbage; sync writes
// nothing into a file it cannot read back whole.

// duckHeaders is where DuckDB's blocks begin: the main header and two
// database headers of 4 KiB each; blocks are 256 KiB.
const (
	duckHeaders   = 3 * 4096
	duckBlockSize = 256 << 10
)

// tableBlock is the file offset of a block that holds a dataset table's
// column data.
func tableBlock(t *testing.T, path string) (int64, string) {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds, err := db.Datasets(ctx)
	if err != nil || len(ds) == 0 {
		t.Fatalf("datasets: %v %v", ds, err)
	}
	for _, d := range ds {
		var block int64
		err := db.SQL().QueryRowContext(ctx, `SELECT block_id FROM pragma_storage_info(`+storage.Literal(d.Table)+`)
			WHERE block_id >= 0 AND segment_type <> 'VALIDITY' ORDER BY count DESC, block_id LIMIT 1`).Scan(&block)
		if err == nil {
			return duckHeaders + block*duckBlockSize, d.Table
		}
	}
	t.Fatal("no table block found")
	return 0, ""
}

func overwrite(t *testing.T, path string, at int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Bytes that do not repeat: DuckDB's block checksum XORs a hash of
	// each 8-byte word, so a run of words that pairs up cancels out.
	junk := make([]byte, n)
	rng := rand.New(rand.NewPCG(15, uint64(at)))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	if _, err := f.WriteAt(junk, at); err != nil {
		t.Fatal(err)
	}
}

func digest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// walOf makes a write-ahead log of the file at src's state: a copy opened
// for writing, a change committed to the log and not checkpointed, the
// log copied out before the copy closes.
func walOf(t *testing.T, src, change string) []byte {
	t.Helper()
	ctx := context.Background()
	tmp := filepath.Join(t.TempDir(), "w.duckdb")
	copyFile(t, src, tmp)
	db, err := backends.Open(ctx, tmp, storage.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.SQL().ExecContext(ctx, "SET checkpoint_threshold = '10GB'"); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error { _, err := tx.Exec(ctx, change); return err }); err != nil {
		t.Fatalf("%s: %v", change, err)
	}
	b, err := os.ReadFile(tmp + ".wal")
	if err != nil {
		t.Fatalf("no write-ahead log: %v", err)
	}
	return b
}

// runBounded runs a command in-process, failing the test on a hang.
func runBounded(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- res{-1, "", fmt.Sprintf("panic: %v", p)}
			}
		}()
		c, o, e := cli(t, vars, args...)
		done <- res{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(2 * time.Minute):
		t.Fatalf("%v hangs on a damaged file", args)
		return 0, "", ""
	}
}

func TestDamagedFile(t *testing.T) {
	_, _, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	good := vars["PLOTI_DB"]
	block, table := tableBlock(t, good)
	// A log of the file's own past: committed over the state the file had
	// then, which a later checkpoint has moved past.
	staleWAL := walOf(t, good, "DELETE FROM main."+storage.Ident(table)+" WHERE rowid % 2 = 0")
	st, err := os.Stat(good)
	if err != nil {
		t.Fatal(err)
	}
	damages := []struct {
		name   string
		damage func(path string)
	}{
		{"bytes overwritten in a block of " + table, func(p string) { overwrite(t, p, block+4096, 512) }},
		{"bytes overwritten in the database header", func(p string) { overwrite(t, p, 4096+8, 64) }},
		{"the file cut short", func(p string) {
			if err := os.Truncate(p, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"a stale .wal beside it", func(p string) {
			// the file moves on (a sync checkpoints), then the old log turns up
			db, err := backends.Open(context.Background(), p, storage.Options{LockTimeout: -1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := db.Update(ctx, func(tx *storage.Tx) error {
				_, err := tx.Exec(ctx, "UPDATE _ploti.subscription SET cursor = cursor")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := db.Engine().(storage.Checkpointer).Checkpoint(context.Background()); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if err := os.WriteFile(p+".wal", staleWAL, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	commands := [][]string{{"status"}, {"holds", "list"}, {"sync"}, {"status", "--json"}}
	for _, dm := range damages {
		t.Run(dm.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "damaged.duckdb")
			copyFile(t, good, path)
			dm.damage(path)
			v := map[string]string{}
			for k, val := range vars {
				v[k] = val
			}
			v["PLOTI_DB"] = path
			before := digest(t, path)
			for _, args := range commands {
				code, out, errs := runBounded(t, v, args...)
				switch {
				case strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine "):
					t.Fatalf("%v panicked:\n%s", args, errs)
				case code == exitOK:
					t.Fatalf("%v succeeded on a damaged file:\n%s%s", args, out, errs)
				case !strings.Contains(errs, "open "+path+": ") || !strings.Contains(errs, "ploti-replica sync --db "+path+"`"):
					t.Fatalf("%v: exit %d; the error should name %s and say how to rebuild it:\n%s", args, code, path, errs)
				}
				if after := digest(t, path); after != before {
					t.Fatalf("%v wrote into the damaged file", args)
				}
			}
			_, _, errs := runBounded(t, v, "sync")
			t.Logf("sync says: %s", lastLine(errs))
		})
	}
}
