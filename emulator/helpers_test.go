package emulator

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const dsPermits = "ds_fl_orange_permits"

// permitColumns is the first schema of the test dataset.
func permitColumns() []Column {
	return []Column{
		{Name: "permit_number", Type: "string"},
		{Name: "valuation", Type: "decimal", Precision: &Precision{Precision: 14, Scale: 2}},
		{Name: "issued", Type: "date"},
		{Name: "updated_at", Type: "timestamp"},
		{Name: "tags", Type: "list", Items: &Column{Type: "string"}},
		{Name: "final", Type: "boolean"},
		{Name: "extra", Type: "json"},
		{Name: "geometry", Type: "geometry", Geometry: &GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}},
	}
}

func permit(n string, val string, x float64) Row {
	return Row{
		"permit_number": n, "valuation": val, "issued": time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		"updated_at": time.Date(2026, 10, 2, 3, 4, 5, 0, time.UTC), "tags": []any{"a", "b"},
		"final": true, "extra": `{"k": 1}`, "geometry": "POINT (" + strings.TrimRight(strings.TrimRight(
			jsonNum(x), "0"), ".") + " 28.5)",
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) + ".0" }

// mustEmulator starts an emulator with one place, topic and keyed dataset,
// rate limits off.
func mustEmulator(tb testing.TB) *Emulator {
	tb.Helper()
	return mustEmulatorWith(tb, Options{Dir: tb.TempDir(), NoRateLimit: true})
}

// mustEmulatorWith is mustEmulator with the caller's options.
func mustEmulatorWith(tb testing.TB, opts Options) *Emulator {
	tb.Helper()
	em, err := New(opts)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	if err := em.Start(); err != nil {
		tb.Fatalf("Start: %v", err)
	}
	tb.Cleanup(func() {
		if err := em.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	em.AddPlace(Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(Place{ID: "fl", Name: "Florida", Kind: "state", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	if err := em.AddDataset(DatasetSpec{
		ID: dsPermits, Title: "Orange County Building Permits", PlaceID: "fl-orange",
		Topic: "development-activity", Publisher: "Orange County", KeyColumns: []string{"permit_number"},
		Columns: permitColumns(),
	}); err != nil {
		tb.Fatalf("AddDataset: %v", err)
	}
	return em
}

func mustPublish(tb testing.TB, em *Emulator, rows []Row, opts ...PublishOption) Release {
	tb.Helper()
	rel, err := em.Publish(context.Background(), dsPermits, rows, opts...)
	if err != nil {
		tb.Fatalf("Publish: %v", err)
	}
	return rel
}

func mustSub(tb testing.TB, em *Emulator, spec SubscriptionSpec) string {
	tb.Helper()
	id, err := em.CreateSubscription(spec)
	if err != nil {
		tb.Fatalf("CreateSubscription: %v", err)
	}
	return id
}

// call makes a real HTTP request and decodes a JSON answer into out.
func call(tb testing.TB, method, url, key string, body io.Reader, out any) *http.Response {
	tb.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		tb.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read %s: %v", url, err)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("decode %s (%d): %v: %s", url, resp.StatusCode, err, b)
		}
	}
	return resp
}

func apiGet(tb testing.TB, em *Emulator, path string, out any) int {
	tb.Helper()
	return call(tb, "GET", em.URL()+path, em.APIKey(), nil, out).StatusCode
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type fileObj struct {
	URL    string `json:"url"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

type versionBody struct {
	DatasetID       string  `json:"datasetId"`
	Version         int     `json:"version"`
	PreviousVersion *int    `json:"previousVersion"`
	SchemaVersion   string  `json:"schemaVersion"`
	RowCount        int64   `json:"rowCount"`
	ResyncRequired  bool    `json:"resyncRequired"`
	ResyncReason    *string `json:"resyncReason"`
	Files           struct {
		Snapshot []fileObj `json:"snapshot"`
		Changes  []fileObj `json:"changes"`
		IDMap    *fileObj  `json:"idMap"`
		Schema   *fileObj  `json:"schema"`
	} `json:"files"`
	LinksExpireAt time.Time `json:"linksExpireAt"`
}

type eventBody struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	SubscriptionID string `json:"subscriptionId"`
	Data           struct {
		DatasetID       string          `json:"datasetId"`
		Version         *int            `json:"version"`
		PreviousVersion *int            `json:"previousVersion"`
		SchemaVersion   string          `json:"schemaVersion"`
		Reason          string          `json:"reason"`
		SchemaChange    json.RawMessage `json:"schemaChange"`
		Links           struct {
			Version string `json:"version"`
			Dataset string `json:"dataset"`
		} `json:"links"`
	} `json:"data"`
}

type eventsPage struct {
	Events     []eventBody `json:"events"`
	NextCursor string      `json:"nextCursor"`
}

// allEvents reads a subscription's whole log over HTTP.
func allEvents(tb testing.TB, em *Emulator, sub string) []eventBody {
	tb.Helper()
	var out []eventBody
	cursor := ""
	for {
		var page eventsPage
		if st := apiGet(tb, em, "/v1/feeds/subscriptions/"+sub+"/events?limit=500&cursor="+cursor, &page); st != 200 {
			tb.Fatalf("events: status %d", st)
		}
		if len(page.Events) == 0 {
			return out
		}
		out = append(out, page.Events...)
		cursor = page.NextCursor
	}
}

func eventTypes(evs []eventBody) string {
	var s []string
	for _, e := range evs {
		t := strings.TrimPrefix(e.Type, "feed.dataset.")
		if e.Data.Reason != "" {
			t += "(" + e.Data.Reason + ")"
		}
		s = append(s, t)
	}
	return strings.Join(s, " ")
}

// testDB is an in-memory DuckDB for reading the emulator's files.
func testDB(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		tb.Fatal(err)
	}
	return db
}

// queryRows runs a query and renders each row as its columns' text joined
// by "|" (NULL as "∅").
func queryRows(tb testing.TB, db *sql.DB, q string) []string {
	tb.Helper()
	rows, err := db.Query("SELECT COLUMNS(*)::VARCHAR FROM (" + q + ")")
	if err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatalf("scan: %v", err)
		}
		var parts []string
		for _, v := range vals {
			if v.Valid {
				parts = append(parts, v.String)
			} else {
				parts = append(parts, "∅")
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}
