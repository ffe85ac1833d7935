package fetch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// TestClient_WatchEndpoints checks each watch call's method, path, query
// and body against docs/wire.md section 9, and that none of them counts
// toward the stricter limit (only the manifest and subscription changes do).
func TestClient_WatchEndpoints(t *testing.T) {
	tests := []struct {
		name          string
		call          func(context.Context, *Client) (any, error)
		method, path  string
		query, body   string
		answer        any
		check         func(t *testing.T, got any)
		wantMalformed bool
	}{
		{
			name:   "watch",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Watch(ctx, "ds_a") },
			method: "POST", path: "/v1/datasets/ds_a/watch", body: "{}",
			answer: map[string]any{"datasetId": "ds_a", "watchedAt": "2026-11-20T10:00:00Z", "version": 13},
			check: func(t *testing.T, got any) {
				if w := got.(*ploti.Watch); w.DatasetID != "ds_a" || w.Version == nil || *w.Version != 13 || w.WatchedAt == nil {
					t.Fatalf("watch = %+v", w)
				}
			},
		},
		{
			name:   "unwatch",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.Unwatch(ctx, "ds_a") },
			method: "DELETE", path: "/v1/datasets/ds_a/watch",
			answer: map[string]any{"datasetId": "ds_a", "watching": false},
		},
		{
			name:   "unwatch that says it still watches",
			call:   func(ctx context.Context, c *Client) (any, error) { return nil, c.Unwatch(ctx, "ds_a") },
			method: "DELETE", path: "/v1/datasets/ds_a/watch",
			answer: map[string]any{"datasetId": "ds_a", "watching": true}, wantMalformed: true,
		},
		{
			name:   "watches",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Watches(ctx) },
			method: "GET", path: "/v1/datasets/watches",
			answer: map[string]any{"watches": []any{
				map[string]any{"datasetId": "ds_a", "title": "A", "watchedAt": "2026-11-20T10:00:00Z", "version": 13, "promotedAt": "2026-11-20T09:00:00Z"},
				map[string]any{"datasetId": "ds_b", "title": "B", "watchedAt": "2026-11-20T10:00:00Z", "version": nil}}},
			check: func(t *testing.T, got any) {
				ws := got.([]ploti.Watch)
				if len(ws) != 2 || *ws[0].Version != 13 || ws[1].Version != nil || ws[0].PromotedAt == nil {
					t.Fatalf("watches = %+v", ws)
				}
			},
		},
		{
			name:   "watches without the list",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Watches(ctx) },
			method: "GET", path: "/v1/datasets/watches",
			answer: map[string]any{}, wantMalformed: true,
		},
		{
			name:   "dataset info",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.DatasetInfo(ctx, "ds_a") },
			method: "GET", path: "/v1/datasets/ds_a",
			answer: map[string]any{"id": "ds_a", "kind": "document", "version": 13, "keyColumns": []string{"k"},
				"columns": []any{map[string]any{"name": "k", "type": "string"}, map[string]any{"name": "v", "type": "decimal", "precision": map[string]any{"precision": 10, "scale": 2}}}},
			check: func(t *testing.T, got any) {
				d := got.(*ploti.DatasetInfo)
				if *d.Version != 13 || d.Kind != "document" || len(d.Columns) != 2 || d.Columns[1].Precision.Scale != 2 {
					t.Fatalf("dataset info = %+v", d)
				}
			},
		},
		{
			name:   "changes",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Changes(ctx, "ds_a", 13, "c1", 5000) },
			method: "GET", path: "/v1/datasets/ds_a/changes", query: "cursor=c1&limit=1000&version=13",
			answer: map[string]any{"datasetId": "ds_a", "version": 13, "previousVersion": 12, "changeLog": "recorded",
				"counts": map[string]any{"added": 1, "changed": 0, "removed": 1, "renamed": 1},
				"changes": []any{
					map[string]any{"change": "added", "recordId": "r9", "row": map[string]any{"_ploti_record_id": "r9"}},
					map[string]any{"change": "removed", "recordId": "r5"},
					map[string]any{"change": "renamed", "recordId": "r7b", "previousRecordId": "r7", "row": nil}},
				"nextCursor": nil},
			check: func(t *testing.T, got any) {
				p := got.(*ploti.ChangesPage)
				if p.ChangeLog != "recorded" || *p.PreviousVersion != 12 || len(p.Changes) != 3 || p.Counts.Renamed != 1 {
					t.Fatalf("changes = %+v", p)
				}
				if !p.Changes[0].HasRow() || p.Changes[1].HasRow() || p.Changes[2].HasRow() || p.Changes[2].PreviousRecordID != "r7" {
					t.Fatalf("changes rows = %+v", p.Changes)
				}
			},
		},
		{
			name:   "changes of another version",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Changes(ctx, "ds_a", 13, "", 0) },
			method: "GET", path: "/v1/datasets/ds_a/changes", query: "version=13",
			answer: map[string]any{"datasetId": "ds_a", "version": 12, "changeLog": "recorded"}, wantMalformed: true,
		},
		{
			name: "rows by ids",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Rows(ctx, "ds_a", "", 0, []string{"r1", "r 2"})
			},
			method: "GET", path: "/v1/datasets/ds_a/rows", query: "ids=r1%2Cr+2",
			answer: map[string]any{"datasetId": "ds_a", "version": 13, "rows": []any{map[string]any{"_ploti_record_id": "r1"}}, "nextCursor": nil},
			check: func(t *testing.T, got any) {
				if p := got.(*ploti.RowsPage); *p.Version != 13 || len(p.Rows) != 1 || p.NextCursor != nil {
					t.Fatalf("rows = %+v", p)
				}
			},
		},
		{
			name:   "rows before the first version",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Rows(ctx, "ds_a", "", 0, nil) },
			method: "GET", path: "/v1/datasets/ds_a/rows",
			answer: map[string]any{"datasetId": "ds_a", "version": nil, "rows": []any{}, "nextCursor": nil},
			check: func(t *testing.T, got any) {
				if p := got.(*ploti.RowsPage); p.Version != nil {
					t.Fatalf("rows = %+v", p)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tt.answer) })
			c, _ := MustClient(t, srv.URL)
			got, err := tt.call(context.Background(), c)
			if tt.wantMalformed {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
			} else if err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.method || r.Path != tt.path || r.RawQuery != tt.query || string(r.Body) != tt.body {
				t.Fatalf("request = %s %s?%s %q, want %s %s?%s %q", r.Method, r.Path, r.RawQuery, r.Body, tt.method, tt.path, tt.query, tt.body)
			}
			if got, want := r.Auth, "Bearer "+testKey; got != want {
				t.Fatalf("Authorization = %q, want %q", got, want)
			}
			req, _ := http.NewRequest(r.Method, srv.URL+r.Path, nil)
			if isHeavy(req) {
				t.Fatalf("%s %s counts toward the stricter limit", r.Method, r.Path)
			}
			if tt.check != nil && err == nil {
				tt.check(t, got)
			}
		})
	}
}

// The 101st watch and the 21st webhook come back as sentinels, with the
// server's words in the error ("Bad input").
func TestClient_WatchAndWebhookLimits(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/watch") {
			writeError(w, 409, "watch_limit", "a member may watch 100 datasets")
			return
		}
		writeError(w, 409, "webhook_limit", "a member may have 20 webhooks")
	})
	c, _ := MustClient(t, srv.URL)
	_, err := c.Watch(context.Background(), "ds_101")
	if !errors.Is(err, ErrWatchLimit) || !strings.Contains(err.Error(), "may watch 100 datasets") || !strings.Contains(err.Error(), "watch_limit") {
		t.Fatalf("watch: err = %v", err)
	}
	_, err = c.CreateWebhook(context.Background(), ploti.Webhook{URL: "https://example.org/hook"})
	if !errors.Is(err, ErrWebhookLimit) || !strings.Contains(err.Error(), "may have 20 webhooks") {
		t.Fatalf("create webhook: err = %v", err)
	}
	posts := 0
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPost {
			posts++
		}
	}
	if posts != 2 { // the watch and the create; the create's list before is a GET
		t.Fatalf("a 409 was retried: %d POSTs", posts)
	}
}

// rowsServer serves a dataset's rows as the contract says: pages of limit
// rows pinned to the version of their first page, ids filtering, and hooks
// to make a page fail.
type rowsServer struct {
	*recorder
	rows    []map[string]any // the rows of the current version
	version atomic.Int32
	// fail, when set, may answer a request instead (page is its index in
	// the read, 0 for the first).
	fail func(w http.ResponseWriter, r *http.Request, page int) bool
}

func newRowsServer(t *testing.T, n int) *rowsServer {
	s := &rowsServer{}
	for i := range n {
		s.rows = append(s.rows, map[string]any{"_ploti_record_id": fmt.Sprintf("r%04d", i), "n": i})
	}
	s.version.Store(7)
	s.recorder = newRecorder(t, s.serve)
	return s
}

// Cursors are "v<version>:<offset>": a read stays on its version.
func (s *rowsServer) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit == 0 {
		limit = 500
	}
	version, offset := int(s.version.Load()), 0
	if c := q.Get("cursor"); c != "" {
		fmt.Sscanf(c, "v%d:%d", &version, &offset)
	}
	if s.fail != nil && s.fail(w, r, offset/limit) {
		return
	}
	var rows []map[string]any
	want := map[string]bool{}
	for _, id := range strings.Split(q.Get("ids"), ",") {
		if id != "" {
			want[id] = true
		}
	}
	for _, row := range s.rows {
		if len(want) == 0 || want[row["_ploti_record_id"].(string)] {
			rows = append(rows, map[string]any{"_ploti_record_id": row["_ploti_record_id"], "n": row["n"], "v": version})
		}
	}
	page := rows[min(offset, len(rows)):min(offset+limit, len(rows))]
	var next any
	if offset+limit < len(rows) {
		next = fmt.Sprintf("v%d:%d", version, offset+limit)
	}
	writeJSON(w, 200, map[string]any{"datasetId": "ds_a", "version": version,
		"columns": []any{map[string]any{"name": "n", "type": "integer"}}, "rows": page, "nextCursor": next})
}

// readNDJSON reads a spooled file's rows.
func readNDJSON(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d of %s: %v", len(out)+1, path, err)
		}
		out = append(out, m)
	}
	return out
}

func TestClient_SpoolRows(t *testing.T) {
	ctx := context.Background()
	t.Run("whole dataset, paged", func(t *testing.T) {
		s := newRowsServer(t, 2500)
		c, _ := MustClient(t, s.URL)
		rs, err := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		if rs.Rows != 2500 || rs.Pages != 3 || *rs.Version != 7 || len(rs.Columns) != 1 || filepath.Base(rs.Path) != "rows.ndjson" {
			t.Fatalf("row set = %+v", rs)
		}
		got := readNDJSON(t, rs.Path)
		if len(got) != 2500 || got[2499]["_ploti_record_id"] != "r2499" {
			t.Fatalf("file has %d rows", len(got))
		}
		for _, r := range s.Requests() {
			if !strings.Contains(r.RawQuery, "limit=1000") {
				t.Fatalf("page read without the largest limit: %s", r.RawQuery)
			}
		}
	})
	// A read that pages stays on its first page's version: the version
	// moving on under it changes nothing in what it reads.
	t.Run("pinned while the dataset moves on", func(t *testing.T) {
		s := newRowsServer(t, 2500)
		s.fail = func(w http.ResponseWriter, r *http.Request, page int) bool {
			if page == 1 {
				s.version.Store(8)
			}
			return false
		}
		c, _ := MustClient(t, s.URL)
		rs, err := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range readNDJSON(t, rs.Path) {
			if r["v"] != float64(7) {
				t.Fatalf("row %v is not of version 7", r)
			}
		}
	})
	// "its cursor answers 410 expired once that version has been
	// superseded for an hour": the read starts over, on the new version,
	// and the file holds each row once.
	t.Run("410 on a cursor starts over", func(t *testing.T) {
		s := newRowsServer(t, 2500)
		var expired atomic.Int32
		s.fail = func(w http.ResponseWriter, r *http.Request, page int) bool {
			if page == 2 && expired.Add(1) == 1 {
				s.version.Store(8)
				writeError(w, 410, "expired", "version 7 was superseded an hour ago")
				return true
			}
			return false
		}
		c, _ := MustClient(t, s.URL)
		rs, err := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		rows := readNDJSON(t, rs.Path)
		if *rs.Version != 8 || rs.Rows != 2500 || len(rows) != 2500 || rows[0]["v"] != float64(8) {
			t.Fatalf("after a restart: version %d, %d rows (%d in the file)", *rs.Version, rs.Rows, len(rows))
		}
		if n := len(s.Requests()); n != 3+3 {
			t.Fatalf("%d requests, want 3 then 3 again", n)
		}
	})
	t.Run("gives up after restarts", func(t *testing.T) {
		s := newRowsServer(t, 2500)
		s.fail = func(w http.ResponseWriter, r *http.Request, page int) bool {
			if page == 1 {
				writeError(w, 410, "expired", "superseded")
				return true
			}
			return false
		}
		c, _ := MustClient(t, s.URL)
		_, err := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson")
		if !errors.Is(err, ErrRowsMoved) || !errors.Is(err, ErrExpired) {
			t.Fatalf("err = %v, want ErrRowsMoved wrapping ErrExpired", err)
		}
		left, _ := os.ReadDir(c.spool)
		if len(left) != 0 {
			t.Fatalf("a failed read left %d files in the spool", len(left))
		}
	})
	// Reading 3: "An ids= read pages like any other read: follow nextCursor,
	// sending the same ids"; at most 500 ids a read.
	t.Run("ids in reads of 500, each paged", func(t *testing.T) {
		s := newRowsServer(t, 3000)
		var ids []string
		for i := 0; i < 3000; i += 2 {
			ids = append(ids, fmt.Sprintf("r%04d", i))
		}
		ids = append(ids, "r0000", "gone") // a repeat, and an id that no longer exists
		c, _ := MustClient(t, s.URL)
		var limit atomic.Int32
		s.fail = func(w http.ResponseWriter, r *http.Request, page int) bool {
			if n := len(strings.Split(r.URL.Query().Get("ids"), ",")); int32(n) > limit.Load() {
				limit.Store(int32(n))
			}
			return false
		}
		rs, err := c.SpoolRows(ctx, "ds_a", ids, "ids.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		if rs.Rows != 1500 || limit.Load() != MaxRowIDs {
			t.Fatalf("%d rows, largest read named %d ids", rs.Rows, limit.Load())
		}
		if n := len(s.Requests()); n != 4 {
			t.Fatalf("%d requests for 1501 distinct ids, want 4", n)
		}
	})
	// Reads of ids that come back at different versions are read again,
	// so that every row of the set is of one version.
	t.Run("ids reads of different versions start over", func(t *testing.T) {
		s := newRowsServer(t, 1200)
		var ids []string
		for i := range 1200 {
			ids = append(ids, fmt.Sprintf("r%04d", i))
		}
		var n atomic.Int32
		s.fail = func(w http.ResponseWriter, r *http.Request, page int) bool {
			if n.Add(1) == 2 {
				s.version.Store(9)
			}
			return false
		}
		c, _ := MustClient(t, s.URL)
		rs, err := c.SpoolRows(ctx, "ds_a", ids, "ids.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range readNDJSON(t, rs.Path) {
			if r["v"] != float64(9) {
				t.Fatalf("row %v is not of version 9", r)
			}
		}
		if *rs.Version != 9 || rs.Rows != 1200 {
			t.Fatalf("row set = %+v", rs)
		}
	})
	t.Run("no rows before the first version", func(t *testing.T) {
		srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"datasetId": "ds_a", "version": nil, "rows": []any{}})
		})
		c, _ := MustClient(t, srv.URL)
		rs, err := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson")
		if err != nil || rs.Version != nil || rs.Path != "" || rs.Rows != 0 {
			t.Fatalf("row set = %+v, err %v", rs, err)
		}
	})
	t.Run("a row that is not an object", func(t *testing.T) {
		srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]any{"datasetId": "ds_a", "version": 3, "rows": []any{map[string]any{"_ploti_record_id": "a"}, "b"}})
		})
		c, _ := MustClient(t, srv.URL)
		if _, err := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson"); !errors.Is(err, ErrMalformed) {
			t.Fatalf("err = %v, want ErrMalformed", err)
		}
	})
	t.Run("a row over several lines is one line", func(t *testing.T) {
		srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, "{\"datasetId\": \"ds_a\", \"version\": 3, \"rows\": [\n  {\n    \"_ploti_record_id\": \"a\",\n    \"s\": \"x\\ny\"\n  }\n]}")
		})
		c, _ := MustClient(t, srv.URL)
		rs, err := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(rs.Path)
		var row map[string]string
		if strings.Count(string(b), "\n") != 1 || json.Unmarshal(b, &row) != nil || row["s"] != "x\ny" || row["_ploti_record_id"] != "a" {
			t.Fatalf("file = %q, want the row on one line", b)
		}
	})
	t.Run("an id that ids= cannot name", func(t *testing.T) {
		c, _ := MustClient(t, "http://127.0.0.1:1")
		if _, err := c.SpoolRows(ctx, "ds_a", []string{"a,b"}, "rows.ndjson"); !errors.Is(err, ErrUnnamableID) {
			t.Fatalf("err = %v, want ErrUnnamableID", err)
		}
	})
}

// The rows read takes the feed calls' retries: a 503 and a 429 on a page
// are waited out and the page asked again.
func TestClient_SpoolRowsRetries(t *testing.T) {
	s := newRowsServer(t, 1500)
	var n atomic.Int32
	s.fail = func(w http.ResponseWriter, r *http.Request, page int) bool {
		switch n.Add(1) {
		case 2:
			w.WriteHeader(503)
			return true
		case 3:
			w.Header().Set("Retry-After", "7")
			writeError(w, 429, "rate_limited", "slow down")
			return true
		}
		return false
	}
	c, sl := MustClient(t, s.URL)
	rs, err := c.SpoolRows(context.Background(), "ds_a", nil, "rows.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if rs.Rows != 1500 || len(readNDJSON(t, rs.Path)) != 1500 {
		t.Fatalf("row set = %+v", rs)
	}
	waits := sl.Waits()
	if len(waits) != 2 || waits[1] != 7*time.Second {
		t.Fatalf("waits = %v, want a backoff then Retry-After 7s", waits)
	}
}

func TestClient_SpoolChanges(t *testing.T) {
	ctx := context.Background()
	pages := []map[string]any{
		{"datasetId": "ds_a", "version": 13, "previousVersion": 12, "changeLog": "recorded", "nextCursor": "p2",
			"counts": map[string]any{"added": 1, "changed": 1, "removed": 1, "renamed": 1},
			"changes": []any{
				map[string]any{"change": "added", "recordId": "r9", "row": map[string]any{"_ploti_record_id": "r9", "n": 9}},
				map[string]any{"change": "removed", "recordId": "r5"}}},
		{"datasetId": "ds_a", "version": 13, "previousVersion": 12, "changeLog": "recorded", "nextCursor": nil,
			"changes": []any{
				map[string]any{"change": "changed", "recordId": "r2", "row": nil},
				map[string]any{"change": "renamed", "recordId": "r7b", "previousRecordId": "r7", "row": map[string]any{"_ploti_record_id": "r7b", "n": 7}}}},
	}
	serve := func(pages []map[string]any) *recorder {
		return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
			i := 0
			if r.URL.Query().Get("cursor") == "p2" {
				i = 1
			}
			writeJSON(w, 200, pages[i])
		})
	}
	srv := serve(pages)
	c, _ := MustClient(t, srv.URL)
	cs, err := c.SpoolChanges(ctx, "ds_a", 13, "changes.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if cs.Pages != 2 || cs.Rows != 2 || len(cs.Changes) != 4 || cs.ChangeLog != "recorded" || *cs.PreviousVersion != 12 || cs.NextCursor != nil {
		t.Fatalf("spool = %+v", cs)
	}
	for i, want := range []bool{true, false, false, true} {
		if ch := cs.Changes[i]; ch.RowInFile != want || ch.Row != nil {
			t.Fatalf("change %d = %+v, want row in file %v", i, ch, want)
		}
	}
	rows := readNDJSON(t, cs.Path)
	if len(rows) != 2 || rows[0]["_ploti_record_id"] != "r9" || rows[1]["_ploti_record_id"] != "r7b" {
		t.Fatalf("rows = %v", rows)
	}

	other := []map[string]any{pages[0], {"datasetId": "ds_a", "version": 13, "previousVersion": 11, "changeLog": "recorded"}}
	c2, _ := MustClient(t, serve(other).URL)
	if _, err := c2.SpoolChanges(ctx, "ds_a", 13, "changes.ndjson"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("pages that disagree: err = %v, want ErrMalformed", err)
	}
	gone := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeError(w, 410, "expired", "older than 90 days") })
	c3, _ := MustClient(t, gone.URL)
	if _, err := c3.SpoolChanges(ctx, "ds_a", 13, "changes.ndjson"); !errors.Is(err, ErrExpired) {
		t.Fatalf("past retention: err = %v, want ErrExpired", err)
	}
}

// A page whose nextCursor is the cursor that read it would be read
// forever: both spools refuse it as malformed, name the endpoint, and
// leave no file behind.
func TestClient_SpoolsRefuseACursorGivenBack(t *testing.T) {
	ctx := context.Background()
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		row := map[string]any{"_ploti_record_id": "r1", "n": 1}
		if strings.HasSuffix(r.URL.Path, "/rows") {
			writeJSON(w, 200, map[string]any{"datasetId": "ds_a", "version": 3, "rows": []any{row}, "nextCursor": "same"})
			return
		}
		writeJSON(w, 200, map[string]any{"datasetId": "ds_a", "version": 3, "previousVersion": 2, "changeLog": "recorded", "nextCursor": "same",
			"changes": []any{map[string]any{"change": "added", "recordId": "r1", "row": row}}})
	})
	c, _ := MustClient(t, srv.URL)
	_, rowsErr := c.SpoolRows(ctx, "ds_a", nil, "rows.ndjson")
	_, changesErr := c.SpoolChanges(ctx, "ds_a", 3, "changes.ndjson")
	for what, err := range map[string]error{"/v1/datasets/ds_a/rows": rowsErr, "/v1/datasets/ds_a/changes": changesErr} {
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), what) || !strings.Contains(err.Error(), "own cursor back") {
			t.Errorf("%s: err = %v, want ErrMalformed naming the endpoint and the cursor", what, err)
		}
	}
	// Two pages each: the first, then the one that gave "same" back.
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d requests, want 4 (two pages a read)", n)
	}
	left, _ := filepath.Glob(filepath.Join(c.spool, "*"))
	if len(left) != 0 {
		t.Errorf("spool files left: %v", left)
	}
}

// docs/wire.md 9: DELETE /v1/datasets/{dataset}/watch answers 200
// {"datasetId", "watching": false}, also when it was not watched. A server
// that answers 204 with no body has stopped the watch as well; one that
// says the dataset is still watched has not.
func TestClient_UnwatchAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		wantErr error
	}{
		{"200 watching false", 200, `{"datasetId": "ds_a", "watching": false}`, nil},
		{"204 no body", 204, "", nil},
		{"200 empty body", 200, "  \n", nil},
		{"200 still watching", 200, `{"datasetId": "ds_a", "watching": true}`, ErrMalformed},
		{"200 not json", 200, `<html>`, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodDelete || r.URL.Path != "/v1/datasets/ds_a/watch" {
					writeError(w, 404, "not_found", "no such path")
					return
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			c, _ := MustClient(t, srv.URL)
			err := c.Unwatch(context.Background(), "ds_a")
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Unwatch = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
