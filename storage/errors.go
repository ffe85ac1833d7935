package storage

import (
	"errors"
	"fmt"
	"io/fs"
)

var (
	// ErrLocked means another process holds the DuckDB file, or another
	// open of it for writing in this process (writers.go).
	ErrLocked = errors.New("database file is locked by another process")
	// ErrNewerFile means the file was written by a newer ploti-replica.
	ErrNewerFile = errors.New("database file has a newer _ploti migration than this build knows")
	// ErrBadData means a downloaded file's rows break a rule (duplicate or
	// null record ids, columns that do not match the schema, an id map that
	// maps two ids to one).
	ErrBadData = errors.New("bad data")
	// ErrNoDataset means the registry has no row for the dataset.
	ErrNoDataset = errors.New("dataset not in registry")
	// ErrNoFile means Open was asked not to create the file, and there is
	// none. errors.Is(ErrNoFile, fs.ErrNotExist) holds.
	ErrNoFile error = noFileError{}
	// ErrNoFolder means the file would be created in a folder that does
	// not exist (DuckDB does not make folders).
	ErrNoFolder = errors.New("no such folder")
	// ErrNotDuckDB means the file is not a DuckDB database at all.
	ErrNotDuckDB = errors.New("not a DuckDB file")
	// ErrStorageVersion means the file's DuckDB storage version is newer
	// than the embedded DuckDB reads.
	ErrStorageVersion = errors.New("DuckDB storage version too new")
	// ErrNotReplica means a DuckDB file that ploti-replica never wrote (no
	// _ploti schema, or its migrations never ran), opened read-only.
	ErrNotReplica = errors.New("not a ploti-replica file")
	// ErrFileOnly means a feature that only a DuckDB file has so far
	// (history, marks) was asked of another engine's database
	// (docs/decisions.md 48).
	ErrFileOnly = errors.New("kept in a DuckDB file only, not yet in a database")
	// ErrOlderFile means a file opened read-only was written by an older
	// ploti-replica: its _ploti migrations run at its next writing open.
	ErrOlderFile = errors.New("database file has an older _ploti migration than this build reads")
)

// ErrDiskFull means a write found no space left on its device.
// errors.Is(ErrDiskFull-wrapping errors, syscall.ENOSPC) holds too.
var ErrDiskFull = errors.New("disk is full")

type noFileError struct{}

func (noFileError) Error() string        { return "no such file" }
func (noFileError) Is(target error) bool { return target == fs.ErrNotExist }

// DataError is a rule broken by a file's content: which file, what rule.
type DataError struct {
	File   string // the local file (base name), or "" when the rule is about a set of files
	Detail string
}

func (e *DataError) Error() string {
	if e.File == "" {
		return e.Detail
	}
	return fmt.Sprintf("%s: %s", e.File, e.Detail)
}

// Unwrap makes errors.Is(err, ErrBadData) true.
func (e *DataError) Unwrap() error { return ErrBadData }

// ErrNoHistory means a dataset keeps no history (replica.Options.History starts one).
var ErrNoHistory = errors.New("no history kept")

// ErrDamaged means DuckDB cannot read the file back whole: bytes changed
// under it (a bad disk, a copy cut short, a stray write, a write-ahead log
// that is not this file's).
var ErrDamaged = errors.New("database file is damaged")

// ErrStaleWAL means a write-ahead log beside the file is not a log of the
// file's last state: DuckDB would replay it over commits it never saw.
var ErrStaleWAL = errors.New("write-ahead log beside the file is not this file's")
