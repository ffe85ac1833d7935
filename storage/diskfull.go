package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// DiskFullError is a write refused for want of space: the file it was
// writing (DuckDB's file, its write-ahead log, or a download in the spool).
type DiskFullError struct {
	Path string
	Err  error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("disk is full: no space left on device for %s (in %s); free space there and run the command again: "+
		"every table keeps its last good version", e.Path, filepath.Dir(e.Path))
}

// Unwrap makes errors.Is(err, ErrDiskFull) and errors.Is(err,
// syscall.ENOSPC) true.
func (e *DiskFullError) Unwrap() []error { return []error{ErrDiskFull, syscall.ENOSPC, e.Err} }

// duckNoSpace is how DuckDB says a write found no space, and the file.
var (
	duckNoSpace   = regexp.MustCompile(`(?i)no space left on device`)
	duckWriteFile = regexp.MustCompile(`(?i)(?:write|file)[^"]*"([^"]+)"`)
)

// AsDiskFull returns err as a *DiskFullError when it tells of a write
// that found no space (a Go write's ENOSPC, or DuckDB's "No space left on
// device"), naming the file; dbPath is the file to name when DuckDB does
// not say. It returns nil for any other error.
func AsDiskFull(err error, dbPath string) *DiskFullError {
	if err == nil {
		return nil
	}
	var df *DiskFullError
	if errors.As(err, &df) {
		return df
	}
	if errors.Is(err, syscall.ENOSPC) {
		path := dbPath
		var pe *fs.PathError
		if errors.As(err, &pe) {
			path = strings.TrimSuffix(pe.Path, ".part")
		}
		return &DiskFullError{Path: path, Err: err}
	}
	if !duckNoSpace.MatchString(err.Error()) {
		return nil
	}
	path := dbPath
	if m := duckWriteFile.FindStringSubmatch(err.Error()); m != nil {
		path = m[1]
	}
	return &DiskFullError{Path: path, Err: err}
}
