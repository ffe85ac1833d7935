package emulator

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"
)

// watchDatasetBody is GET /v1/datasets/{id}.
type watchDatasetBody struct {
	ID            string            `json:"id"`
	Title         string            `json:"title"`
	Kind          string            `json:"kind"`
	Place         map[string]any    `json:"place"`
	Topic         *string           `json:"topic"`
	Version       *int              `json:"version"`
	PromotedAt    *time.Time        `json:"promotedAt"`
	ProvenanceURL string            `json:"provenanceUrl"`
	KeyColumns    []string          `json:"keyColumns"`
	Columns       []json.RawMessage `json:"columns"`
}

type changeEntry struct {
	Change           string          `json:"change"`
	RecordID         string          `json:"recordId"`
	PreviousRecordID *string         `json:"previousRecordId"`
	Row              json.RawMessage `json:"row"`
}

// changesBody is GET .../changes.
type changesBody struct {
	DatasetID       string    `json:"datasetId"`
	Version         int       `json:"version"`
	PreviousVersion *int      `json:"previousVersion"`
	PromotedAt      time.Time `json:"promotedAt"`
	ChangeLog       string    `json:"changeLog"`
	Counts          struct {
		Added, Changed, Removed, Renamed int64
	} `json:"counts"`
	Changes    []changeEntry `json:"changes"`
	NextCursor *string       `json:"nextCursor"`
}

// rowsBody is GET .../rows.
type rowsBody struct {
	DatasetID  string                       `json:"datasetId"`
	Version    *int                         `json:"version"`
	Columns    []map[string]any             `json:"columns"`
	Rows       []map[string]json.RawMessage `json:"rows"`
	NextCursor *string                      `json:"nextCursor"`
}

// getChanges reads one changes page; query is appended to ?version=N.
func getChanges(tb testing.TB, em *Emulator, ds string, version int, query string) (int, changesBody) {
	tb.Helper()
	var out changesBody
	st := apiGet(tb, em, "/v1/datasets/"+ds+"/changes?version="+itoa(version)+query, &out)
	return st, out
}

// allChanges reads every page of a version's changes with limit.
func allChanges(tb testing.TB, em *Emulator, ds string, version, limit int) []changeEntry {
	tb.Helper()
	var out []changeEntry
	q := "&limit=" + itoa(limit)
	for {
		st, page := getChanges(tb, em, ds, version, q)
		if st != 200 {
			tb.Fatalf("changes v%d: status %d", version, st)
		}
		out = append(out, page.Changes...)
		if page.NextCursor == nil {
			return out
		}
		q = "&limit=" + itoa(limit) + "&cursor=" + url.QueryEscape(*page.NextCursor)
	}
}

func getRows(tb testing.TB, em *Emulator, ds, query string) (int, rowsBody) {
	tb.Helper()
	var out rowsBody
	st := apiGet(tb, em, "/v1/datasets/"+ds+"/rows?"+query, &out)
	return st, out
}

// allRows reads a whole dataset (or the given ids) page by page.
func allRows(tb testing.TB, em *Emulator, ds, query string) (int, []map[string]json.RawMessage) {
	tb.Helper()
	var out []map[string]json.RawMessage
	version := 0
	q := query
	for {
		st, page := getRows(tb, em, ds, q)
		if st != 200 {
			tb.Fatalf("rows %s: status %d", q, st)
		}
		if page.Version != nil {
			version = *page.Version
		}
		out = append(out, page.Rows...)
		if page.NextCursor == nil {
			return version, out
		}
		q = query + "&cursor=" + url.QueryEscape(*page.NextCursor)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// str decodes a JSON string value.
func str(tb testing.TB, raw json.RawMessage) string {
	tb.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		tb.Fatalf("%s is not a JSON string: %v", raw, err)
	}
	return s
}
