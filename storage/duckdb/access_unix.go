//go:build unix

package duckdb

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/ploti-replica/ploti-replica/storage"
)

// checkAccess refuses, in words, a file this process may not open as
// asked, before DuckDB says "IO Error: Cannot open file … Permission
// denied", or, worse, opens it and fails its first commit for want of its
// write-ahead log ("Failed to commit: … .wal"): a reader needs to read the
// file; a writer to write it and its folder (where the log and a new file
// go).
func checkAccess(path string, exists, readOnly bool) error {
	if path == "" || path == ":memory:" {
		return nil
	}
	if exists {
		if denied(unix.Access(path, unix.R_OK)) {
			return &storage.PermissionError{Path: path, Need: "read"}
		}
		if readOnly {
			return nil
		}
		if denied(unix.Access(path, unix.W_OK)) {
			return &storage.PermissionError{Path: path, Need: "write"}
		}
	}
	if readOnly {
		return nil
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil // CheckFolder names a folder that is not there, or a file
	}
	if denied(unix.Access(dir, unix.W_OK|unix.X_OK)) {
		return &storage.PermissionError{Path: dir, Need: "write", Folder: true, File: path}
	}
	return nil
}

// denied reports whether err is the system's refusal: no permission, or a
// read-only file system.
func denied(err error) bool {
	return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS)
}
