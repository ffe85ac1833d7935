package storage

import (
	"encoding/json"
	"time"
)

// ColumnChange is one column of a record that differs between two
// versions: its values as text (DuckDB's VARCHAR of each; geometry as
// WKT), nil for NULL.
type ColumnChange struct {
	Name string  `json:"name"`
	Old  *string `json:"old"`
	New  *string `json:"new"`
}

// Meta columns of a history row.
const (
	ColValidFrom   = "_ploti_valid_from"
	ColValidFromAt = "_ploti_valid_from_at"
	ColValidTo     = "_ploti_valid_to"
	ColValidToAt   = "_ploti_valid_to_at"
	ColHistChange  = "_ploti_change"
	ColOriginID    = "_ploti_origin_id"
)

// History change kinds (_ploti_change of a history row).
const (
	HistoryFirst   = "first" // a row the history began with
	HistoryAdded   = "added"
	HistoryChanged = "changed"
	HistoryRenamed = "renamed"
)

// Kinds of a recorded version (_ploti.history_versions.kind).
const (
	VersionFirst  = "first"  // the history began at it
	VersionMerge  = "merge"  // a changes merge
	VersionReload = "reload" // a reload, compared with the rows held
)

// HistorySchema is the schema of the user's views and macros over a
// replica's history.
const HistorySchema = "history"

// HistoryVersion is the version a history write records.
type HistoryVersion struct {
	DatasetID string
	Table     string
	Source    string // SourceFeed or SourceWatch: whose version numbers
	Version   int
	// PublishedAt is when Ploti published the version (promotedAt for a
	// watched one); nil when unknown.
	PublishedAt *time.Time
}

// HistoryState is what the file holds of a dataset's history.
type HistoryState struct {
	Started bool   // the history table exists
	Last    int    // the newest version recorded (0: none)
	Oldest  int    // the oldest version kept
	Source  string // whose numbering its versions are in
}

// DiffRow is a record that differs between two versions of a dataset's
// history: added, removed, changed (with the columns that changed), or
// renamed (a record whose history goes on under another id: a rename or
// an id map; its columns that changed too are listed).
type DiffRow struct {
	Change           string          `json:"change"`
	RecordID         string          `json:"recordId"`
	PreviousRecordID string          `json:"previousRecordId,omitempty"`
	Columns          []ColumnChange  `json:"columns,omitempty"`
	Before           json.RawMessage `json:"before,omitempty"` // the row at the older version (removed, changed, renamed)
	After            json.RawMessage `json:"after,omitempty"`  // the row at the newer version (added, changed, renamed)
}

// StoryRow is one row of a record's story: its values from one version
// until another.
type StoryRow struct {
	RecordID    string     `json:"recordId"`
	ValidFrom   int        `json:"validFrom"`
	ValidTo     *int       `json:"validTo,omitempty"` // nil while current
	ValidFromAt *time.Time `json:"validFromAt,omitempty"`
	ValidToAt   *time.Time `json:"validToAt,omitempty"`
	Change      string     `json:"change"`             // what opened the row: first, added, changed, renamed
	OriginID    string     `json:"originId,omitempty"` // the id its history began under, when another
	// Values are the row's columns as text (nil for NULL), in order.
	Values []ColumnValue `json:"values"`
	// Ended tells that the record was removed (or renamed) at ValidTo and
	// no later row of its story follows.
	Ended bool `json:"ended,omitempty"`
}

// ColumnValue is a column's value as text, nil for NULL.
type ColumnValue struct {
	Name  string  `json:"name"`
	Value *string `json:"value"`
}
