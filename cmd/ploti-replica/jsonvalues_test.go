package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// A value the file gives as text takes its column's type: decimals keep
// their scale, timestamps become RFC 3339 UTC, booleans and lists typed;
// what does not read as its type stays text.
func TestTypedText(t *testing.T) {
	types := colTypes{
		"bond":   parseType("DECIMAL(12,2)", 2),
		"amount": parseType("numeric", 3),
		"units":  parseType("INTEGER", 0),
		"score":  parseType("DOUBLE", 0),
		"ok":     parseType("BOOLEAN", 0),
		"at":     parseType("TIMESTAMP WITH TIME ZONE", 0),
		"naive":  parseType("TIMESTAMP", 0),
		"tags":   parseType("VARCHAR[]", 0),
		"nums":   parseType("INTEGER[]", 0),
		"doc":    parseType("JSON", 0),
	}
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		col  string
		text *string
		want any
	}{
		{"bond", s("12500"), json.Number("12500.00")},
		{"bond", s("12500.0"), json.Number("12500.00")},
		{"bond", s("-3.5"), json.Number("-3.50")},
		{"bond", s("1e3"), json.Number("1000.00")},
		{"amount", s("7.25"), json.Number("7.250")},
		{"units", s("3"), json.Number("3")},
		{"score", s("90.5"), json.Number("90.5")},
		{"score", s("inf"), "inf"},
		{"ok", s("true"), true},
		{"ok", s("f"), false},
		{"at", s("2026-09-01 22:00:00+00"), "2026-09-01T22:00:00Z"},
		{"at", s("2026-09-01 22:00:00-05"), "2026-09-02T03:00:00Z"},
		{"at", s("2026-09-01 22:00:00.5+00"), "2026-09-01T22:00:00.5Z"},
		{"naive", s("2026-09-01 22:00:00"), "2026-09-01T22:00:00Z"},
		{"tags", s("[handwashing, storage]"), []any{"handwashing", "storage"}},
		{"tags", s("[]"), []any{}},
		{"tags", s(`["a, b"]`), `["a, b"]`},
		{"nums", s("{1,2}"), []any{json.Number("1"), json.Number("2")}},
		{"doc", s(`{"a":1}`), json.RawMessage(`{"a":1}`)},
		{"other", s("x"), "x"},
		{"bond", nil, nil},
	} {
		if got := types.typedText(tc.col, tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %v: got %#v, want %#v", tc.col, tc.text, got, tc.want)
		}
	}
}

// A row DuckDB's to_json wrote keeps its columns' order, and gets its
// decimals' scale and its timestamps in RFC 3339 UTC.
func TestTypedRow(t *testing.T) {
	types := colTypes{"bond": parseType("DECIMAL(12,2)", 2), "at": parseType("TIMESTAMP WITH TIME ZONE", 0)}
	got := types.typedRow(json.RawMessage(`{"z":1,"bond":12500.0,"at":"2026-09-01 22:00:00+00","a":null}`))
	if want := `{"z":1,"bond":12500.00,"at":"2026-09-01T22:00:00Z","a":null}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// writeJSON leaves out every null member, however deep, keeps the members'
// order and a list's nulls, and writes times in UTC.
func TestWriteJSON_dropsNulls(t *testing.T) {
	var buf bytes.Buffer
	v := map[string]any{"detail": json.RawMessage(`{"keyColumns":null,"b":[null,{"c":null,"d":"2026-09-01T22:00:00-05:00"}],"a":1}`)}
	if err := writeJSON(&buf, v); err != nil {
		t.Fatal(err)
	}
	var compact map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &compact); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(compact["detail"])
	if want := `{"b":[null,{"d":"2026-09-02T03:00:00Z"}],"a":1}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// keyValues writes an object for people: key=value in order, a nested
// object's members dotted, a list in brackets, strings with spaces quoted.
func TestKeyValues(t *testing.T) {
	got := keyValues(json.RawMessage(`{"_ploti_record_id":"r1","name":"Cafe 1","n":2,"x":null,"c":{"k":[1,2],"m":{"a":"b"}},"l":[{"p":"q"}]}`), "_ploti_record_id")
	if want := `name="Cafe 1" n=2 c.k=[1, 2] c.m.a=b l=[(p=q)]`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}
