package duckdb

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// A file this process wrote and closed is not read whole again at its
// next open here, unless something changed it since: damage done after
// the close is found.
func TestOpen_readsAFileChangedSinceItsCloseAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.duckdb")
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE t AS SELECT i, md5(i::VARCHAR) AS s FROM range(100000) r(i)"); err != nil {
		t.Fatal(err)
	}
	var block int64
	if err := db.SQL().QueryRowContext(ctx, "CHECKPOINT; SELECT max(block_id) FROM pragma_storage_info('t') WHERE block_id >= 0").Scan(&block); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatalf("reopen the file as this process left it: %v", err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 256)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	if _, err := f.WriteAt(junk, 3*4096+block*(256<<10)+1000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, ro := range []bool{true, false} {
		_, err = Open(ctx, path, storage.Options{ReadOnly: ro})
		if !errors.Is(err, storage.ErrDamaged) || !strings.Contains(err.Error(), path) {
			t.Fatalf("open (read-only %v) after the damage: %v, want storage.ErrDamaged naming the file", ro, err)
		}
	}
}
