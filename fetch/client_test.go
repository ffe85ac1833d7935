package fetch

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
		wantURL string
	}{
		{name: "default base", opts: Options{APIKey: "k"}, wantURL: DefaultBaseURL},
		{name: "loopback", opts: Options{BaseURL: "http://127.0.0.1:8080/", APIKey: "k"}, wantURL: "http://127.0.0.1:8080"},
		{name: "prefix", opts: Options{BaseURL: "https://example.test/api/", APIKey: "k"}, wantURL: "https://example.test/api"},
		{name: "no key", opts: Options{BaseURL: "http://127.0.0.1:1"}, wantErr: "api key is empty"},
		{name: "key with newline", opts: Options{APIKey: "a\nb"}, wantErr: "api key holds"},
		{name: "ftp", opts: Options{BaseURL: "ftp://example.test", APIKey: "k"}, wantErr: "not http or https"},
		{name: "no host", opts: Options{BaseURL: "http://", APIKey: "k"}, wantErr: "no host"},
		{name: "relative", opts: Options{BaseURL: "/v1", APIKey: "k"}, wantErr: "not http or https"},
		{name: "unparsable", opts: Options{BaseURL: "http://[::1", APIKey: "k"}, wantErr: "parse base url"},
		{name: "query", opts: Options{BaseURL: "http://h.test/?a=b", APIKey: "k"}, wantErr: "must not carry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New() error = %v, want %q", err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "new client: ") {
					t.Fatalf("error %q does not start with the op", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got, want := c.BaseURL(), tt.wantURL; got != want {
				t.Fatalf("BaseURL() = %q, want %q", got, want)
			}
		})
	}
}

// TestClient_Endpoints plays each endpoint on a loopback server and checks
// the request the client makes and the value it decodes.
func TestClient_Endpoints(t *testing.T) {
	version := map[string]any{
		"datasetId": "ds_a", "version": 7, "previousVersion": 5, "schemaVersion": "2.1",
		"publishedAt": "2026-11-20T10:00:00Z", "rowCount": 3, "resyncRequired": false,
		"files": map[string]any{"snapshot": []any{map[string]any{"url": "http://files.test/p0.parquet?sig=x", "bytes": 10, "sha256": "ab"}}},
	}
	schema := map[string]any{"datasetId": "ds_a", "schemaVersion": "2.1", "columns": []any{map[string]any{"name": "id", "type": "string"}}}
	tests := []struct {
		name   string
		call   func(context.Context, *Client) (any, error)
		method string
		path   string
		query  string
		body   string
		answer any
		check  func(t *testing.T, got any)
	}{
		{
			name:   "manifest",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Manifest(ctx, "sub_1", "") },
			method: "GET", path: "/v1/feeds/subscriptions/sub_1/manifest",
			answer: map[string]any{"subscriptionId": "sub_1", "eventCursor": "c42", "generatedAt": "2026-11-20T10:00:00Z",
				"datasets":    []any{map[string]any{"datasetId": "ds_a", "version": 7, "files": map[string]any{}}},
				"unavailable": []any{map[string]any{"datasetId": "ds_b", "reason": "building"}}},
			check: func(t *testing.T, got any) {
				m := got.(*ploti.Manifest)
				if m.EventCursor != "c42" || len(m.Datasets) != 1 || m.Datasets[0].Version != 7 || m.Unavailable[0].Reason != "building" {
					t.Fatalf("manifest = %+v", m)
				}
			},
		},
		{
			name:   "manifest as of",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Manifest(ctx, "sub_1", "c 7/x") },
			method: "GET", path: "/v1/feeds/subscriptions/sub_1/manifest", query: "asOf=c+7%2Fx",
			answer: map[string]any{"subscriptionId": "sub_1", "eventCursor": "c 7/x"},
		},
		{
			name: "events",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Events(ctx, "sub_1", "c1", 900, []string{ploti.EventAdded, ploti.EventUpdated})
			},
			method: "GET", path: "/v1/feeds/subscriptions/sub_1/events",
			query: "cursor=c1&limit=500&types=feed.dataset.added%2Cfeed.dataset.updated",
			answer: map[string]any{"nextCursor": "c2", "events": []any{map[string]any{
				"id": "evt_1", "type": "feed.dataset.updated", "timestamp": "2026-11-20T10:00:01Z", "subscriptionId": "sub_1",
				"data": map[string]any{"datasetId": "ds_a", "version": 7, "previousVersion": 5, "schemaVersion": "2.1"}}}},
			check: func(t *testing.T, got any) {
				p := got.(*ploti.EventPage)
				if p.NextCursor != "c2" || len(p.Events) != 1 || *p.Events[0].Data.PreviousVersion != 5 {
					t.Fatalf("page = %+v", p)
				}
			},
		},
		{
			name:   "events from the start",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Events(ctx, "sub_1", "", 0, nil) },
			method: "GET", path: "/v1/feeds/subscriptions/sub_1/events",
			answer: map[string]any{"nextCursor": "c0", "events": []any{}},
		},
		{
			name:   "subscription",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Subscription(ctx, "sub_1") },
			method: "GET", path: "/v1/feeds/subscriptions/sub_1",
			answer: map[string]any{"id": "sub_1", "places": []string{"fl-counties"}, "revision": 3},
			check: func(t *testing.T, got any) {
				if s := got.(*ploti.Subscription); s.Revision != 3 || s.Places[0] != "fl-counties" {
					t.Fatalf("subscription = %+v", s)
				}
			},
		},
		{
			name:   "dataset",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Dataset(ctx, "ds_a") },
			method: "GET", path: "/v1/feeds/datasets/ds_a",
			answer: map[string]any{"id": "ds_a", "current": map[string]any{"version": 7}, "status": "available"},
			check: func(t *testing.T, got any) {
				if d := got.(*ploti.Dataset); d.Current == nil || d.Current.Version != 7 {
					t.Fatalf("dataset = %+v", d)
				}
			},
		},
		{
			name:   "version",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Version(ctx, "ds_a", 7) },
			method: "GET", path: "/v1/feeds/datasets/ds_a/versions/7",
			answer: version,
			check: func(t *testing.T, got any) {
				v := got.(*ploti.Version)
				if v.Version != 7 || *v.PreviousVersion != 5 || *v.Files.Snapshot[0].Bytes != 10 {
					t.Fatalf("version = %+v", v)
				}
			},
		},
		{
			name: "links",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Links(ctx, "ds_a", 7, []string{"snapshot", "changes"})
			},
			method: "POST", path: "/v1/feeds/datasets/ds_a/versions/7/links",
			body:   `{"files":["snapshot","changes"]}`,
			answer: version,
		},
		{
			name:   "schema current",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Schema(ctx, "ds_a", 0) },
			method: "GET", path: "/v1/feeds/datasets/ds_a/schema",
			answer: schema,
		},
		{
			name:   "schema at version",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Schema(ctx, "ds_a", 7) },
			method: "GET", path: "/v1/feeds/datasets/ds_a/schema", query: "version=7",
			answer: schema,
			check: func(t *testing.T, got any) {
				if s := got.(*ploti.Schema); s.SchemaVersion != "2.1" || s.Columns[0].Name != "id" {
					t.Fatalf("schema = %+v", s)
				}
			},
		},
		{
			name:   "schemas object",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Schemas(ctx, "ds_a") },
			method: "GET", path: "/v1/feeds/datasets/ds_a/schemas",
			answer: map[string]any{"schemas": []any{schema, schema}},
			check: func(t *testing.T, got any) {
				if s := got.([]ploti.Schema); len(s) != 2 {
					t.Fatalf("schemas = %+v", s)
				}
			},
		},
		{
			name:   "schemas array",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Schemas(ctx, "ds_a") },
			method: "GET", path: "/v1/feeds/datasets/ds_a/schemas",
			answer: []any{schema},
			check: func(t *testing.T, got any) {
				if s := got.([]ploti.Schema); len(s) != 1 {
					t.Fatalf("schemas = %+v", s)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, tt.answer) })
			c, _ := MustClient(t, srv.URL, func(o *Options) { o.UserAgent = "test-agent/1" })
			got, err := tt.call(context.Background(), c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.method || r.Path != tt.path || r.RawQuery != tt.query {
				t.Fatalf("request = %s %s?%s, want %s %s?%s", r.Method, r.Path, r.RawQuery, tt.method, tt.path, tt.query)
			}
			if got, want := r.Auth, "Bearer "+testKey; got != want {
				t.Fatalf("Authorization = %q, want %q", got, want)
			}
			if got, want := r.UserAgent, "test-agent/1"; got != want {
				t.Fatalf("User-Agent = %q, want %q", got, want)
			}
			if got, want := string(r.Body), tt.body; got != want {
				t.Fatalf("body = %q, want %q", got, want)
			}
			req, _ := http.NewRequest(r.Method, srv.URL+r.Path, nil)
			if got, want := isHeavy(req), strings.HasSuffix(tt.path, "/manifest"); got != want {
				t.Fatalf("isHeavy = %v, want %v", got, want)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

// TestClient_Malformed: a 2xx body that is not the JSON expected is
// ErrMalformed, names the call and is not retried.
func TestClient_Malformed(t *testing.T) {
	tests := []struct {
		name string
		body string
		call func(context.Context, *Client) error
		want string
	}{
		{"not json", `<html>oops</html>`, func(ctx context.Context, c *Client) error { _, err := c.Dataset(ctx, "ds_a"); return err }, "get dataset ds_a: GET /v1/feeds/datasets/ds_a: malformed response: invalid character"},
		{"null version", `null`, func(ctx context.Context, c *Client) error { _, err := c.Version(ctx, "ds_a", 1); return err }, "get version ds_a v1: GET /v1/feeds/datasets/ds_a/versions/1: malformed response: version has no datasetId"},
		{"page of events without cursor", `{"events": [{"id": "e1", "type": "ping", "timestamp": "2026-11-20T10:00:01Z", "data": {}}]}`, func(ctx context.Context, c *Client) error { _, err := c.Events(ctx, "s", "c", 0, nil); return err }, "page has no nextCursor"},
		{"manifest without cursor", `{"datasets": []}`, func(ctx context.Context, c *Client) error { _, err := c.Manifest(ctx, "s", ""); return err }, "manifest has no eventCursor"},
		{"wrong type", `{"id": 5}`, func(ctx context.Context, c *Client) error { _, err := c.Subscription(ctx, "s"); return err }, "cannot unmarshal number"},
		{"schemas wrong shape", `{"x": 1}`, func(ctx context.Context, c *Client) error { _, err := c.Schemas(ctx, "ds_a"); return err }, `no "schemas" list`},
		{"truncated", `{"id": "ds_a", "ti`, func(ctx context.Context, c *Client) error { _, err := c.Dataset(ctx, "ds_a"); return err }, "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tt.body)) })
			c, sl := MustClient(t, srv.URL)
			err := tt.call(context.Background(), c)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %q, want it to contain %q", err, tt.want)
			}
			if n := len(srv.Requests()); n != 1 || len(sl.Waits()) != 0 {
				t.Fatalf("requests = %d, waits = %v: malformed answers are not retried", n, sl.Waits())
			}
		})
	}
}

// TestClient_BearerOnlyToAPIHost guards docs/wire.md 1: the key goes only to
// the base URL's host, never to a file host or a foreign links.version.
func TestClient_BearerOnlyToAPIHost(t *testing.T) {
	content := []byte("id,name\n1,a\n")
	files := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write(content) })
	api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"datasetId": "ds_a", "version": 7,
			"files": map[string]any{"snapshot": []any{map[string]any{"url": files.URL + "/p0.csv?sig=abc"}}}})
	})
	c, _ := MustClient(t, api.URL)
	ctx := context.Background()

	v, err := c.VersionByLink(ctx, api.URL+"/v1/feeds/datasets/ds_a/versions/7")
	if err != nil {
		t.Fatalf("VersionByLink on the api host: %v", err)
	}
	if _, err := c.Download(ctx, v.Files.Snapshot[0], "p0.csv", nil); err != nil {
		t.Fatalf("Download: %v", err)
	}
	// A links.version on another port or host, or another scheme, is refused
	// before anything is sent.
	foreign := []string{
		files.URL + "/v1/feeds/datasets/ds_a/versions/7",
		strings.Replace(api.URL, "127.0.0.1", "localhost", 1) + "/v1/feeds/datasets/ds_a/versions/7",
		strings.Replace(api.URL, "http://", "https://", 1) + "/v1/feeds/datasets/ds_a/versions/7",
		"http://user:pw@" + strings.TrimPrefix(api.URL, "http://") + "/v1/x",
		"::not a url",
	}
	for _, link := range foreign {
		if _, err := c.VersionByLink(ctx, link); !errors.Is(err, ErrForeignLink) {
			t.Fatalf("VersionByLink(%q) err = %v, want ErrForeignLink", link, err)
		}
	}

	if got := api.Requests(); len(got) != 1 || got[0].Auth != "Bearer "+testKey {
		t.Fatalf("api requests = %+v, want one with the bearer", got)
	}
	fr := files.Requests()
	if len(fr) != 1 {
		t.Fatalf("file host saw %d requests, want 1 (the download)", len(fr))
	}
	for _, r := range fr {
		if r.Auth != "" {
			t.Fatalf("file host got Authorization %q", r.Auth)
		}
	}
}

// TestClient_Redirects: a redirect to another host (or port) or from https
// is refused; one on the same host is followed.
func TestClient_Redirects(t *testing.T) {
	other := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{"id": "ds_a"}) })
	api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/feeds/datasets/away":
			http.Redirect(w, r, other.URL+"/v1/feeds/datasets/ds_a?sig=secret", http.StatusFound)
		case "/v1/feeds/datasets/moved":
			http.Redirect(w, r, "/v1/feeds/datasets/ds_a", http.StatusMovedPermanently)
		default:
			writeJSON(w, 200, map[string]any{"id": "ds_a"})
		}
	})
	c, sl := MustClient(t, api.URL)
	ctx := context.Background()

	_, err := c.Dataset(ctx, "away")
	if !errors.Is(err, ErrRedirect) {
		t.Fatalf("Dataset(away) err = %v, want ErrRedirect", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error shows the redirect's query: %v", err)
	}
	if n := len(other.Requests()); n != 0 {
		t.Fatalf("other host saw %d requests", n)
	}
	if len(sl.Waits()) != 0 {
		t.Fatalf("a refused redirect was retried: %v", sl.Waits())
	}
	if _, err := c.Dataset(ctx, "moved"); err != nil {
		t.Fatalf("same-host redirect: %v", err)
	}

	// checkRedirect on its own: https to http on the same host.
	from, _ := http.NewRequest("GET", "https://h.test/a", nil)
	to, _ := http.NewRequest("GET", "http://h.test/b", nil)
	if err := checkRedirect(to, []*http.Request{from}); !errors.Is(err, ErrRedirect) {
		t.Fatalf("https to http: err = %v, want ErrRedirect", err)
	}
	to2, _ := http.NewRequest("GET", "https://h.test:443/b", nil)
	if err := checkRedirect(to2, []*http.Request{from}); err != nil {
		t.Fatalf("same origin with explicit port: %v", err)
	}
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://api.ploti.ai", "https://api.ploti.ai:443/v1/x", true},
		{"https://API.ploti.ai", "https://api.ploti.ai/v1/x", true},
		{"https://api.ploti.ai", "http://api.ploti.ai/v1/x", false},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8081/v1", false},
		{"http://127.0.0.1:80", "http://127.0.0.1/v1", true},
		{"https://api.ploti.ai", "https://api.ploti.ai.evil.test/v1", false},
	}
	for _, tt := range tests {
		a, b := mustParse(t, tt.a), mustParse(t, tt.b)
		if got := sameOrigin(a, b); got != tt.want {
			t.Errorf("sameOrigin(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClient_EventsLimit(t *testing.T) {
	c, _ := MustClient(t, "http://127.0.0.1:1")
	if _, err := c.Events(context.Background(), "s", "", -1, nil); err == nil {
		t.Fatal("negative limit accepted")
	}
	if got, want := c.endpoint(nil, "v1", "feeds", "datasets", "a b/c"), "http://127.0.0.1:1/v1/feeds/datasets/a%20b%2Fc"; !reflect.DeepEqual(got, want) {
		t.Fatalf("endpoint = %q, want %q", got, want)
	}
}

// An empty last page without nextCursor means caught up, not a malformed
// answer (a tolerant reader: docs/wire.md asks to accept an absent field).
func TestClient_EmptyPageWithoutCursor(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"events": [], "nextCursor": null}`)) })
	c, _ := MustClient(t, srv.URL)
	p, err := c.Events(context.Background(), "s", "c", 0, nil)
	if err != nil || len(p.Events) != 0 {
		t.Fatalf("page %+v, err %v", p, err)
	}
}
