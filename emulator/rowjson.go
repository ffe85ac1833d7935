package emulator

// Row values in JSON, as the watch API's changes and rows answers carry them
// (docs/wire.md section 9, "Row values in JSON"). DuckDB renders every value
// in bulk; only geometry leaves DuckDB as a marker (the value's WKB in hex
// behind a \x01) that geoFixup turns into GeoJSON on the way out, because
// DuckDB without the spatial extension has no GeoJSON writer and its WKT
// would need a parser anyway. The WKB keeps every coordinate exact.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxSafeInt is 2^53: an integer beyond ±2^53 is sent as a string.
const maxSafeInt = "9007199254740992"

// geoMarker starts a geometry's marker in JSON text: the \x01 DuckDB
// escapes, then "wkb:" and the hex.
var geoMarker = []byte(`"\u0001wkb:`)

// jsonExpr is a SQL expression rendering x, a value of column c's type, as
// the watch API's JSON: VARCHAR for values sent as strings, BOOLEAN, or
// JSON. depth names list lambda variables apart.
func jsonExpr(c Column, x string, depth int) string {
	switch c.Type {
	case "integer":
		return fmt.Sprintf("CASE WHEN %[1]s > %[2]s OR %[1]s < -%[2]s THEN to_json(CAST(%[1]s AS VARCHAR)) ELSE CAST(%[1]s AS JSON) END", x, maxSafeInt)
	case "number":
		return fmt.Sprintf(`CASE WHEN isnan(%[1]s) THEN '"NaN"'::JSON WHEN isinf(%[1]s) AND %[1]s > 0 THEN '"Infinity"'::JSON
			WHEN isinf(%[1]s) THEN '"-Infinity"'::JSON ELSE CAST(%[1]s AS JSON) END`, x)
	case "decimal", "date":
		return "CAST(" + x + " AS VARCHAR)"
	case "timestamp":
		// the instant as a plain TIMESTAMP in UTC, without a time zone
		// conversion: "2026-11-20 10:06:07.25" → "2026-11-20T10:06:07.25Z"
		return fmt.Sprintf("replace(CAST(make_timestamp(epoch_us(%s)) AS VARCHAR), ' ', 'T') || 'Z'", x)
	case "geometry":
		return fmt.Sprintf("chr(1) || 'wkb:' || hex(ST_AsWKB(%s))", asGeometry(x))
	case "list":
		if nativeJSON(c) {
			return x // DuckDB writes a list of strings or booleans as the array it is
		}
		v := fmt.Sprintf("_e%d", depth)
		return fmt.Sprintf("to_json(list_transform(%s, %s -> %s))", x, v, jsonExpr(*c.Items, v, depth+1))
	}
	return x // string, boolean, json
}

// nativeJSON tells whether DuckDB's own JSON of a column's values is
// already the watch API's.
func nativeJSON(c Column) bool {
	switch c.Type {
	case "string", "boolean", "json":
		return true
	case "list":
		return nativeJSON(*c.Items)
	}
	return false
}

// rowSelect is the select list of a row object: _ploti_record_id,
// _ploti_place_id, then the columns, each aliased by its name, for COPY
// ... (FORMAT json).
func rowSelect(cols []Column, alias string) string {
	out := []string{alias + "._ploti_record_id AS _ploti_record_id", alias + "._ploti_place_id AS _ploti_place_id"}
	for _, c := range cols {
		out = append(out, jsonExpr(c, alias+"."+ident(c.Name), 0)+" AS "+ident(c.Name))
	}
	return strings.Join(out, ", ")
}

// rowObject is a SQL expression giving a row object as JSON text.
func rowObject(cols []Column, alias string) string {
	out := []string{"'_ploti_record_id': " + alias + "._ploti_record_id", "'_ploti_place_id': " + alias + "._ploti_place_id"}
	for _, c := range cols {
		out = append(out, lit(c.Name)+": "+jsonExpr(c, alias+"."+ident(c.Name), 0))
	}
	return "CAST(to_json({" + strings.Join(out, ", ") + "}) AS VARCHAR)"
}

// geoFixup replaces every geometry marker in JSON text with its GeoJSON.
// It returns b itself when there is none.
func geoFixup(b []byte) ([]byte, error) {
	i := bytes.Index(b, geoMarker)
	if i < 0 {
		return b, nil
	}
	out := make([]byte, 0, len(b)+len(b)/4)
	for i >= 0 {
		out = append(out, b[:i]...)
		b = b[i+len(geoMarker):]
		end := bytes.IndexByte(b, '"')
		if end < 0 {
			return nil, fmt.Errorf("render geometry: unterminated marker")
		}
		wkb, err := hex.DecodeString(string(b[:end]))
		if err != nil {
			return nil, fmt.Errorf("render geometry: %w", err)
		}
		if out, err = appendGeoJSON(out, wkb); err != nil {
			return nil, fmt.Errorf("render geometry: %w", err)
		}
		b = b[end+1:]
		i = bytes.Index(b, geoMarker)
	}
	return append(out, b...), nil
}

// appendGeoJSON appends the GeoJSON geometry object of one WKB geometry
// (ISO or extended WKB, with Z, M or ZM; M values are dropped, as GeoJSON
// has no place for them).
func appendGeoJSON(out, wkb []byte) ([]byte, error) {
	r := &wkbReader{b: wkb}
	out, err := r.geometry(out)
	if err == nil && r.off != len(r.b) {
		err = fmt.Errorf("%d trailing bytes", len(r.b)-r.off)
	}
	return out, err
}

type wkbReader struct {
	b   []byte
	off int
	bo  binary.ByteOrder
}

var geoJSONTypes = [...]string{1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString",
	6: "MultiPolygon", 7: "GeometryCollection"}

func (r *wkbReader) uint32() (uint32, error) {
	if r.off+4 > len(r.b) {
		return 0, fmt.Errorf("wkb cut short")
	}
	v := r.bo.Uint32(r.b[r.off:])
	r.off += 4
	return v, nil
}

// header reads a geometry's byte order and type; dims is 2, 3 (Z or M) or
// 4, hasM whether the last ordinate is M.
func (r *wkbReader) header() (typ int, dims int, hasM bool, err error) {
	if r.off >= len(r.b) {
		return 0, 0, false, fmt.Errorf("wkb cut short")
	}
	switch r.b[r.off] {
	case 0:
		r.bo = binary.BigEndian
	case 1:
		r.bo = binary.LittleEndian
	default:
		return 0, 0, false, fmt.Errorf("bad wkb byte order %d", r.b[r.off])
	}
	r.off++
	code, err := r.uint32()
	if err != nil {
		return 0, 0, false, err
	}
	hasZ, hasM := code&0x80000000 != 0, code&0x40000000 != 0
	if code&0x20000000 != 0 { // EWKB SRID
		if _, err := r.uint32(); err != nil {
			return 0, 0, false, err
		}
	}
	code &= 0x0fffffff
	switch code / 1000 {
	case 1:
		hasZ = true
	case 2:
		hasM = true
	case 3:
		hasZ, hasM = true, true
	}
	typ = int(code % 1000)
	if typ < 1 || typ > 7 {
		return 0, 0, false, fmt.Errorf("unknown wkb geometry type %d", code)
	}
	dims = 2
	if hasZ {
		dims++
	}
	if hasM {
		dims++
	}
	return typ, dims, hasM, nil
}

func (r *wkbReader) geometry(out []byte) ([]byte, error) {
	typ, dims, hasM, err := r.header()
	if err != nil {
		return nil, err
	}
	out = append(out, `{"type":"`...)
	out = append(out, geoJSONTypes[typ]...)
	if typ == 7 {
		n, err := r.uint32()
		if err != nil {
			return nil, err
		}
		out = append(out, `","geometries":[`...)
		for k := range int(n) {
			if k > 0 {
				out = append(out, ',')
			}
			if out, err = r.geometry(out); err != nil {
				return nil, err
			}
		}
		return append(out, "]}"...), nil
	}
	out = append(out, `","coordinates":`...)
	if out, err = r.coords(out, typ, dims, hasM); err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// coords appends the coordinates array of a geometry of type typ (1 to 6).
func (r *wkbReader) coords(out []byte, typ, dims int, hasM bool) ([]byte, error) {
	switch typ {
	case 1:
		return r.point(out, dims, hasM)
	case 2:
		return r.points(out, dims, hasM)
	case 3:
		return r.list(out, func(out []byte) ([]byte, error) { return r.points(out, dims, hasM) })
	}
	// a multi geometry: each part is a whole WKB geometry of type typ-3
	return r.list(out, func(out []byte) ([]byte, error) {
		t, d, m, err := r.header()
		if err != nil {
			return nil, err
		}
		if t != typ-3 {
			return nil, fmt.Errorf("%s holds a %s", geoJSONTypes[typ], geoJSONTypes[t])
		}
		return r.coords(out, t, d, m)
	})
}

// list appends a count-prefixed list of items.
func (r *wkbReader) list(out []byte, item func([]byte) ([]byte, error)) ([]byte, error) {
	n, err := r.uint32()
	if err != nil {
		return nil, err
	}
	if int(n) > len(r.b) {
		return nil, fmt.Errorf("wkb count %d past its bytes", n)
	}
	out = append(out, '[')
	for k := range int(n) {
		if k > 0 {
			out = append(out, ',')
		}
		if out, err = item(out); err != nil {
			return nil, err
		}
	}
	return append(out, ']'), nil
}

func (r *wkbReader) points(out []byte, dims int, hasM bool) ([]byte, error) {
	return r.list(out, func(out []byte) ([]byte, error) { return r.point(out, dims, hasM) })
}

// point appends one position; an empty point (all NaN) is [].
func (r *wkbReader) point(out []byte, dims int, hasM bool) ([]byte, error) {
	if r.off+8*dims > len(r.b) {
		return nil, fmt.Errorf("wkb cut short")
	}
	vals := make([]float64, dims)
	empty := true
	for k := range vals {
		vals[k] = math.Float64frombits(r.bo.Uint64(r.b[r.off:]))
		r.off += 8
		empty = empty && math.IsNaN(vals[k])
	}
	if empty {
		return append(out, "[]"...), nil
	}
	if hasM {
		vals = vals[:dims-1]
	}
	out = append(out, '[')
	for k, v := range vals {
		if k > 0 {
			out = append(out, ',')
		}
		out = appendJSONFloat(out, v)
	}
	return append(out, ']'), nil
}

// appendJSONFloat formats a float as encoding/json does: the shortest text
// that reads back the same, exponent form only for very small or large
// magnitudes; NaN and infinities (not JSON) as null.
func appendJSONFloat(out []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(out, "null"...)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(out, f, format, -1, 64)
}
