package duckdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/internal/storagetest"
	"github.com/ploti-replica/ploti-replica/storage"
)

// A close whose checkpoint finds the disk full leaves the commits in the
// write-ahead log: the close fails in words (the disk is full, and
// where), not silently; once there is room, the next open writes the log
// into the file and the rows are there.
func TestCloseWithSummary_checkpointOnAFullDisk(t *testing.T) {
	dir := storagetest.Tmpfs(t, "24m")
	path := filepath.Join(dir, "full.duckdb")
	ctx := context.Background()
	db, err := Open(ctx, path, storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, `CREATE TABLE big AS SELECT i, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS s FROM range(100000) t(i)`); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".wal"); err != nil {
		t.Fatalf("the rows are not in the write-ahead log: %v", err)
	}
	filler := storagetest.FillDisk(t, dir)
	err = Of(db).CloseWithSummary(ctx, func(context.Context) ([]byte, error) { return []byte(`1`), nil })
	if !errors.Is(err, storage.ErrDiskFull) || !strings.Contains(err.Error(), "full.duckdb.wal") {
		t.Fatalf("close on a full disk: %v, want a disk-full error naming the write-ahead log", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path, storage.Options{Geometry: testGeometry})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.SQL().QueryRowContext(ctx, "SELECT count(*) FROM big").Scan(&n); err != nil || n != 100000 {
		t.Fatalf("rows after the reopen: %d, %v", n, err)
	}
}
