package bench

import (
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// permitColumns is a permits-like schema: a permit number (the key), an
// issued date, a status, a valuation DECIMAL(14,2), a description of about
// 60 characters, units and a point.
var permitColumns = []emulator.Column{
	{Name: "permit_number", Type: "string"},
	{Name: "issued_date", Type: "date"},
	{Name: "status", Type: "string"},
	{Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
	{Name: "description", Type: "string"},
	{Name: "units", Type: "integer"},
	{Name: "location", Type: "geometry", Geometry: &emulator.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}},
}

var permitKey = []string{"permit_number"}

// churn is one version's changes, as fractions of the base row count: a
// half changed, a quarter added, a quarter removed (the mix).
type churn struct {
	fraction float64
}

func (c churn) changed() float64 { return c.fraction / 2 }
func (c churn) removed() float64 { return c.fraction / 4 }
func (c churn) added(base int64) int64 {
	return int64(float64(base)*c.fraction/4 + 0.5)
}

// permitsSQL is a DuckDB SELECT of a permits dataset's rows at a version:
// base rows 0..base-1, then, for each later version j (history[j-2] is its
// churn), some rows removed, some changed (the row's revision counts how
// often) and a block of new rows added. The same arguments always give the
// same rows, so each version is a deterministic edit of the one before.
func permitsSQL(base int64, history []churn) string {
	const scale = 1000000
	n := base
	var gone, rev []string
	for j, c := range history {
		v := j + 2
		salt := int64(v) * 7919
		if r := int64(c.removed() * scale); r > 0 {
			gone = append(gone, fmt.Sprintf("(i < %d AND hash(i + %d) %% %d < %d)", n, salt, scale, r))
		}
		if ch := int64(c.changed() * scale); ch > 0 {
			rev = append(rev, fmt.Sprintf("CAST(i < %d AND hash(i * 3 + %d) %% %d < %d AS INTEGER)", n, salt, scale, ch))
		}
		n += c.added(base)
	}
	goneExpr, revExpr := "false", "0"
	if len(gone) > 0 {
		goneExpr = strings.Join(gone, " OR ")
	}
	if len(rev) > 0 {
		revExpr = strings.Join(rev, " + ")
	}
	return fmt.Sprintf(`SELECT
	'BP-' || lpad(CAST(i AS VARCHAR), 10, '0') AS permit_number,
	DATE '2016-01-01' + CAST(hash(i) %% 3650 AS INTEGER) AS issued_date,
	['applied', 'in review', 'issued', 'inspection', 'finaled', 'expired', 'void'][1 + CAST(hash(i + rev * 104729) %% 7 AS INTEGER)] AS status,
	CAST(hash(i * 5 + rev) %% 250000000 AS DECIMAL(14,2)) / 100 AS valuation,
	['New single family dwelling', 'Re-roof, shingle to metal', 'Interior alteration', 'Pool and screen enclosure',
	 'Commercial tenant build-out', 'Solar photovoltaic system'][1 + CAST(hash(i * 7) %% 6 AS INTEGER)]
		|| ', ' || CAST(500 + hash(i * 11 + rev) %% 4500 AS VARCHAR) || ' sq ft at '
		|| CAST(100 + hash(i * 13) %% 9800 AS VARCHAR) || ' '
		|| ['Orange Blossom Trl', 'Colonial Dr', 'Semoran Blvd', 'Kirkman Rd', 'Sand Lake Rd'][1 + CAST(hash(i * 17) %% 5 AS INTEGER)] AS description,
	CAST(hash(i * 19 + rev) %% 12 AS BIGINT) AS units,
	'POINT (' || CAST(round(-81.6 + (hash(i * 23) %% 400000) / 1e6, 6) AS VARCHAR) || ' '
		|| CAST(round(28.3 + (hash(i * 29) %% 400000) / 1e6, 6) AS VARCHAR) || ')' AS location
FROM (SELECT i, %s AS rev FROM range(0, %d) t(i) WHERE NOT (%s))`, revExpr, n, goneExpr)
}
