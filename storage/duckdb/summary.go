package duckdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/ploti-replica/ploti-replica/storage"
)

// A summary is what a reader of the file (status) needs, kept beside it
// by the writer at its clean close, so that a reader need not open the
// file with DuckDB: DuckDB reads its whole catalog at open, 0.5 s for
// 2,000 tables on an idle machine. docs/decisions.md 51.
//
// The summary carries the file's state at the writer's close: its stamp
// (readback.go: device, inode, size, modification and change times, no
// write-ahead log) and a hash of DuckDB's headers (the main header and
// both database headers, whose iteration every checkpoint advances). A
// reader takes it only while the file is in exactly that state; any
// write by anything else (a sync, the DuckDB CLI, a crash's log, a copy
// over it) changes the state, and the reader opens the file instead.
// Every writing Open removes the summary before it writes, so that even a
// write that kept the stamp could not leave an old summary in place.

// summarySuffix names the summary beside the file.
const summarySuffix = ".status.json"

// headerBytes is DuckDB's main header and its two database headers.
const headerBytes = 3 * 4096

// fileState is one state of a DuckDB file on disk: its stamp and its
// headers' hash.
type fileState struct {
	fileStamp
	Headers string `json:"headers"`
}

// summaryFile is the summary's envelope.
type summaryFile struct {
	// Migration is the file's migration when written: a build at another
	// one reads the file itself (which refuses it, or migrates it).
	Migration int             `json:"migration"`
	File      fileState       `json:"file"`
	Summary   json.RawMessage `json:"summary"`
}

// SummaryPath is where the summary of the DuckDB file at path is kept:
// beside the file itself (symbolic links followed).
func SummaryPath(path string) string { return stampKey(path) + summarySuffix }

// stateOf is the file's state now; false when it cannot be read.
func stateOf(path string) (fileState, bool) {
	st, ok := stampOf(path)
	if !ok {
		return fileState{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return fileState{}, false
	}
	defer f.Close()
	head := make([]byte, headerBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return fileState{}, false
	}
	sum := sha256.Sum256(head[:n])
	return fileState{fileStamp: st, Headers: hex.EncodeToString(sum[:])}, true
}

// CloseWithSummary closes the file as Close does; a DuckDB file opened for
// writing also gets a summary beside it, summarize's bytes, read while the
// file is still open and held, beside the checkpoint that closes it. The
// summary is kept only when the file is checkpointed (no write-ahead log)
// and the close changed nothing after the checkpoint; otherwise none is
// left. A summary that cannot be made or written never fails the close:
// readers then open the file. A checkpoint that fails and leaves the
// write-ahead log beside the file (a full disk) fails the close, in words
// (checkpointLeft): the commits are safe in the log, but the file is not
// what a copy of it alone would hold, and the disk wants room before the
// next sync.
func (db *DB) CloseWithSummary(ctx context.Context, summarize func(context.Context) ([]byte, error)) error {
	if db.readOnly || !db.readable {
		return db.Close()
	}
	var before fileState
	ok := false
	// A commit of another goroutine while the summary is read would make
	// it a mix of two states: no transaction of the engine may commit
	// meanwhile. This process is the file's one writer, so its own count
	// of commits tells what the commit log's head would, without two reads
	// of the file on the close's path.
	head := db.commits.Load()
	// The summary is read while the checkpoint runs, on another of the
	// pool's connections: DuckDB lets reads run beside a checkpoint, both
	// see the last commit, and the summary's handful of registry reads
	// (5 ms) no longer wait for the checkpoint's writes and syncs. With
	// one connection (a caller's SetMaxOpenConns(1)) they run after it, as
	// before.
	done := make(chan error, 1)
	go func() { done <- db.checkpoint(ctx) }()
	payload, err := summarize(ctx)
	cpErr := <-done
	if err == nil && cpErr == nil && db.commits.Load() == head {
		before, ok = stateOf(db.path)
	}
	err = db.Close()
	if cpErr != nil {
		if _, werr := os.Stat(db.path + ".wal"); werr == nil {
			return errors.Join(err, checkpointLeft(db.path, cpErr))
		}
	}
	if err != nil || !ok {
		return err
	}
	after, ok := stateOf(db.path)
	if ok && after == before && after.WALSize < 0 {
		writeSummary(db.path, summaryFile{Migration: MigrationVersion(), File: after, Summary: payload})
	}
	return nil
}

// checkpointLeft is the error of a close whose checkpoint failed with the
// write-ahead log left: a full disk says so (storage.DiskFullError).
func checkpointLeft(path string, err error) error {
	if df := storage.AsDiskFull(err, path); df != nil {
		err = df
	}
	return fmt.Errorf("close %s: the last checkpoint failed; the commits are safe in %s.wal, which the next open writes into the file: %w",
		path, filepath.Base(path), err)
}

// commitHead is the last commit's seq in _ploti.commit_log (walcheck.go).
func (db *DB) commitHead(ctx context.Context) (int64, error) {
	var seq int64
	err := db.sql.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM _ploti.commit_log").Scan(&seq)
	return seq, err
}

// ReadSummary is the summary kept beside the DuckDB file at path, when the
// file is in the very state it was written for; false otherwise (no
// summary, another state, a write-ahead log beside the file, another
// migration), and the caller opens the file.
func ReadSummary(path string) ([]byte, bool) {
	b, err := os.ReadFile(SummaryPath(path))
	if err != nil {
		return nil, false
	}
	var s summaryFile
	if json.Unmarshal(b, &s) != nil || s.Migration != MigrationVersion() || len(s.Summary) == 0 {
		return nil, false
	}
	// The summary first, the file's state after: a writer that changes
	// the file in between is seen.
	now, ok := stateOf(path)
	if !ok || now != s.File || now.WALSize >= 0 {
		return nil, false
	}
	return s.Summary, true
}

// writeSummary writes the summary atomically (a temporary file, synced,
// renamed over the old one), with the file's permissions: it holds
// nothing the file does not. Best effort.
func writeSummary(path string, s summaryFile) {
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	perm := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm() & 0o666
	}
	dst := SummaryPath(path)
	tmp := fmt.Sprintf("%s.tmp-%d-%d", dst, os.Getpid(), rand.Uint32())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		d.Sync()
		d.Close()
	}
}

// removeSummary removes the file's summary: a writer does so before it
// writes anything.
func removeSummary(path string) error {
	if err := os.Remove(SummaryPath(path)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("open %s: remove its status summary: %w", path, err)
	}
	return nil
}
