package storage

import "github.com/ploti-replica/ploti-replica/ploti"

// Touch is a record a watched version touched, as the merge needs it: the
// id, and which version did what to it (for errors and the change log).
type Touch struct {
	ID      string
	Version int
	Change  string // ploti.ChangeAdded, …
}

// Rename is a record of a watched version that now carries a new id.
type Rename struct {
	Version  int
	From, To string
}

// RowSource is where rows of a merge come from: an NDJSON file and the ids
// of the rows to take from it (every one must be there, once).
type RowSource struct {
	Path string
	IDs  []string
}

// WatchMerge is what one or more recorded watch versions do to a table
// held at an older version, worked out by apply: the held rows they
// touched go, the touched records' rows now come in, and each version's
// changes are logged.
type WatchMerge struct {
	DatasetID string
	Table     string
	Columns   []ploti.Column
	// Held are the ids the versions changed, removed or renamed that the
	// table must hold: they are deleted (each one must be).
	Held []Touch
	// New are the ids the versions added (or renamed to) that the table
	// must not hold.
	New []Touch
	// Rows are the rows of the records that exist after the versions.
	Rows []RowSource
	// Log is each version's changes, for _ploti.changes.
	Log []Touch
	// Renames go to _ploti.id_map, oldest version first, and rewrite the
	// IDRefs columns in that order.
	Renames []Rename
	IDRefs  []IDRef
	// RowsBefore is the table's row count before, or negative when unknown.
	RowsBefore int64
}
