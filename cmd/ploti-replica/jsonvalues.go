package main

// Typed values for the output: a table's column types read from the
// file, and the conversions that give each value as its type says, in
// JSON and in text (numbers as numbers, decimals with their scale,
// booleans as booleans, timestamps in RFC 3339 UTC).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// kind is what a column's type means for the output.
type kind int

const (
	kindText kind = iota
	kindInt
	kindFloat
	kindDecimal
	kindBool
	kindTimestamp
	kindJSON
)

// colType is a column's type as the output needs it; a list's elem is its
// elements' type.
type colType struct {
	kind  kind
	scale int
	list  bool
}

// colTypes are a table's column types by name.
type colTypes map[string]colType

// tableColumns are a table's column types: main the table's (the rows
// now), hist its history view's (a column retyped over the versions is
// text there).
type tableColumns struct{ main, hist colTypes }

// allTableTypes reads the column types of every table and view in the
// file, by table name, in one query (a file may hold thousands).
func allTableTypes(ctx context.Context, db *sql.DB) (map[string]tableColumns, error) {
	rows, err := db.QueryContext(ctx, `SELECT table_schema, table_name, column_name, data_type, coalesce(numeric_scale, 0)
		FROM information_schema.columns
		WHERE table_schema NOT IN ('_ploti', '_ploti_history', 'information_schema', 'pg_catalog')`)
	if err != nil {
		return nil, fmt.Errorf("read the column types: %w", err)
	}
	defer rows.Close()
	out := map[string]tableColumns{}
	for rows.Next() {
		var schema, table, name, typ string
		var scale int
		if err := rows.Scan(&schema, &table, &name, &typ, &scale); err != nil {
			return nil, fmt.Errorf("read the column types: %w", err)
		}
		tc, ok := out[table]
		if !ok {
			tc = tableColumns{main: colTypes{}, hist: colTypes{}}
			out[table] = tc
		}
		if schema == "history" {
			tc.hist[name] = parseType(typ, scale)
		} else {
			tc.main[name] = parseType(typ, scale)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the column types: %w", err)
	}
	return out, nil
}

// parseType maps a DuckDB or PostgreSQL type name to its kind.
func parseType(typ string, scale int) colType {
	t := strings.ToUpper(strings.TrimSpace(typ))
	var c colType
	if strings.HasSuffix(t, "[]") {
		c.list = true
		t = strings.TrimSuffix(t, "[]")
	}
	switch {
	case strings.HasPrefix(t, "DECIMAL"), strings.HasPrefix(t, "NUMERIC"):
		c.kind, c.scale = kindDecimal, scale
	case strings.Contains(t, "INT"):
		c.kind = kindInt
	case t == "DOUBLE", t == "FLOAT", t == "REAL", t == "DOUBLE PRECISION":
		c.kind = kindFloat
	case t == "BOOLEAN":
		c.kind = kindBool
	case strings.HasPrefix(t, "TIMESTAMP"):
		c.kind = kindTimestamp
	case t == "JSON", t == "JSONB":
		c.kind = kindJSON
	}
	return c
}

// over is t with o's types laid over it.
func (t colTypes) over(o colTypes) colTypes {
	out := colTypes{}
	for k, v := range t {
		out[k] = v
	}
	for k, v := range o {
		out[k] = v
	}
	return out
}

// typedText is a value the file gave as text (nil for NULL), typed by its
// column: a JSON-ready value (json.Number, bool, string, []any), nil for
// NULL.
func (t colTypes) typedText(col string, s *string) any {
	if s == nil {
		return nil
	}
	c := t[col]
	if c.list {
		if items, ok := splitList(*s); ok {
			out := make([]any, len(items))
			for i, it := range items {
				out[i] = scalarText(colType{kind: c.kind, scale: c.scale}, it)
			}
			return out
		}
		return *s
	}
	return scalarText(c, *s)
}

// scalarText types one value's text; text that does not read as its type
// stays a string.
func scalarText(c colType, s string) any {
	switch c.kind {
	case kindInt, kindFloat:
		if isJSONNumber(s) {
			return json.Number(s)
		}
	case kindDecimal:
		if n, ok := decimalText(s, c.scale); ok {
			return json.Number(n)
		}
	case kindBool:
		switch strings.ToLower(s) {
		case "true", "t":
			return true
		case "false", "f":
			return false
		}
	case kindTimestamp:
		if ts, ok := timestampText(s); ok {
			return ts
		}
	case kindJSON:
		if json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	return s
}

// splitList reads a list's text, DuckDB's "[a, b]" or PostgreSQL's
// "{a,b}"; false when an element is quoted or nested (it stays text).
func splitList(s string) ([]string, bool) {
	sep := ", "
	switch {
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
	case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
		sep = ","
	default:
		return nil, false
	}
	inner := s[1 : len(s)-1]
	if strings.ContainsAny(inner, `"'[]{}`) {
		return nil, false
	}
	if inner == "" {
		return []string{}, true
	}
	return strings.Split(inner, sep), true
}

func isJSONNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil && s != "" && s[0] != '"'
}

// decimalText writes a decimal with its column's scale: 12500 and 12500.0
// in DECIMAL(12,2) are 12500.00.
func decimalText(s string, scale int) (string, bool) {
	if !isJSONNumber(s) {
		return "", false
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE") || len(frac) > scale {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "", false
		}
		return strconv.FormatFloat(f, 'f', scale, 64), true
	}
	if scale == 0 {
		return intPart, true
	}
	return intPart + "." + frac + strings.Repeat("0", scale-len(frac)), true
}

// timestampLayouts are how DuckDB and PostgreSQL write timestamps as text.
var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"}

// timestampText is a timestamp in RFC 3339 UTC, its fraction of a second
// kept; a timestamp without a zone is taken as UTC.
func timestampText(s string) (string, bool) {
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC().Format(time.RFC3339Nano), true
		}
	}
	return "", false
}

// typedRow gives a row the file wrote as a JSON object (to_json) its
// columns' types: decimals with their scale, timestamps in RFC 3339 UTC;
// the columns keep their order.
func (t colTypes) typedRow(raw json.RawMessage) json.RawMessage {
	obj, ok := parseObject(raw)
	if !ok {
		return raw
	}
	for i, m := range obj {
		c, known := t[m.Key]
		if !known || c.list || (c.kind != kindDecimal && c.kind != kindTimestamp) {
			continue
		}
		var s string
		if json.Unmarshal(m.Value, &s) != nil {
			s = string(bytes.TrimSpace(m.Value))
		}
		if b, err := json.Marshal(scalarText(c, s)); err == nil {
			obj[i].Value = b
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return b
}

// textOf writes a typed value for people: text as it is, numbers and
// booleans as JSON writes them, lists comma-separated, NULL as NULL.
func textOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = textOf(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case json.RawMessage:
		return string(x)
	}
	return fmt.Sprint(v)
}
