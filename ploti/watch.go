package ploti

import (
	"encoding/json"
	"strings"
	"time"
)

// Watch and member webhook event types (watch-and-webhooks.txt; docs/wire.md
// section 9). Request event types start with RequestEventPrefixes.
const (
	EventDatasetChanged = "dataset.changed"
)

// RequestEventPrefixes start the type of every request event a member
// webhook receives: data_request.sourcing … and research_request.report_ready ….
var RequestEventPrefixes = []string{"data_request.", "research_request."}

// IsRequestEvent reports whether typ is a data or research request event.
func IsRequestEvent(typ string) bool {
	for _, p := range RequestEventPrefixes {
		if strings.HasPrefix(typ, p) && len(typ) > len(p) {
			return true
		}
	}
	return false
}

// Change logs: what Ploti recorded for a version (watch-and-webhooks.txt,
// "Read what changed").
const (
	// ChangeLogRecorded lists every changed row.
	ChangeLogRecorded = "recorded"
	// ChangeLogCountsOnly kept only the totals: read the dataset again.
	ChangeLogCountsOnly = "counts_only"
	// ChangeLogIDsChanged replaced the dataset's ids: read it again.
	ChangeLogIDsChanged = "ids_changed"
	// ChangeLogFullRefresh reloaded the dataset whole: read it again.
	ChangeLogFullRefresh = "full_refresh"
	// ChangeLogFirst is the dataset's first version: read it.
	ChangeLogFirst = "first"
)

// KnownChangeLog reports whether s is one of the five change logs the docs
// name.
func KnownChangeLog(s string) bool {
	switch s {
	case ChangeLogRecorded, ChangeLogCountsOnly, ChangeLogIDsChanged, ChangeLogFullRefresh, ChangeLogFirst:
		return true
	}
	return false
}

// Kinds of change in a changes answer.
const (
	ChangeAdded   = "added"
	ChangeChanged = "changed"
	ChangeRemoved = "removed"
	// ChangeRenamed is a record that now carries a new id (RecordID); it
	// carried PreviousRecordID.
	ChangeRenamed = "renamed"
)

// DatasetInfo is GET /v1/datasets/{dataset}: the dataset as Ploti's general
// API sees it, with Ploti's own version number (not a Data Feeds one) and
// its columns now.
type DatasetInfo struct {
	ID            string     `json:"id"`
	Title         string     `json:"title"`
	Kind          string     `json:"kind,omitempty"` // table or document; nothing else differs for a client
	Place         *Place     `json:"place"`
	Topic         *string    `json:"topic"`
	Version       *int       `json:"version"` // null before the first version
	PromotedAt    *time.Time `json:"promotedAt"`
	ProvenanceURL *string    `json:"provenanceUrl"`
	KeyColumns    []string   `json:"keyColumns"`
	Columns       []Column   `json:"columns"`
}

// Watch is one dataset a member watches, with the dataset's current
// version (POST /v1/datasets/{dataset}/watch answers the same shape).
type Watch struct {
	DatasetID  string     `json:"datasetId"`
	Title      string     `json:"title,omitempty"`
	WatchedAt  *time.Time `json:"watchedAt,omitempty"`
	Version    *int       `json:"version"`
	PromotedAt *time.Time `json:"promotedAt,omitempty"`
}

// Watches is GET /v1/datasets/watches: every watch, no paging.
type Watches struct {
	Watches []Watch `json:"watches"`
}

// Unwatched is DELETE /v1/datasets/{dataset}/watch.
type Unwatched struct {
	DatasetID string `json:"datasetId"`
	Watching  bool   `json:"watching"`
}

// ChangeCounts are a version's totals: dataset.changed carries added,
// changed and removed, a changes answer also renamed. Neither is a check on
// the rows: the rows are the record (docs/wire.md 9, reading 6).
type ChangeCounts struct {
	Added   int64 `json:"added"`
	Changed int64 `json:"changed"`
	Removed int64 `json:"removed"`
	Renamed int64 `json:"renamed,omitempty"`
}

// Change is one row of a changes answer. Row is the whole row, given for
// added, changed and renamed only when the version is the dataset's latest;
// it is nil otherwise (a JSON null decodes to nil).
type Change struct {
	Change           string          `json:"change"`
	RecordID         string          `json:"recordId"`
	PreviousRecordID string          `json:"previousRecordId,omitempty"`
	Row              json.RawMessage `json:"row,omitempty"`
	// RowInFile is set by a client that moved the row given with the
	// change to a file (fetch.SpoolChanges); Row is then nil.
	RowInFile bool `json:"-"`
}

// HasRow reports whether the change came with its row (in Row, or moved
// to a file).
func (c *Change) HasRow() bool {
	return c.RowInFile || len(c.Row) > 0 && string(c.Row) != "null"
}

// ChangesPage is one page of GET /v1/datasets/{dataset}/changes?version=N.
type ChangesPage struct {
	DatasetID       string        `json:"datasetId"`
	Version         int           `json:"version"`
	PreviousVersion *int          `json:"previousVersion"`
	PromotedAt      *time.Time    `json:"promotedAt"`
	ChangeLog       string        `json:"changeLog"`
	Counts          *ChangeCounts `json:"counts"`
	Changes         []Change      `json:"changes"`
	NextCursor      *string       `json:"nextCursor"`
}

// RowsPage is one page of GET /v1/datasets/{dataset}/rows. Version is null
// before the dataset's first version (and the page has no rows then).
type RowsPage struct {
	DatasetID  string            `json:"datasetId"`
	Version    *int              `json:"version"`
	Columns    []Column          `json:"columns"`
	Rows       []json.RawMessage `json:"rows"`
	NextCursor *string           `json:"nextCursor"`
}

// DatasetChanged is the data of a dataset.changed event.
type DatasetChanged struct {
	DatasetID     string       `json:"datasetId"`
	Version       int          `json:"version"`
	PromotedAt    *time.Time   `json:"promotedAt"`
	Counts        ChangeCounts `json:"counts"`
	ProvenanceURL *string      `json:"provenanceUrl"`
}

// Question is one question of a research_request.question event.
type Question struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// RequestData is the data of a request event: at least the request's id and
// the address that opens it in Ploti; research_request.question adds
// questions, research_request.answered the answer.
type RequestData struct {
	RequestID string          `json:"requestId"`
	URL       string          `json:"url"`
	Questions []Question      `json:"questions,omitempty"`
	Answer    json.RawMessage `json:"answer,omitempty"`
}
