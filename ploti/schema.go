package ploti

import "strings"

// Column types (docs/wire.md section 2).
const (
	TypeString    = "string"
	TypeInteger   = "integer"
	TypeNumber    = "number"
	TypeDecimal   = "decimal"
	TypeBoolean   = "boolean"
	TypeDate      = "date"
	TypeTimestamp = "timestamp"
	TypeGeometry  = "geometry"
	TypeList      = "list"
	TypeJSON      = "json"
)

// Precision is a decimal's precision and scale.
type Precision struct {
	Precision int `json:"precision"`
	Scale     int `json:"scale"`
}

// GeometryInfo is a geometry column's CRS and geometry types.
type GeometryInfo struct {
	CRS   string   `json:"crs"`
	Types []string `json:"types"`
}

// Type is a column type with what it carries.
type Type struct {
	Type      string        `json:"type"`
	Items     *Type         `json:"items,omitempty"`
	Precision *Precision    `json:"precision,omitempty"`
	Geometry  *GeometryInfo `json:"geometry,omitempty"`
}

// Column is one schema column.
type Column struct {
	Name string `json:"name"`
	Type
}

// Retyped is a column whose type changed.
type Retyped struct {
	Name string `json:"name"`
	From Type   `json:"from"`
	To   Type   `json:"to"`
}

// KeyChange is a change of key columns.
type KeyChange struct {
	From []string `json:"from"`
	To   []string `json:"to"`
}

// Schema bumps.
const (
	BumpMajor = "major"
	BumpMinor = "minor"
)

// SchemaChange is a schema's changeFromPrevious, and an event's schemaChange.
type SchemaChange struct {
	Bump       *string    `json:"bump"`
	Added      []Column   `json:"added"`
	Removed    []Column   `json:"removed"`
	Retyped    []Retyped  `json:"retyped"`
	KeyColumns *KeyChange `json:"keyColumns"`
}

// IsMajor reports whether the change is a MAJOR bump. A change whose bump
// is absent is MAJOR when it removes or retypes a column, or changes the
// key from one set of columns to another or drops it (schemas-and-holds.txt:
// "a column removed or retyped, or the key changed from one set of columns
// to another or dropped (a MAJOR bump)"); a key added where there was none
// is not.
func (c *SchemaChange) IsMajor() bool {
	if c == nil {
		return false
	}
	if c.Bump != nil && *c.Bump != "" {
		return strings.EqualFold(*c.Bump, BumpMajor) // the docs write MAJOR and MINOR
	}
	return len(c.Removed) > 0 || len(c.Retyped) > 0 || c.KeyColumns != nil && len(c.KeyColumns.From) > 0
}

// Schema is GET /v1/feeds/datasets/{dataset}/schema and a version's schema file.
type Schema struct {
	DatasetID          string        `json:"datasetId"`
	SchemaVersion      string        `json:"schemaVersion"`
	Columns            []Column      `json:"columns"`
	KeyColumns         []string      `json:"keyColumns"`
	ChangeFromPrevious *SchemaChange `json:"changeFromPrevious"`
}
