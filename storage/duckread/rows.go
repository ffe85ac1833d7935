package duckread

import (
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Rows read from the watch API arrive as JSON (docs/wire.md section 9, "Row
// values in JSON") and are spooled by fetch as NDJSON, one row a line.
// DuckDB's read_json reads them in bulk with an explicit type per column
// (never a guessed one), and a select list turns each JSON value into the
// column's DuckDB type exactly:
//
//	string     VARCHAR
//	integer    read as text, checked to be an integer, cast to BIGINT: a
//	           value beyond ±2^53 comes as a string and stays exact
//	number     DOUBLE
//	decimal    read as text ("1234.50"), checked to have no more digits
//	           after the point than the scale, cast to DECIMAL(p,s): exact
//	boolean    BOOLEAN; date DATE; timestamp TIMESTAMPTZ (RFC 3339 UTC)
//	json       JSON, as sent
//	list       a list of the item type, each item as above
//	geometry   GeoJSON, read as a struct of its type, coordinates and
//	           geometries, turned into WKT text and cast to GEOMETRY
//
// A value that does not fit fails the statement, which fails the load or
// merge: nothing is half-applied. A missing key or null is NULL.
//
// GeoJSON to WKT: DuckDB's core has no GeoJSON reader (that is the spatial
// extension's, which the engine never loads), but it casts WKT text to
// GEOMETRY. The coordinates, minified JSON text of nested arrays of
// numbers, become WKT by string replacement: the separators between
// arrays ("],[") are marked, the remaining commas (inside a position) turn
// into spaces, the marks into ", ", and the brackets into parentheses, one
// level fewer than JSON has (a position has none). A 2D Point [1,2] is
// "POINT (1 2)", a Polygon [[[0,0],[1,0],[1,1],[0,0]]] "POLYGON ((0 0, 1 0,
// 1 1, 0 0))"; three numbers a position add the Z tag. Measured on one
// core: 1M points take about 2.0 s either way (reading the JSON
// alone 0.4 s), 200k polygons of five vertices 1.1 s by replacement
// against 3.2–3.7 s building the text from lists of doubles with lambdas.

// jsonReadType is the type read_json reads a column's JSON value as.
func jsonReadType(t ploti.Type) (string, error) {
	switch t.Type {
	case ploti.TypeInteger, ploti.TypeDecimal:
		return "VARCHAR", nil
	case ploti.TypeGeometry:
		return geoJSONStruct, nil
	case ploti.TypeList:
		if t.Items == nil {
			return "VARCHAR[]", nil
		}
		inner, err := jsonReadType(*t.Items)
		if err != nil {
			return "", err
		}
		return inner + "[]", nil
	}
	return DuckType(t)
}

// geoJSONStruct reads a GeoJSON geometry object: its coordinates stay JSON
// (nested arrays of any depth), and a GeometryCollection's geometries too.
// Other members (bbox, a legacy crs) are left aside, as read_json and
// json_transform do with keys a struct does not name.
const geoJSONStruct = `STRUCT("type" VARCHAR, coordinates JSON, geometries JSON)`

// jsonCast turns e, a value read as jsonReadType(t), into t's DuckDB type.
// col names the column in errors; depth tells nested lambdas apart.
func jsonCast(t ploti.Type, col, e string, depth int) (string, error) {
	duck, err := DuckType(t)
	if err != nil {
		return "", err
	}
	switch t.Type {
	case ploti.TypeInteger:
		return fmt.Sprintf(`CASE WHEN %[1]s IS NULL THEN NULL WHEN regexp_full_match(%[1]s, '-?[0-9]+') THEN CAST(%[1]s AS BIGINT)
			ELSE error(%[2]s || %[1]s) END`, e, storage.Literal(FitMark+"column "+col+": not an integer: ")), nil
	case ploti.TypeDecimal:
		scale := 9
		if t.Precision != nil {
			scale = t.Precision.Scale
		}
		frac := fmt.Sprintf(`(\.[0-9]{0,%d})?`, scale)
		if scale == 0 {
			frac = `(\.0*)?`
		}
		return fmt.Sprintf(`CASE WHEN %[1]s IS NULL THEN NULL WHEN regexp_full_match(%[1]s, '-?[0-9]+%[2]s') THEN CAST(%[1]s AS %[3]s)
			ELSE error(%[4]s || %[1]s) END`, e, frac, duck, storage.Literal(FitMark+"column "+col+": not a "+duck+" exactly: ")), nil
	case ploti.TypeGeometry:
		return geoJSONToGeometry(col, e, depth), nil
	case ploti.TypeList:
		if t.Items == nil {
			return e, nil
		}
		v := fmt.Sprintf("li%d", depth)
		inner, err := jsonCast(*t.Items, col, v, depth+1)
		if err != nil {
			return "", err
		}
		if inner == v {
			return e, nil
		}
		return fmt.Sprintf("list_transform(%s, %s -> %s)", e, v, inner), nil
	}
	return e, nil
}

// geoFlat is the SQL of a GeoJSON coordinates value (JSON) as WKT-ready
// text: "[[0 0, 1 0], [2 2, 3 3]]" (see the comment at the top).
func geoFlat(coords string) string {
	return fmt.Sprintf(`replace(replace(replace(replace(CAST(%s AS VARCHAR), ' ', ''), '],[', '|'), ',', ' '), '|', ', ')`, coords)
}

// geoBind binds a GeoJSON geometry's type (t) and flattened coordinates
// (f) to the lambda variable v for body: a one-item list_transform is
// SQL's let. The flattened text is then
// built once per value; as a subquery's column, DuckDB merged it into each
// of its uses and built it seven times (1M points cost 5.4 s of
// CPU that way, 2.2 s bound).
func geoBind(v, typ, coords, body string) string {
	return fmt.Sprintf("list_transform([{'t': %s, 'f': %s}], %s -> %s)[1]", typ, geoFlat(coords), v, body)
}

// geoJSONToGeometry is the SQL that makes a GEOMETRY of e, a GeoJSON value
// read as geoJSONStruct. A JSON null is NULL; anything that is not GeoJSON
// fails the statement. A GeometryCollection is told apart outside the
// bound value: inside a lambda, its branch was worked out for every value
// (3 s of CPU for 1M points).
func geoJSONToGeometry(col, e string, depth int) string {
	x, g, y := fmt.Sprintf("gx%d", depth), fmt.Sprintf("gg%d", depth), fmt.Sprintf("gy%d", depth)
	member := geoBind(y, g+`."type"`, g+".coordinates", geoWKT(col, y+".t", y+".f"))
	collection := fmt.Sprintf(`CASE WHEN CAST(%[1]s.geometries AS VARCHAR) IN ('[]', 'null') OR %[1]s.geometries IS NULL THEN 'GEOMETRYCOLLECTION EMPTY'
		ELSE 'GEOMETRYCOLLECTION (' || array_to_string(list_transform(json_transform(%[1]s.geometries, '[{"type": "VARCHAR", "coordinates": "JSON", "geometries": "JSON"}]'),
			%[2]s -> %[3]s), ', ') || ')' END`, e, g, member)
	single := geoBind(x, e+`."type"`, e+".coordinates", fmt.Sprintf(`CASE WHEN %[1]s.t IS NULL AND %[1]s.f IS NULL THEN NULL ELSE %[2]s END`,
		x, geoWKT(col, x+".t", x+".f")))
	return fmt.Sprintf(`CAST(CASE WHEN %[1]s IS NULL THEN NULL WHEN %[1]s."type" = 'GeometryCollection' THEN %[2]s ELSE %[3]s END AS GEOMETRY)`, e, collection, single)
}

// geoWKT is the SQL of the WKT text of one GeoJSON geometry that is not a
// collection, from its type and its flattened coordinates. It branches on
// the type with a CASE of constants (an IN list of them became a join). A
// first position of three numbers adds the Z tag: one anchored regular
// expression reads only that position.
func geoWKT(col, typ, flat string) string {
	bad := storage.Literal(FitMark + "column " + col + ": not a GeoJSON geometry: type ")
	z := fmt.Sprintf(`CASE WHEN regexp_matches(%s, '^\[*[^ ,\]]+ [^ ,\]]+ ') THEN ' Z ' ELSE ' ' END`, flat)
	body := func(wkt string, strip bool) string {
		f := flat
		if strip {
			f += "[2:-2]"
		}
		return fmt.Sprintf(`CASE WHEN %[1]s = '[]' THEN '%[2]s EMPTY' ELSE '%[2]s' || %[3]s || translate(%[4]s, '[]', '()') END`, flat, wkt, z, f)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CASE WHEN %[1]s IS NULL THEN error(%[3]s || coalesce(%[2]s, 'null') || ' without coordinates') ELSE CASE %[2]s", flat, typ, bad)
	for _, t := range [][2]string{{"Point", "POINT"}, {"LineString", "LINESTRING"}, {"MultiPoint", "MULTIPOINT"},
		{"Polygon", "POLYGON"}, {"MultiLineString", "MULTILINESTRING"}, {"MultiPolygon", "MULTIPOLYGON"}} {
		fmt.Fprintf(&b, "\n\t\tWHEN '%s' THEN %s", t[0], body(t[1], t[0] != "Point"))
	}
	fmt.Fprintf(&b, "\n\t\tELSE error(%s || coalesce(%s, 'null')) END END", bad, typ)
	return b.String()
}

// jsonSource is the read_json call for NDJSON row files with an explicit
// type for the system columns and every schema column: nothing is guessed.
// raw reads each column as its DuckDB type (DuckDB's own casts; geometry
// still as GeoJSON).
func jsonSource(files []string, cols []ploti.Column, raw bool) (string, error) {
	parts := []string{storage.Literal(storage.ColRecordID) + ": 'VARCHAR'", storage.Literal(storage.ColPlaceID) + ": 'VARCHAR'"}
	for _, c := range cols {
		read := jsonReadType
		if raw && c.Type.Type != ploti.TypeGeometry {
			read = DuckType
		}
		t, err := read(c.Type)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", c.Name, err)
		}
		parts = append(parts, storage.Literal(c.Name)+": "+storage.Literal(t))
	}
	return fmt.Sprintf("read_json(%s, format = 'newline_delimited', columns = {%s}, maximum_object_size = %d, hive_partitioning = false)",
		FileList(files), strings.Join(parts, ", "), maxRowBytes), nil
}

// maxRowBytes is the largest JSON row read_json accepts (DuckDB's default
// is 16 MiB; a document dataset's row may be larger).
const maxRowBytes = 256 << 20

// jsonRowsQuery is the SELECT of NDJSON row files as a dataset table's
// rows: system columns, then the schema columns in their DuckDB types.
// where, when set, filters the rows read (it may name _ploti_record_id).
func JSONRowsQuery(files []string, cols []ploti.Column, where string) (string, error) {
	return jsonRowsSelect(files, cols, where, false)
}

// jsonRowsSelect is jsonRowsQuery; raw leaves the casts to read_json (see
// RawJSONRows).
func jsonRowsSelect(files []string, cols []ploti.Column, where string, raw bool) (string, error) {
	src, err := jsonSource(files, cols, raw)
	if err != nil {
		return "", err
	}
	sel := []string{storage.Ident(storage.ColRecordID), storage.Ident(storage.ColPlaceID)}
	for _, c := range cols {
		name := storage.Ident(c.Name)
		cast, err := jsonCast(c.Type, c.Name, name, 0)
		if err != nil {
			return "", fmt.Errorf("column %s: %w", c.Name, err)
		}
		if raw && c.Type.Type != ploti.TypeGeometry {
			cast = name
		}
		sel = append(sel, cast+" AS "+name)
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), src)
	if where != "" {
		q += " WHERE " + where
	}
	return q, nil
}

// jsonError tells a row that does not fit (a value that does not cast, a
// JSON that is not the type asked for, a GeoJSON that is not one) from any
// other failure: the first is the data's fault (a DataError), the other
// not.
func JSONError(file string, err error) error {
	msg := err.Error()
	if _, why, ok := strings.Cut(msg, FitMark); ok {
		return &storage.DataError{File: file, Detail: "row does not fit the schema: " + firstLine(why)}
	}
	for _, kind := range []string{"Invalid Input Error", "Conversion Error", "Out of Range Error"} {
		if strings.Contains(msg, kind) {
			return &storage.DataError{File: file, Detail: "row does not fit the schema: " + firstLine(msg)}
		}
	}
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
