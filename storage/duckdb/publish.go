package duckdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// publishChunk is how much Publish copies between looks at its context.
const publishChunk = 64 << 20

// Publish writes a read-only copy of the file, checkpointed, to dst and
// renames it over dst: a reader that opens dst gets the whole previous
// copy or the whole new one, and never meets this writer's lock
// (dashboards beside a running sync). The copy is a reflink where the
// filesystem has them (Btrfs, XFS), a plain copy otherwise, made in dst's
// folder, synced to disk and opened read-only as a replica before the
// rename. A reader that holds dst open keeps the copy it opened (its
// inode) until it opens dst again.
//
// Nothing may write to the file while Publish runs (the CLI's sync and
// serve publish between syncs). dst must not be the file itself, nor have
// a WAL beside it (a sign that something opened it for writing).
func (db *DB) Publish(ctx context.Context, dst string) (storage.PublishResult, error) {
	start := time.Now()
	res := storage.PublishResult{Path: dst}
	if db.readOnly {
		return res, fmt.Errorf("publish %s: %s is open read-only", dst, db.path)
	}
	if err := checkPublishPath(db.path, dst); err != nil {
		return res, err
	}
	if err := db.Checkpoint(ctx); err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	if fi, err := os.Stat(db.path + ".wal"); err == nil && fi.Size() > 0 {
		return res, fmt.Errorf("publish %s: %s.wal still holds commits after the checkpoint (a transaction is open)", dst, db.path)
	}
	src, err := db.publishSource()
	if err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".publish-*")
	if err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if res.Reflink, err = copyFile(ctx, tmp, src); err != nil {
		return res, fmt.Errorf("publish %s: copy %s: %w", dst, db.path, err)
	}
	if err := finishCopy(tmp); err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	fi, err := os.Stat(tmp.Name())
	if err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	res.Bytes = fi.Size()
	if err := checkCopy(ctx, tmp.Name()); err != nil {
		return res, fmt.Errorf("publish %s: the copy does not open as a replica: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	done = true
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return res, fmt.Errorf("publish %s: %w", dst, err)
	}
	res.Duration = time.Since(start)
	return res, nil
}

// checkPublishPath refuses a dst that is the file itself or that has a
// WAL beside it (DuckDB would replay it over the new copy).
func checkPublishPath(path, dst string) error {
	if dst == "" {
		return errors.New("publish: no path")
	}
	a, aerr := filepath.Abs(path)
	b, berr := filepath.Abs(dst)
	if aerr == nil && berr == nil && a == b {
		return fmt.Errorf("publish %s: it is the replica file itself", dst)
	}
	if si, err := os.Stat(path); err == nil {
		if di, err := os.Stat(dst); err == nil && os.SameFile(si, di) {
			return fmt.Errorf("publish %s: it is the replica file itself", dst)
		}
	}
	if _, err := os.Stat(dst + ".wal"); err == nil {
		return fmt.Errorf("publish %s: %s.wal exists: something opened the published copy for writing; remove the WAL (the copy is read-only)", dst, dst)
	}
	return nil
}

// publishSource is the file opened for reading, kept open until Close.
//
// DuckDB locks the file with fcntl, whose locks belong to the process:
// closing any descriptor of the file, even one DuckDB never saw, drops the
// lock, and another process could then open the file for writing while
// this one still writes it. So the descriptor Publish reads stays open,
// and Close closes it after DuckDB has let go.
func (db *DB) publishSource() (*os.File, error) {
	if db.pubSrc == nil {
		f, err := os.Open(db.path)
		if err != nil {
			return nil, err
		}
		db.pubSrc = f
	}
	return db.pubSrc, nil
}

// copyFile fills dst with src's bytes: a reflink when the filesystem
// makes one, else a copy in chunks (copy_file_range on Linux), looking
// at ctx between them.
func copyFile(ctx context.Context, dst, src *os.File) (reflink bool, err error) {
	if cloneFile(dst, src) == nil {
		return true, nil
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if _, err := io.CopyN(dst, src, publishChunk); errors.Is(err, io.EOF) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
}

// finishCopy makes the copy read-only, writes it to disk and closes it.
func finishCopy(f *os.File) error {
	if err := f.Chmod(0o444); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkCopy opens the copy read-only as a replica, as its readers will.
func checkCopy(ctx context.Context, path string) error {
	if _, err := Inspect(path); err != nil {
		return err
	}
	c, err := open(ctx, path, storage.Options{ReadOnly: true}, false)
	if err != nil {
		return err
	}
	return c.Close()
}

// syncDir writes a folder's entries (a rename) to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
