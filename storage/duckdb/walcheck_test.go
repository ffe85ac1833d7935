package duckdb

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// The hard links of a WAL check that a kill stopped midway are removed by
// the next open, those of a live process are not.
func TestOpen_removesTheLinksOfAKilledWALCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "f.duckdb")
	db, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	gone := path + ".walcheck-2147483646-7-log" // no such process
	mine := path + ".walcheck-" + strconv.Itoa(os.Getpid()) + "-7-log"
	for _, p := range []string{gone, gone + ".wal", mine} {
		if err := os.Link(path, p); err != nil {
			t.Fatal(err)
		}
	}
	db, err = Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, p := range []string{gone, gone + ".wal"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is left: %v", p, err)
		}
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("a live process's link was removed: %v", err)
	}
}
