package postgres

import (
	"context"
	"testing"
)

// NUL, which PostgreSQL's text and jsonb refuse, becomes U+FFFD: a raw
// NUL byte in text, and an escaped one in JSON, while an escaped
// backslash followed by "u0000" is the six characters it says.
func TestNUL_replacedInTextAndJSON(t *testing.T) {
	text := map[string]string{
		"plain":        "plain",
		"a\x00b\x00":   "a\uFFFDb\uFFFD",
		`\u0000 stays`: `\u0000 stays`,
	}
	for in, want := range text {
		if got := string(appendText(nil, in)); got != want {
			t.Errorf("text %q = %q, want %q", in, got, want)
		}
	}
	jsons := map[string]string{
		`{"a": "b"}`:              `{"a": "b"}`,
		`{"a": "x\u0000y"}`:       `{"a": "x\ufffdy"}`,
		`["\\u0000", "\\\u0000"]`: `["\\u0000", "\\\ufffd"]`,
		`{"\u0000": 1}`:           `{"\ufffd": 1}`,
	}
	for in, want := range jsons {
		if got := string(appendJSONText(nil, in)); got != want {
			t.Errorf("json %s = %s, want %s", in, got, want)
		}
	}
}

// The replaced values are what PostgreSQL then holds: jsonb takes the
// JSON, and reads the escaped backslash back as a backslash.
func TestNUL_jsonbTakesTheReading(t *testing.T) {
	ctx := context.Background()
	db, _ := mustOpen(t)
	var s, esc string
	in := string(appendJSONText(nil, `{"s": "x\u0000y", "e": "\\u0000"}`))
	if err := db.Conn().QueryRow(ctx, "SELECT $1::jsonb->>'s', $1::jsonb->>'e'", in).Scan(&s, &esc); err != nil {
		t.Fatal(err)
	}
	if s != "x\uFFFDy" || esc != `\u0000` {
		t.Fatalf("jsonb read %q %q", s, esc)
	}
}

// Rows read whole (a watched dataset's NDJSON) with NUL in a string load
// with U+FFFD; PostgreSQL refused them at COPY ("invalid byte sequence
// for encoding UTF8: 0x00"), on every sync.
func TestTx_LoadRows_NUL(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	file := mustNDJSON(t, `{"_ploti_record_id":"r1","s":"a\u0000b"}`)
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadRows(ctx, "w", jsonCols, []string{file}); return err }); err != nil {
		t.Fatal(err)
	}
	if got := state(t, mustReader(t, u), "SELECT s FROM w"); got != "a\uFFFDb" {
		t.Fatalf("s = %q, want a\uFFFDb", got)
	}
}
