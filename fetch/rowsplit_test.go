package fetch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// splitRows must read every page encoding/json reads as the same rows and
// envelope; it refuses what is not a page of object rows.
func TestSplitRows(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		rows       int64
		wantErr    string
	}{
		{"rows last", `{"datasetId":"ds","version":3,"rows":[{"a":1},{"b":"x"}]}`, 2, ""},
		{"rows first", `{"rows":[{"a":1}],"version":3,"nextCursor":"c"}`, 1, ""},
		{"no rows", `{"version":null,"rows":[],"nextCursor":null}`, 0, ""},
		{"rows null", `{"version":null,"rows":null}`, 0, ""},
		{"no rows key", `{"version":3}`, 0, ""},
		{"strings with brackets, quotes and escapes", `{"rows":[{"s":"a]b}c{[\"q\"\\","t":"\u00e9\n"}],"version":1}`, 1, ""},
		{"nested values", `{"rows":[{"g":{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]]},"l":[[1,2],[]],"n":-1.5e+3,"b":true,"z":null}],"version":1}`, 1, ""},
		{"pretty", "{\n  \"version\": 1,\n  \"rows\": [\n    {\n      \"a\": \"x\\ny\"\n    },\n    {\"b\": 2}\n  ]\n}\n", 2, ""},
		{"a row that is not an object", `{"rows":[{"a":1},2],"version":1}`, 0, "row 1 is not a JSON object"},
		{"a raw line break in a string", "{\"rows\":[{\"a\":\"x\ny\"}],\"version\":1}", 0, "raw control character"},
		{"a string not closed", `{"rows":[{"a":"x}]}`, 0, "not closed"},
		{"rows twice", `{"rows":[],"rows":[]}`, 0, "twice"},
		{"not an object", `[{"a":1}]`, 0, "not a JSON object"},
		{"cut short", `{"rows":[{"a":1}`, 0, "no comma or ] after row 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			env, n, err := splitRows([]byte(tc.body), w)
			w.Flush()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || n != tc.rows {
				t.Fatalf("rows %d, err %v; want %d", n, err, tc.rows)
			}
			assertSameAsEncodingJSON(t, []byte(tc.body), env, out.Bytes())
		})
	}
}

// assertSameAsEncodingJSON compares splitRows' output with what
// encoding/json reads of body.
func assertSameAsEncodingJSON(t *testing.T, body, env, lines []byte) {
	t.Helper()
	var want struct {
		Rows []json.RawMessage `json:"rows"`
		Rest map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	var got []string
	for _, l := range bytes.Split(bytes.TrimSuffix(lines, []byte("\n")), []byte("\n")) {
		if len(l) > 0 {
			got = append(got, compact(t, l))
		}
	}
	if len(got) != len(want.Rows) {
		t.Fatalf("%d rows, encoding/json reads %d", len(got), len(want.Rows))
	}
	for i, r := range want.Rows {
		if got[i] != compact(t, r) {
			t.Fatalf("row %d = %s, encoding/json reads %s", i, got[i], compact(t, r))
		}
	}
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(env, &a); err != nil {
		t.Fatalf("envelope %s: %v", env, err)
	}
	json.Unmarshal(body, &b)
	for k, v := range b {
		if k == "rows" {
			continue
		}
		if compact(t, a[k]) != compact(t, v) {
			t.Fatalf("envelope %s = %s, want %s", k, a[k], v)
		}
	}
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("compact %s: %v", b, err)
	}
	return out.String()
}

// FuzzSplitRows: on any page encoding/json reads as an object whose rows
// are objects, splitRows gives the same rows and envelope.
func FuzzSplitRows(f *testing.F) {
	for _, s := range []string{`{"rows":[{"a":1}],"version":2}`, `{"version":1,"rows":[{"s":"]\"}"},{"l":[[],{}]}],"n":null}`,
		"{\n\"rows\" : [ {\"a\" : [1, 2]} ] }"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p struct {
			Rows []map[string]json.RawMessage `json:"rows"`
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) != nil || json.Unmarshal(body, &p) != nil {
			return
		}
		if bytes.Count(body, []byte(`"rows"`)) > 1 {
			return // encoding/json takes the last of repeated keys; splitRows refuses them
		}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		env, _, err := splitRows(body, w)
		w.Flush()
		if err != nil {
			t.Fatalf("splitRows(%q): %v", body, err)
		}
		assertSameAsEncodingJSON(t, body, env, out.Bytes())
	})
}
