package storage

import (
	"errors"
	"fmt"
)

var (
	// ErrLocked means another process holds the DuckDB file.
	ErrLocked = errors.New("database file is locked by another process")
	// ErrNewerFile means the file was written by a newer ploti-replica.
	ErrNewerFile = errors.New("database file has a newer _ploti migration than this build knows")
	// ErrBadData means a downloaded file's rows break a rule (duplicate or
	// null record ids, columns that do not match the schema, an id map that
	// maps two ids to one).
	ErrBadData = errors.New("bad data")
	// ErrNoDataset means the registry has no row for the dataset.
	ErrNoDataset = errors.New("dataset not in registry")
)

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
