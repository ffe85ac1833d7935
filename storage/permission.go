package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
)

// ErrPermission means the operating system refused the replica's file, or
// its folder, to this process. errors.Is(err, fs.ErrPermission) holds too.
var ErrPermission = errors.New("permission denied")

// PermissionError is the file or folder the operating system refused, and
// what this process needed to do with it.
type PermissionError struct {
	Path string // the file or folder refused
	// Need is what was refused: "read" or "write".
	Need string
	// Folder tells that Path is the folder of the file (DuckDB writes its
	// write-ahead log there, and creates new files there).
	Folder bool
	// File is the replica's file when Path is its folder (it may not
	// exist yet: the folder refused its creation).
	File string
	Err  error
}

func (e *PermissionError) Error() string {
	who := processUser()
	switch {
	case e.Folder && !exists(e.File):
		return fmt.Sprintf("permission denied: cannot create %s: the folder %s is read-only to this process (%s); "+
			"give %s write permission on the folder, or name a file in a folder it may write", e.File, e.Path, who, who)
	case e.Folder:
		return fmt.Sprintf("permission denied: the folder %s is read-only to this process (%s), and DuckDB writes the write-ahead log "+
			"%s.wal beside the file it writes; give %s write permission on the folder (a reader opening the file read-only needs none)",
			e.Path, who, filepath.Base(e.File), who)
	case e.Need == "write":
		return fmt.Sprintf("permission denied: %s is read-only to this process (%s); give %s write permission on it "+
			"(a reader opening it read-only needs none)", e.Path, who, who)
	}
	return fmt.Sprintf("permission denied: %s is not readable by this process (%s); give %s read permission on it", e.Path, who, who)
}

// Unwrap makes errors.Is(err, ErrPermission) and errors.Is(err,
// fs.ErrPermission) true.
func (e *PermissionError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrPermission, fs.ErrPermission}
	}
	return []error{ErrPermission, fs.ErrPermission, e.Err}
}

// processUser names the user this process runs as: "user alice", or
// "uid 1000" when it has no name.
func processUser() string {
	uid := os.Geteuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return "user " + u.Username
	}
	return "uid " + strconv.Itoa(uid)
}

// duckDenied is how DuckDB says the system refused a file, and the file.
var duckDenied = regexp.MustCompile(`(?i)cannot open file "([^"]+)": permission denied`)

// AsPermission returns err as a *PermissionError when it tells of a file
// the system refused (a Go call's EACCES or EPERM, or DuckDB's "Cannot
// open file …: Permission denied"), naming the file; dbPath is the
// replica's file, for a refused write-ahead log or folder. It returns nil
// for any other error.
func AsPermission(err error, dbPath string) *PermissionError {
	if err == nil {
		return nil
	}
	var pe *PermissionError
	if errors.As(err, &pe) {
		return pe
	}
	if m := duckDenied.FindStringSubmatch(err.Error()); m != nil {
		refused := m[1]
		if filepath.Clean(refused) == filepath.Clean(dbPath) && !exists(refused) {
			// A new file: its folder refused it.
			return &PermissionError{Path: filepath.Dir(refused), Need: "write", Folder: true, File: dbPath, Err: err}
		}
		if filepath.Ext(refused) == ".wal" {
			return &PermissionError{Path: filepath.Dir(refused), Need: "write", Folder: true, File: dbPath, Err: err}
		}
		return &PermissionError{Path: refused, Need: "write", Err: err}
	}
	var fe *fs.PathError
	if errors.Is(err, fs.ErrPermission) && errors.As(err, &fe) {
		need := "write"
		if fe.Op == "open" || fe.Op == "read" {
			need = "read"
		}
		return &PermissionError{Path: fe.Path, Need: need, Err: err}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
