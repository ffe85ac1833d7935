package emulator

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// cmpExpr is a column as compared for matching and changes: geometry by its
// WKB, the rest as is.
func cmpExpr(c Column, alias string) string {
	col := alias + "." + ident(c.Name)
	if c.Type == "geometry" {
		return "ST_AsWKB(" + asGeometry(col) + ")"
	}
	return col
}

// asGeometry is a geometry column as GEOMETRY: one no row gives a value
// reads back from its Parquet file as a BLOB of NULLs (DuckDB leaves it
// out of the file's GeoParquet metadata), which casts to GEOMETRY; a
// GEOMETRY column is left as it is.
func asGeometry(col string) string { return "CAST(" + col + " AS GEOMETRY)" }

// textExpr is a column as text, to match columns whose types differ.
func textExpr(c Column, alias string) string {
	col := alias + "." + ident(c.Name)
	if c.Type == "geometry" {
		return "ST_AsText(" + asGeometry(col) + ")"
	}
	return "CAST(" + col + " AS VARCHAR)"
}

// rawCast turns a staged text column (see rowText) into the column's type.
func rawCast(c Column) string {
	col := ident(c.Name)
	switch c.Type {
	case "geometry":
		return fmt.Sprintf("CASE WHEN starts_with(%[1]s, 'WKB:') THEN ST_GeomFromWKB(from_hex(substr(%[1]s, 5))) ELSE CAST(%[1]s AS GEOMETRY) END", col)
	case "list":
		return fmt.Sprintf("CAST(CAST(%s AS JSON) AS %s)", col, duckType(c))
	}
	return fmt.Sprintf("CAST(%s AS %s)", col, duckType(c))
}

// rowText renders one Go value of a row as the text a staging column holds.
func rowText(c Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, nil
		}
		return rowText(c, rv.Elem().Interface())
	}
	switch c.Type {
	case "list":
		b, err := json.Marshal(jsonable(v))
		return string(b), err
	case "json":
		if s, ok := v.(string); ok {
			return s, nil
		}
		if b, ok := v.([]byte); ok {
			return string(b), nil
		}
		b, err := json.Marshal(v)
		return string(b), err
	case "geometry":
		if b, ok := v.([]byte); ok {
			return "WKB:" + hex.EncodeToString(b), nil
		}
	case "date", "timestamp":
		if t, ok := v.(time.Time); ok {
			if c.Type == "date" {
				return t.UTC().Format("2006-01-02"), nil
			}
			return t.UTC().Format("2006-01-02 15:04:05.999999") + "+00", nil
		}
	}
	return scalarText(v)
}

func scalarText(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return floatText(x), nil
	case float32:
		return floatText(float64(x)), nil
	case json.Number:
		return x.String(), nil
	case fmt.Stringer:
		return x.String(), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), nil
	}
	return nil, fmt.Errorf("%w: value of type %T", ErrInvalid, v)
}

func floatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// jsonable makes list elements JSON-friendly: times as text.
func jsonable(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.999999Z")
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8 {
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = jsonable(rv.Index(i).Interface())
		}
		return out
	}
	return v
}

// stageRows loads Go rows into a text staging table named table, with an
// _ord column giving their order, and returns a SELECT that casts them to the
// schema's types, in that order.
func stageRows(ctx context.Context, db *sql.DB, table string, cols []Column, rows []Row) (string, error) {
	names := make([]string, len(cols))
	defs := []string{"_ord BIGINT"}
	for i, c := range cols {
		names[i] = c.Name
		defs = append(defs, ident(c.Name)+" VARCHAR")
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TABLE %s (%s)", table, strings.Join(defs, ", "))); err != nil {
		return "", fmt.Errorf("create staging table: %w", err)
	}
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	const batch = 200
	ph := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)+1), ", ") + ")"
	for start := 0; start < len(rows); start += batch {
		end := min(start+batch, len(rows))
		var args []any
		var tuples []string
		for i := start; i < end; i++ {
			for k := range rows[i] {
				if !known[k] {
					return "", fmt.Errorf("row %d: %w: unknown column %q", i, ErrInvalid, k)
				}
			}
			args = append(args, int64(i+1))
			for _, c := range cols {
				v, err := rowText(c, rows[i][c.Name])
				if err != nil {
					return "", fmt.Errorf("row %d column %s: %w", i, c.Name, err)
				}
				args = append(args, v)
			}
			tuples = append(tuples, ph)
		}
		q := fmt.Sprintf("INSERT INTO %s VALUES %s", table, strings.Join(tuples, ", "))
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return "", fmt.Errorf("stage rows: %w", err)
		}
	}
	var sel []string
	for _, c := range cols {
		sel = append(sel, rawCast(c)+" AS "+ident(c.Name))
	}
	return fmt.Sprintf("SELECT %s FROM %s ORDER BY _ord", strings.Join(sel, ", "), table), nil
}

func queryInt(ctx context.Context, db *sql.DB, q string) (int64, error) {
	var n sql.NullInt64
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return 0, err
	}
	return n.Int64, nil
}

func parquetList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = lit(p)
	}
	return "read_parquet([" + strings.Join(q, ", ") + "], hive_partitioning = false)"
}
