package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// PostGIS's binary input of geometry (geometry_recv, which a binary COPY
// runs) refuses shapes that DuckDB keeps and that PostGIS itself stores:
// a polygon ring of fewer than four points or not closed, a line of one
// point. Its text input of hex EWKB (geometry_in, which pg_dump's output
// goes through) checks none of them. A COPY that PostGIS refuses so is
// made again through a staging table that holds the geometry as bytea,
// then inserted with the text input: the table holds the shape the DuckDB
// file holds, rather than the dataset failing on one row.

// stageTable is the temporary table copyRows stages rows in.
const stageTable = "_ploti_shapes"

// oidBytea is bytea's oid: a staged geometry's.
const oidBytea = 17

// shapeRefused tells a PostgreSQL error of PostGIS's binary input
// refusing a geometry's shape (lwgeom's parser checks).
func shapeRefused(err error) bool {
	pe := pgError(err)
	if pe == nil || pe.Code != "XX000" {
		return false
	}
	m := pe.Message
	return strings.Contains(m, "must have at least") || strings.Contains(m, "must have closed rings") ||
		strings.Contains(m, "must have an odd number of points")
}

// copyRows COPYs query's rows into table's columns (cols, then tail, each
// a quoted name), as copyFrom does, and returns how many it copied. When
// PostGIS refuses a geometry's shape, it copies them again through
// stageTable. pre, when set, is a statement (without arguments) that runs
// first, in the round trip of the savepoint before the COPY; after is
// one the caller runs next, in the round trip of its next statement: the
// savepoint's release, or "".
func (tx *Tx) copyRows(ctx context.Context, pre, table string, cols []ploti.Column, tail []string, query string, args []any, encs []encoding) (n int64, after string, err error) {
	names := strings.Join(append([]string{columnNames(cols)}, tail...), ", ")
	alter, sel, staged := stagedColumns(cols, encs)
	if len(alter) == 0 {
		if pre != "" {
			if _, err := tx.conn.Exec(ctx, pre); err != nil {
				return 0, "", err
			}
		}
		n, err := tx.copyFrom(ctx, copySQL(table, names), query, args, encs)
		return n, "", err
	}
	if _, err := tx.conn.Exec(ctx, joinStatements(pre, "SAVEPOINT ploti_copy")); err != nil {
		return 0, "", err
	}
	n, err = tx.copyFrom(ctx, copySQL(table, names), query, args, encs)
	if err == nil {
		return n, "RELEASE SAVEPOINT ploti_copy", nil
	}
	if !shapeRefused(err) {
		return n, "", err
	}
	n, err = tx.copyStaged(ctx, table, names, sel, alter, tail, query, args, staged)
	return n, "", err
}

// copyStaged copies the rows again through stageTable, its geometry
// columns bytea, after PostGIS refused a shape (the savepoint before the
// first COPY taken and to go back to).
func (tx *Tx) copyStaged(ctx context.Context, table, names string, sel, alter, tail []string, query string, args []any, staged []encoding) (int64, error) {
	for _, q := range []string{
		"ROLLBACK TO SAVEPOINT ploti_copy",
		fmt.Sprintf("CREATE TEMPORARY TABLE %s (LIKE %s)", stageTable, table),
		fmt.Sprintf("ALTER TABLE %s %s", stageTable, strings.Join(alter, ", ")),
	} {
		if _, err := tx.conn.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("stage rows for %s: %w", table, err)
		}
	}
	n, err := tx.copyFrom(ctx, copySQL(stageTable, names), query, args, staged)
	if err != nil {
		return 0, err
	}
	sel = append(sel, tail...)
	if _, err := tx.conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s", table, names, strings.Join(sel, ", "), stageTable)); err != nil {
		return 0, err
	}
	for _, q := range []string{"DROP TABLE " + stageTable, "RELEASE SAVEPOINT ploti_copy"} {
		if _, err := tx.conn.Exec(ctx, q); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// joinStatements joins statements without arguments for one round trip
// (the simple protocol), leaving out empty ones.
func joinStatements(stmts ...string) string {
	var out []string
	for _, s := range stmts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}

// stagedColumns is how cols (encoded as encs) are staged: the ALTERs that
// make stageTable's geometry columns bytea, the select list that reads
// them back as geometry through the text input, and the encodings that
// COPY them as bytea. No ALTERs: no geometry column. (A list of geometry,
// which the DuckDB file does not load from Parquet, is staged as it is.)
func stagedColumns(cols []ploti.Column, encs []encoding) (alter, sel []string, staged []encoding) {
	sel = []string{ident(storage.ColRecordID), ident(storage.ColPlaceID)}
	staged = append([]encoding(nil), encs...)
	for i, c := range cols {
		q := ident(c.Name)
		switch {
		case encs[i+2].kind == kindGeometry:
			alter = append(alter, "ALTER COLUMN "+q+" TYPE bytea USING NULL")
			sel = append(sel, fmt.Sprintf("encode(%s, 'hex')::geometry", q))
			staged[i+2] = encoding{kind: kindGeometry, oid: oidBytea}
		default:
			sel = append(sel, q)
		}
	}
	return alter, sel, staged
}
