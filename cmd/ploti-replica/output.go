package main

// Helpers that print a command's answer, in one voice for every command.
//
// JSON (--json): camelCase keys; a list is a bare array, [] when empty
// (never wrapped in an object); a value that is null or not known is left
// out; numbers are numbers (a DECIMAL a JSON number written with its
// column's scale); booleans are booleans; timestamps are RFC 3339 in UTC;
// durations are seconds (durationSeconds).
//
// Text: tables aligned by text/tabwriter; timestamps in RFC 3339 UTC
// (2026-12-04T04:09:00Z); a row or a detail as key=value pairs, never as
// a JSON object.

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// writeJSON writes v to w as indented JSON, with every null member of an
// object left out (nested ones too: a row's NULL column, a detail's null)
// and every time in UTC.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = dropNulls(b)
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// member is one key and value of a JSON object.
type member struct {
	Key   string
	Value json.RawMessage
}

// object is a JSON object whose members keep their order.
type object []member

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// parseObject reads a JSON object, its members in order; false when raw
// is not an object.
func parseObject(raw json.RawMessage) (object, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	obj := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		obj = append(obj, member{key, v})
	}
	return obj, true
}

// dropNulls leaves out every null member of every object in raw (the
// elements of an array stay, null or not), and writes times in UTC.
func dropNulls(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) > 0 && t[0] == '{':
		obj, ok := parseObject(t)
		if !ok {
			return raw
		}
		kept := object{}
		for _, m := range obj {
			if string(bytes.TrimSpace(m.Value)) == "null" {
				continue
			}
			kept = append(kept, member{m.Key, dropNulls(m.Value)})
		}
		b, _ := kept.MarshalJSON()
		return b
	case len(t) > 0 && t[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(t, &items) != nil {
			return raw
		}
		for i := range items {
			items[i] = dropNulls(items[i])
		}
		b, err := json.Marshal(items)
		if err != nil {
			return raw
		}
		return b
	case len(t) > 0 && t[0] == '"':
		return utcTime(t)
	}
	return raw
}

// utcTime writes a JSON string that is an RFC 3339 time with another
// offset in UTC, the same instant; any other value stays.
func utcTime(raw json.RawMessage) json.RawMessage {
	var s string
	if len(raw) < 22 || json.Unmarshal(raw, &s) != nil || strings.HasSuffix(s, "Z") {
		return raw
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return raw
	}
	b, err := json.Marshal(t.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return raw
	}
	return b
}

// table is a tab-aligned text table on w.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// textTime is the one way text and JSON write a time: RFC 3339 in UTC.
func textTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// keyValues writes a JSON object for people as key=value pairs in its
// order (a nested object's members as key.member=value), leaving out null
// members and the keys skip names; a value with a space or a quote is
// quoted. Text that is not an object stays as it is.
func keyValues(raw json.RawMessage, skip ...string) string {
	obj, ok := parseObject(raw)
	if !ok {
		return string(raw)
	}
	return strings.Join(keyValueParts(obj, "", skip), " ")
}

func keyValueParts(obj object, prefix string, skip []string) []string {
	var parts []string
	for _, m := range obj {
		if slices.Contains(skip, m.Key) || strings.TrimSpace(string(m.Value)) == "null" {
			continue
		}
		if inner, ok := parseObject(m.Value); ok {
			parts = append(parts, keyValueParts(inner, prefix+m.Key+".", nil)...)
			continue
		}
		parts = append(parts, prefix+m.Key+"="+valueWord(m.Value))
	}
	return parts
}

// valueWord is one JSON value for people: a string unquoted unless it
// holds a space, a quote or is empty; a list's elements in brackets; an
// object's members as key=value in parentheses.
func valueWord(v json.RawMessage) string {
	if obj, ok := parseObject(v); ok {
		return "(" + strings.Join(keyValueParts(obj, "", nil), " ") + ")"
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if s == "" || strings.ContainsAny(s, " \t\"=") {
			return strconv.Quote(s)
		}
		return s
	}
	var items []json.RawMessage
	if json.Unmarshal(v, &items) == nil {
		words := make([]string, len(items))
		for i, it := range items {
			words[i] = valueWord(it)
		}
		return "[" + strings.Join(words, ", ") + "]"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) == nil {
		return buf.String()
	}
	return string(v)
}

// wordOf is a typed value (typedText's) for people, quoted as valueWord
// quotes it.
func wordOf(v any) string {
	if s, ok := v.(string); ok {
		b, _ := json.Marshal(s)
		return valueWord(b)
	}
	return textOf(v)
}
