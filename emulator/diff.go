package emulator

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Diff compares a table a subscriber holds (in db, any DuckDB database)
// with Truth for a dataset's version: every row and every column of the
// truth, geometry by its WKT, timestamps as instants, everything else by its
// text. extra counts table rows not in the truth, missing truth rows the
// table lacks (as multisets); both are zero when the table is right. The
// table must have the truth's columns by name; it may have more.
func (e *Emulator) Diff(ctx context.Context, db *sql.DB, table, datasetID string, version int) (extra, missing int64, err error) {
	truth, err := e.Truth(ctx, datasetID, version)
	if err != nil {
		return 0, 0, err
	}
	return diffWith(ctx, db, table, truth, fmt.Sprintf("%s v%d", datasetID, version))
}

// diffWith compares a table with a truth file; label names the truth in
// errors.
func diffWith(ctx context.Context, db *sql.DB, table, truth, label string) (extra, missing int64, err error) {
	src := "read_parquet(" + quoteLiteral(truth) + ", hive_partitioning = false)"
	rows, err := db.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+src+")")
	if err != nil {
		return 0, 0, fmt.Errorf("diff %s: read truth: %w", label, err)
	}
	var cols []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return 0, 0, err
		}
		cols = append(cols, normalizedColumn(name, typ))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	sel := strings.Join(cols, ", ")
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT %[1]s FROM %[2]s EXCEPT ALL SELECT %[1]s FROM %[3]s)),
		(SELECT count(*) FROM (SELECT %[1]s FROM %[3]s EXCEPT ALL SELECT %[1]s FROM %[2]s))`, sel, table, src)
	if err := db.QueryRowContext(ctx, q).Scan(&extra, &missing); err != nil {
		return 0, 0, fmt.Errorf("diff %s with %s: %w", label, table, err)
	}
	return extra, missing, nil
}

// normalizedColumn renders a column the same way whatever type the table
// and the truth give it.
func normalizedColumn(name, typ string) string {
	q := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	switch {
	case strings.HasPrefix(typ, "TIMESTAMP"):
		return fmt.Sprintf("CAST(CAST(%s AS TIMESTAMPTZ) AS VARCHAR) AS %s", q, q)
	case strings.HasPrefix(typ, "GEOMETRY"):
		return fmt.Sprintf("ST_AsText(%s) AS %s", q, q)
	}
	return fmt.Sprintf("CAST(%s AS VARCHAR) AS %s", q, q)
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
