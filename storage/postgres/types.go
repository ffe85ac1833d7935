package postgres

import (
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// SRID is the spatial reference of every geometry column: Ploti's files
// are "GeoParquet: geometry as WKB in EPSG:4326"
// (subscriptions-manifest-files.txt).
const SRID = 4326

// geometryTypes are the PostGIS type modifiers a schema's geometry types
// may name; a column with one of them is typed by it.
var geometryTypes = map[string]string{
	"point": "Point", "linestring": "LineString", "polygon": "Polygon",
	"multipoint": "MultiPoint", "multilinestring": "MultiLineString",
	"multipolygon": "MultiPolygon", "geometrycollection": "GeometryCollection",
}

// PGType maps a Ploti column type to a PostgreSQL type: string text,
// integer bigint, number double precision, decimal numeric(p,s), boolean,
// date, timestamp timestamptz, json jsonb, geometry PostGIS geometry in
// SRID 4326 (typed by the schema's geometry type when it names exactly
// one: geometry(Point,4326)), a list an array of its items' type. A list
// of lists is jsonb: PostgreSQL's arrays are rectangular, a list of lists
// need not be.
func PGType(t ploti.Type) (string, error) {
	switch t.Type {
	case ploti.TypeString:
		return "text", nil
	case ploti.TypeInteger:
		return "bigint", nil
	case ploti.TypeNumber:
		return "double precision", nil
	case ploti.TypeDecimal:
		if t.Precision == nil {
			return "numeric(38,9)", nil
		}
		p, s := t.Precision.Precision, t.Precision.Scale
		if p < 1 || p > 38 || s < 0 || s > p {
			return "", fmt.Errorf("decimal precision %d scale %d out of range", p, s)
		}
		return fmt.Sprintf("numeric(%d,%d)", p, s), nil
	case ploti.TypeBoolean:
		return "boolean", nil
	case ploti.TypeDate:
		return "date", nil
	case ploti.TypeTimestamp:
		return "timestamptz", nil
	case ploti.TypeGeometry:
		if m := geometryModifier(t.Geometry); m != "" {
			return fmt.Sprintf("geometry(%s,%d)", m, SRID), nil
		}
		return "geometry", nil
	case ploti.TypeJSON:
		return "jsonb", nil
	case ploti.TypeList:
		if t.Items == nil {
			return "text[]", nil
		}
		if t.Items.Type == ploti.TypeList {
			return "jsonb", nil
		}
		inner, err := PGType(*t.Items)
		if err != nil {
			return "", err
		}
		if t.Items.Type == ploti.TypeGeometry {
			inner = "geometry" // an array's items take no type modifier
		}
		return inner + "[]", nil
	}
	return "", fmt.Errorf("unknown column type %q", t.Type)
}

// geometryModifier is the PostGIS type of a geometry column: the schema's
// one geometry type, or "" when it names none or several. A column typed
// geometry(Point,4326) refuses a PointZ (PostGIS's type modifier fixes the
// dimensions too); a column of any type is geometry, its SRID held by a
// CHECK (sridCheck), and takes any dimensions, as DuckDB's GEOMETRY does.
func geometryModifier(g *ploti.GeometryInfo) string {
	if g == nil || len(g.Types) != 1 {
		return ""
	}
	return geometryTypes[strings.ToLower(g.Types[0])]
}

// sridCheck is the CHECK constraint of a geometry column without a type
// modifier (PostGIS's geometry_columns reads the SRID from it), or "".
func sridCheck(c ploti.Column) string {
	if c.Type.Type != ploti.TypeGeometry || geometryModifier(c.Type.Geometry) != "" {
		return ""
	}
	return fmt.Sprintf("CHECK (ST_SRID(%s) = %d)", ident(c.Name), SRID)
}

// kind is how a value travels from DuckDB to PostgreSQL's binary COPY.
type kind int

const (
	kindText      kind = iota // VARCHAR → text
	kindInt8                  // BIGINT → bigint
	kindFloat8                // DOUBLE → double precision
	kindNumeric               // DECIMAL → numeric
	kindBool                  // BOOLEAN → boolean
	kindDate                  // days since 2000-01-01 (INTEGER) → date
	kindTimestamp             // µs since 2000-01-01 UTC (BIGINT) → timestamptz
	kindGeometry              // WKB (BLOB) → EWKB with SRID 4326 → geometry
	kindJSONB                 // JSON as text → jsonb
	kindArray                 // LIST → array of elem
	kindInt4                  // INTEGER → integer (_ploti's own columns)
)

// encoding is how one column is exported from DuckDB and written to COPY.
type encoding struct {
	kind kind
	elem *encoding // kindArray's items
	oid  uint32    // the PostgreSQL type's oid (an array's element oid is elem.oid)
}

// Built-in type oids (pg_type.dat); geometry's is the database's.
const (
	oidBool        = 16
	oidInt8        = 20
	oidText        = 25
	oidFloat8      = 701
	oidDate        = 1082
	oidTimestamptz = 1184
	oidNumeric     = 1700
	oidJSONB       = 3802
)

// pgEpoch is PostgreSQL's epoch (2000-01-01) in Unix microseconds.
const pgEpochMicros = 946684800000000

// encodingOf is the encoding of a column of type t (geomOID: the oid of
// PostGIS's geometry in this database).
func encodingOf(t ploti.Type, geomOID uint32) (encoding, error) {
	switch t.Type {
	case ploti.TypeString:
		return encoding{kind: kindText, oid: oidText}, nil
	case ploti.TypeInteger:
		return encoding{kind: kindInt8, oid: oidInt8}, nil
	case ploti.TypeNumber:
		return encoding{kind: kindFloat8, oid: oidFloat8}, nil
	case ploti.TypeDecimal:
		return encoding{kind: kindNumeric, oid: oidNumeric}, nil
	case ploti.TypeBoolean:
		return encoding{kind: kindBool, oid: oidBool}, nil
	case ploti.TypeDate:
		return encoding{kind: kindDate, oid: oidDate}, nil
	case ploti.TypeTimestamp:
		return encoding{kind: kindTimestamp, oid: oidTimestamptz}, nil
	case ploti.TypeGeometry:
		return encoding{kind: kindGeometry, oid: geomOID}, nil
	case ploti.TypeJSON:
		return encoding{kind: kindJSONB, oid: oidJSONB}, nil
	case ploti.TypeList:
		if t.Items == nil {
			return encoding{kind: kindArray, elem: &encoding{kind: kindText, oid: oidText}}, nil
		}
		if t.Items.Type == ploti.TypeList {
			return encoding{kind: kindJSONB, oid: oidJSONB}, nil
		}
		e, err := encodingOf(*t.Items, geomOID)
		if err != nil {
			return encoding{}, err
		}
		return encoding{kind: kindArray, elem: &e}, nil
	}
	return encoding{}, fmt.Errorf("unknown column type %q", t.Type)
}

// exportExpr is the DuckDB expression that turns e, a value of type t as
// the DuckDB engine holds it (GEOMETRY for geometry), into what the COPY
// writer takes for it: dates and timestamps as PostgreSQL's day and
// microsecond counts, JSON as text, geometry as WKB, a list
// of lists as JSON text. depth tells nested lambdas apart.
func exportExpr(t ploti.Type, e string, depth int) string {
	switch t.Type {
	case ploti.TypeJSON:
		return "CAST(" + e + " AS VARCHAR)"
	case ploti.TypeDate:
		return fmt.Sprintf("CAST(%s - DATE '2000-01-01' AS INTEGER)", e)
	case ploti.TypeTimestamp:
		return fmt.Sprintf("(epoch_us(%s) - %d)", e, pgEpochMicros)
	case ploti.TypeGeometry:
		return "ST_AsWKB(" + e + ")"
	case ploti.TypeList:
		if t.Items == nil {
			return e
		}
		if t.Items.Type == ploti.TypeList {
			return "CAST(to_json(" + e + ") AS VARCHAR)"
		}
		v := fmt.Sprintf("px%d", depth)
		inner := exportExpr(*t.Items, v, depth+1)
		if inner == v {
			return e
		}
		return fmt.Sprintf("list_transform(%s, %s -> %s)", e, v, inner)
	}
	return e
}

// exportSelect is the DuckDB query that exports rel (a query of a dataset
// table's rows as the DuckDB engine types them: duckread.SelectList or
// duckread.JSONRowsQuery) for COPY, with extra columns (already exported)
// after the schema's.
func exportSelect(rel string, cols []ploti.Column, extra ...string) string {
	parts := []string{storage.Ident(storage.ColRecordID), storage.Ident(storage.ColPlaceID)}
	for _, c := range cols {
		parts = append(parts, exportExpr(c.Type, storage.Ident(c.Name), 0))
	}
	parts = append(parts, extra...)
	return fmt.Sprintf("SELECT %s FROM (%s)", strings.Join(parts, ", "), rel)
}

// encodings are the COPY encodings of a dataset table's columns: the
// system columns, then cols.
func encodings(cols []ploti.Column, geomOID uint32) ([]encoding, error) {
	encs := []encoding{{kind: kindText, oid: oidText}, {kind: kindText, oid: oidText}}
	for _, c := range cols {
		e, err := encodingOf(c.Type, geomOID)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		encs = append(encs, e)
	}
	return encs, nil
}

// columnDefs is the column list of a CREATE TABLE for a dataset table.
func columnDefs(cols []ploti.Column) (string, error) {
	if err := namesApart(cols, nil); err != nil {
		return "", err
	}
	// The primary key makes _ploti_record_id NOT NULL, once the rows are in:
	// a null one is then counted and refused in words (primaryKey).
	defs := []string{ident(storage.ColRecordID) + " text", ident(storage.ColPlaceID) + " text"}
	for _, c := range cols {
		t, err := columnType(c)
		if err != nil {
			return "", err
		}
		defs = append(defs, ident(c.Name)+" "+t)
	}
	return strings.Join(defs, ", "), nil
}

// columnType is a dataset column's type in a CREATE or ALTER TABLE, its
// SRID check included.
func columnType(c ploti.Column) (string, error) {
	t, err := PGType(c.Type)
	if err != nil {
		return "", fmt.Errorf("column %s: %w", c.Name, err)
	}
	if ck := sridCheck(c); ck != "" {
		t += " " + ck
	}
	return t, nil
}

// namesApart refuses columns that PostgreSQL would take for one another,
// or for one of have (the names a table has): it cuts a name past its
// 63-byte identifiers without a word, the same way in every statement, so
// a long name works until two share their first 63 bytes; then a CREATE
// fails on a duplicate column and an ADD COLUMN IF NOT EXISTS adds
// nothing.
func namesApart(cols []ploti.Column, have []string) error {
	seen := map[string]string{}
	for _, h := range have {
		seen[h] = h
	}
	for _, c := range cols {
		cut := c.Name
		if len(cut) > maxIdent {
			cut = cut[:maxIdent]
		}
		if other, ok := seen[cut]; ok && other != c.Name {
			return fmt.Errorf("column %q and column %q are one name in PostgreSQL, which keeps the first %d bytes of a name (a DuckDB file keeps both)",
				c.Name, other, maxIdent)
		}
		seen[cut] = c.Name
	}
	return nil
}

// columnNames lists a dataset table's column names for COPY and INSERT.
func columnNames(cols []ploti.Column) string {
	parts := []string{ident(storage.ColRecordID), ident(storage.ColPlaceID)}
	for _, c := range cols {
		parts = append(parts, ident(c.Name))
	}
	return strings.Join(parts, ", ")
}

// ident quotes a PostgreSQL identifier.
func ident(name string) string { return storage.Ident(name) }

// hasGeometry tells whether a column type is geometry, or a list of it.
func hasGeometry(t ploti.Type) bool {
	for ; t.Type == ploti.TypeList && t.Items != nil; t = *t.Items {
	}
	return t.Type == ploti.TypeGeometry
}
