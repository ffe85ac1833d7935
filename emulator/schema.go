package emulator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

var columnTypes = []string{"string", "integer", "number", "decimal", "boolean", "date", "timestamp", "geometry", "list", "json"}

// schemaDoc is one schema version of a dataset, as GET .../schema serves it.
type schemaDoc struct {
	Version string
	Columns []Column
	Key     []string
	Change  *schemaChange // nil for the first schema (bump null)
}

// schemaChange is a schema's changeFromPrevious.
type schemaChange struct {
	Bump    string // "major" or "minor"
	Added   []Column
	Removed []Column
	Retyped [][2]Column
	KeyFrom []string
	KeyTo   []string
	KeyDiff bool
}

func validateSchema(cols []Column, key []string) error {
	seen := map[string]bool{}
	for _, c := range cols {
		if c.Name == "" || strings.HasPrefix(c.Name, "_ploti_") {
			return fmt.Errorf("%w: bad column name %q", ErrInvalid, c.Name)
		}
		if seen[c.Name] {
			return fmt.Errorf("%w: column %q twice", ErrInvalid, c.Name)
		}
		seen[c.Name] = true
		if err := validateType(c); err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
	}
	for _, k := range key {
		if !seen[k] {
			return fmt.Errorf("%w: key column %q not in columns", ErrInvalid, k)
		}
	}
	return nil
}

func validateType(c Column) error {
	if !slices.Contains(columnTypes, c.Type) {
		return fmt.Errorf("%w: unknown type %q", ErrInvalid, c.Type)
	}
	switch c.Type {
	case "list":
		if c.Items == nil {
			return fmt.Errorf("%w: list without items", ErrInvalid)
		}
		return validateType(*c.Items)
	case "decimal":
		if c.Precision == nil || c.Precision.Precision < 1 || c.Precision.Precision > 38 ||
			c.Precision.Scale < 0 || c.Precision.Scale > c.Precision.Precision {
			return fmt.Errorf("%w: decimal needs a precision of 1 to 38 and a scale within it", ErrInvalid)
		}
	}
	return nil
}

func cloneColumns(cols []Column) []Column {
	out := make([]Column, len(cols))
	for i, c := range cols {
		out[i] = cloneColumn(c)
	}
	return out
}

func cloneColumn(c Column) Column {
	if c.Items != nil {
		it := cloneColumn(*c.Items)
		c.Items = &it
	}
	if c.Precision != nil {
		p := *c.Precision
		c.Precision = &p
	}
	if c.Type == "geometry" {
		g := GeometryInfo{CRS: "EPSG:4326"}
		if c.Geometry != nil {
			g = GeometryInfo{CRS: c.Geometry.CRS, Types: slices.Clone(c.Geometry.Types)}
			if g.CRS == "" {
				g.CRS = "EPSG:4326"
			}
		}
		if g.Types == nil {
			g.Types = []string{}
		}
		c.Geometry = &g
	} else {
		c.Geometry = nil
	}
	return c
}

// duckType is the DuckDB type a column is staged and written as.
func duckType(c Column) string {
	switch c.Type {
	case "string":
		return "VARCHAR"
	case "integer":
		return "BIGINT"
	case "number":
		return "DOUBLE"
	case "decimal":
		return fmt.Sprintf("DECIMAL(%d,%d)", c.Precision.Precision, c.Precision.Scale)
	case "boolean":
		return "BOOLEAN"
	case "date":
		return "DATE"
	case "timestamp":
		return "TIMESTAMPTZ"
	case "geometry":
		return "GEOMETRY"
	case "list":
		return duckType(*c.Items) + "[]"
	case "json":
		return "JSON"
	}
	return "VARCHAR"
}

// typeJSON is a column's type object; full carries items, precision and
// geometry even when null (as changeFromPrevious does).
func typeJSON(c Column, full bool) map[string]any {
	m := map[string]any{"type": c.Type}
	if c.Items != nil {
		m["items"] = typeJSON(*c.Items, false)
	} else if full {
		m["items"] = nil
	}
	if c.Precision != nil {
		m["precision"] = c.Precision
	} else if full {
		m["precision"] = nil
	}
	if c.Geometry != nil {
		m["geometry"] = c.Geometry
	} else if full {
		m["geometry"] = nil
	}
	return m
}

func columnJSON(c Column, full bool) map[string]any {
	m := typeJSON(c, full)
	m["name"] = c.Name
	return m
}

func columnsJSON(cols []Column, full bool) []map[string]any {
	out := make([]map[string]any, 0, len(cols))
	for _, c := range cols {
		out = append(out, columnJSON(c, full))
	}
	return out
}

func (ch *schemaChange) json() any {
	if ch == nil {
		return nil
	}
	retyped := make([]map[string]any, 0, len(ch.Retyped))
	for _, r := range ch.Retyped {
		retyped = append(retyped, map[string]any{"name": r[0].Name, "from": typeJSON(r[0], true), "to": typeJSON(r[1], true)})
	}
	var key any
	if ch.KeyDiff {
		key = map[string]any{"from": nonNil(ch.KeyFrom), "to": nonNil(ch.KeyTo)}
	}
	var bump any
	if ch.Bump != "" {
		bump = ch.Bump
	}
	return map[string]any{
		"bump": bump, "added": columnsJSON(ch.Added, true), "removed": columnsJSON(ch.Removed, true),
		"retyped": retyped, "keyColumns": key,
	}
}

// json is the schema object of GET .../schema and of the schema file.
func (s *schemaDoc) json(datasetID string) map[string]any {
	var change any = map[string]any{"bump": nil, "added": []any{}, "removed": []any{}, "retyped": []any{}, "keyColumns": nil}
	if s.Change != nil {
		change = s.Change.json()
	}
	return map[string]any{
		"datasetId": datasetID, "schemaVersion": s.Version,
		"columns": columnsJSON(s.Columns, false), "keyColumns": nonNil(s.Key),
		"changeFromPrevious": change,
	}
}

// shapeKey identifies a schema shape: its columns and key.
func shapeKey(cols []Column, key []string) string {
	k := slices.Clone(key)
	slices.Sort(k)
	b, _ := json.Marshal([]any{columnsJSON(cols, true), k})
	return string(b)
}

func sameType(a, b Column) bool {
	x, _ := json.Marshal(typeJSON(a, true))
	y, _ := json.Marshal(typeJSON(b, true))
	return string(x) == string(y)
}

func findColumn(cols []Column, name string) (Column, bool) {
	for _, c := range cols {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// diffSchema measures a new schema from the last released one. It returns
// nil when nothing changed.
func diffSchema(from *schemaDoc, cols []Column, key []string) *schemaChange {
	ch := &schemaChange{}
	for _, c := range cols {
		old, ok := findColumn(from.Columns, c.Name)
		switch {
		case !ok:
			ch.Added = append(ch.Added, c)
		case !sameType(old, c):
			ch.Retyped = append(ch.Retyped, [2]Column{old, c})
		}
	}
	for _, c := range from.Columns {
		if _, ok := findColumn(cols, c.Name); !ok {
			ch.Removed = append(ch.Removed, c)
		}
	}
	a, b := slices.Clone(from.Key), slices.Clone(key)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		ch.KeyDiff, ch.KeyFrom, ch.KeyTo = true, slices.Clone(from.Key), slices.Clone(key)
	}
	// schemas-and-holds.txt names as breaking "a column removed or
	// retyped, or the key changed from one set of columns to another or
	// dropped (a MAJOR bump)": a key added where there was none is not
	// one of them, and bumps MINOR as an added column does.
	switch {
	case len(ch.Removed) > 0 || len(ch.Retyped) > 0 || ch.KeyDiff && len(from.Key) > 0:
		ch.Bump = "major"
	case len(ch.Added) > 0 || ch.KeyDiff:
		ch.Bump = "minor"
	default:
		return nil
	}
	return ch
}

func parseSchemaVersion(v string) (int, int) {
	a, b, _ := strings.Cut(v, ".")
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	return x, y
}

// schemaFor works out the schema a new version has, measured from the last
// released version's schema, and takes a schema version number for it: the
// next free MINOR or MAJOR number, never one a held or discarded version took
// for another shape.
func (d *dataset) schemaFor(cols []Column, key []string) *schemaDoc {
	shape := shapeKey(cols, key)
	var base *schemaDoc
	if d.released != nil {
		base = d.released.schema
	}
	if base == nil {
		return &schemaDoc{Version: d.takeNumber(1, 0, false, shape), Columns: cols, Key: key}
	}
	ch := diffSchema(base, cols, key)
	if ch == nil {
		return &schemaDoc{Version: base.Version, Columns: cols, Key: key, Change: base.Change}
	}
	major, minor := parseSchemaVersion(base.Version)
	if ch.Bump == "major" {
		return &schemaDoc{Version: d.takeNumber(major+1, 0, true, shape), Columns: cols, Key: key, Change: ch}
	}
	return &schemaDoc{Version: d.takeNumber(major, minor+1, false, shape), Columns: cols, Key: key, Change: ch}
}

func (d *dataset) takeNumber(major, minor int, bumpMajor bool, shape string) string {
	for {
		v := fmt.Sprintf("%d.%d", major, minor)
		if got, ok := d.schemaNums[v]; !ok || got == shape {
			d.schemaNums[v] = shape
			return v
		}
		if bumpMajor {
			major++
		} else {
			minor++
		}
	}
}
