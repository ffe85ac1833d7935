package storage

import (
	"strings"
)

// System columns every file carries.
const (
	ColRecordID = "_ploti_record_id"
	ColPlaceID  = "_ploti_place_id"
	ColChange   = "_ploti_change"
)

// Ident quotes an SQL identifier.
func Ident(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Literal quotes an SQL string literal.
func Literal(s string) string {
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`
}

// TableName derives a table name from a dataset id: lower case, [a-z0-9_],
// not starting with a digit, never a name of DuckDB's own catalog schemas.
func TableName(datasetID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(datasetID) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "t_" + name
	}
	if strings.HasPrefix(name, "_ploti") || name == "main" || name == "information_schema" || name == "pg_catalog" {
		name = "t" + name
	}
	return name
}
