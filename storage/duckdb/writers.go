package duckdb

import (
	"fmt"
	"sync"

	"github.com/ploti-replica/ploti-replica/storage"
)

// DuckDB's lock on a file keeps out other processes, not a second open
// in this one: two writers of one file in one process (two Replicas of a
// Go service, say) would share the file's spool and race each other's
// transactions. So a process holds each file it writes once, here, and
// a second open for writing waits for the first to close, as one from
// another process waits for DuckDB's lock.
var writers sync.Map // absolute path → struct{}

// holdWriter takes path for this process's one writer; "" for a file in
// memory, which nothing shares.
func holdWriter(path string) (string, error) {
	if path == "" || path == ":memory:" {
		return "", nil
	}
	key := stampKey(path) // the file whatever the path that names it
	if _, held := writers.LoadOrStore(key, struct{}{}); held {
		return "", fmt.Errorf("%w: open for writing elsewhere in this process", storage.ErrLocked)
	}
	return key, nil
}

// releaseWriter gives back what holdWriter took.
func releaseWriter(key string) {
	if key != "" {
		writers.Delete(key)
	}
}
