package duckdb

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// DuckDB's lock keeps other processes out, not a second open in this one:
// a second writer of the file in this process waits for the first to
// close, or is told the file is locked, as one in another process is.
func TestOpen_OneWriterAFileInAProcess(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "one.duckdb")
	first, err := Open(ctx, path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, path, storage.Options{LockTimeout: -1}); !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("a second writer in this process: %v, want ErrLocked", err)
	}
	// The same file by another name.
	rel, err := filepath.Rel(must(filepath.Abs(".")), path)
	if err == nil {
		if _, err := Open(ctx, rel, storage.Options{LockTimeout: -1}); !errors.Is(err, storage.ErrLocked) {
			t.Fatalf("a second writer by a relative path: %v, want ErrLocked", err)
		}
	}
	done := make(chan error, 1)
	go func() {
		second, err := Open(ctx, path, storage.Options{LockTimeout: 10 * time.Second})
		if err == nil {
			err = second.Close()
		}
		done <- err
	}()
	time.Sleep(150 * time.Millisecond)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the second writer, once the first closed: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
