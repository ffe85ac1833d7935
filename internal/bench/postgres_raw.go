package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// PostgreSQL alone, the PostgreSQL section's baseline: what a DBA would
// run to load the same rows by hand, given the engine's table as DDL and
// the rows as a CSV file DuckDB wrote from the same Parquet.

// pgTable is a table's definition as read from PostgreSQL's catalog: what
// PostgreSQL alone creates to load the same rows into the same table.
type pgTable struct {
	Schema, Name string
	Columns      []pgColumn
	// Checks are CHECK constraints, part of CREATE TABLE.
	Checks []string
	// After are what the rows go in before: the primary key and unique
	// constraints (ALTER TABLE … ADD CONSTRAINT) and the other indexes
	// (CREATE INDEX), as their definitions read.
	After []string
	// Comments are the columns' COMMENT ON statements.
	Comments []string
	// Options are its storage parameters (fillfactor, …), as
	// pg_class.reloptions lists them.
	Options []string
}

// pgColumn is one column: its name, its type as format_type reads it,
// NOT NULL.
type pgColumn struct {
	Name, Type string
	NotNull    bool
}

// qualified is the table's quoted, schema-qualified name.
func (t *pgTable) qualified() string { return pgx.Identifier{t.Schema, t.Name}.Sanitize() }

// readTable reads a table's definition from the catalog of the database at u.
func readTable(ctx context.Context, u, schema, name string) (*pgTable, error) {
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	t := &pgTable{Schema: schema, Name: name}
	for _, read := range []func(context.Context, *pgx.Conn) error{t.readColumns, t.readOptions, t.readConstraints, t.readIndexes} {
		if err := read(ctx, c); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// readColumns reads the table's columns and their comments.
func (t *pgTable) readColumns(ctx context.Context, c *pgx.Conn) error {
	oid := t.qualified()
	rs, err := c.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, col_description(a.attrelid, a.attnum)
		FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, oid)
	if err != nil {
		return fmt.Errorf("read table %s: %w", oid, err)
	}
	for rs.Next() {
		var col pgColumn
		var comment *string
		if err := rs.Scan(&col.Name, &col.Type, &col.NotNull, &comment); err != nil {
			return err
		}
		t.Columns = append(t.Columns, col)
		if comment != nil {
			t.Comments = append(t.Comments, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", oid, pgx.Identifier{col.Name}.Sanitize(), storage.Literal(*comment)))
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("read table %s: %w", oid, err)
	}
	if len(t.Columns) == 0 {
		return fmt.Errorf("read table %s: no columns", oid)
	}
	return nil
}

// readOptions reads the table's storage parameters.
func (t *pgTable) readOptions(ctx context.Context, c *pgx.Conn) error {
	if err := c.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`, t.qualified()).Scan(&t.Options); err != nil {
		return fmt.Errorf("read the storage parameters of %s: %w", t.qualified(), err)
	}
	return nil
}

// readConstraints reads the table's CHECKs (part of its CREATE) and its
// keys (added after the rows).
func (t *pgTable) readConstraints(ctx context.Context, c *pgx.Conn) error {
	oid := t.qualified()
	rs, err := c.Query(ctx, `SELECT conname, contype::text, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = $1::regclass ORDER BY conname`, oid)
	if err != nil {
		return fmt.Errorf("read constraints of %s: %w", oid, err)
	}
	for rs.Next() {
		var cname, ctype, def string
		if err := rs.Scan(&cname, &ctype, &def); err != nil {
			return err
		}
		con := fmt.Sprintf("CONSTRAINT %s %s", pgx.Identifier{cname}.Sanitize(), def)
		switch ctype {
		case "c":
			t.Checks = append(t.Checks, con)
		case "p", "u", "x":
			t.After = append(t.After, fmt.Sprintf("ALTER TABLE %s ADD %s", oid, con))
		default:
			return fmt.Errorf("read table %s: constraint %s of kind %s: the bench builds no foreign keys or triggers", oid, cname, ctype)
		}
	}
	return rs.Err()
}

// readIndexes reads the indexes that back no constraint (pg_get_indexdef
// names the table with its schema), added after the rows.
func (t *pgTable) readIndexes(ctx context.Context, c *pgx.Conn) error {
	oid := t.qualified()
	rs, err := c.Query(ctx, `SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
		WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid)
		ORDER BY i.indexrelid::regclass::text`, oid)
	if err != nil {
		return fmt.Errorf("read indexes of %s: %w", oid, err)
	}
	defs, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		return err
	}
	t.After = append(t.After, defs...)
	return nil
}

// create is the CREATE TABLE statement: columns, NOT NULL, CHECKs, the
// storage parameters.
func (t *pgTable) create() string {
	var parts []string
	for _, c := range t.Columns {
		d := pgx.Identifier{c.Name}.Sanitize() + " " + c.Type
		if c.NotNull {
			d += " NOT NULL"
		}
		parts = append(parts, d)
	}
	parts = append(parts, t.Checks...)
	with := ""
	if len(t.Options) > 0 {
		with = " WITH (" + strings.Join(t.Options, ", ") + ")"
	}
	return fmt.Sprintf("CREATE TABLE %s (%s)%s", t.qualified(), strings.Join(parts, ", "), with)
}

// diff is "" when u has the same definition as t, else what differs.
func (t *pgTable) diff(u *pgTable) string {
	switch {
	case !slices.Equal(t.Columns, u.Columns):
		return fmt.Sprintf("columns %v against %v", t.Columns, u.Columns)
	case !slices.Equal(t.Checks, u.Checks):
		return fmt.Sprintf("checks %q against %q", t.Checks, u.Checks)
	case !slices.Equal(t.After, u.After):
		return fmt.Sprintf("constraints and indexes %q against %q", t.After, u.After)
	case !slices.Equal(t.Comments, u.Comments):
		return fmt.Sprintf("comments %q against %q", t.Comments, u.Comments)
	case !slices.Equal(t.Options, u.Options):
		return fmt.Sprintf("storage parameters %q against %q", t.Options, u.Options)
	}
	return ""
}

// writeCSV writes the rows of Parquet files as a CSV file in t's column
// order, with DuckDB (in memory): each column as the file has it, text
// PostgreSQL's CSV input reads (DuckDB's dates, decimals and numbers are
// PostgreSQL's), and geometry as hex EWKB in SRID 4326, the fastest form
// PostGIS reads. extra, when set, is a further column of the files
// written last (a changes file's _ploti_change).
func writeCSV(ctx context.Context, t *pgTable, files []string, extra, out string) error {
	db, err := duckread.OpenPlain(ctx, "", storage.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	src := "read_parquet(" + fileList(files) + ")"
	types := map[string]string{}
	rs, err := db.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+src+")")
	if err != nil {
		return fmt.Errorf("describe %s: %w", duckread.BaseNames(files), err)
	}
	defer rs.Close()
	for rs.Next() {
		var n, typ string
		if err := rs.Scan(&n, &typ); err != nil {
			return err
		}
		types[n] = typ
	}
	if err := rs.Err(); err != nil {
		return err
	}
	sel, err := csvSelect(t, types, extra)
	if err != nil {
		return err
	}
	q := fmt.Sprintf("COPY (SELECT %s FROM %s) TO %s (FORMAT csv, HEADER false)", sel, src, storage.Literal(out))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

// csvSelect is writeCSV's select list over a file whose columns have
// DuckDB's types (types).
func csvSelect(t *pgTable, types map[string]string, extra string) (string, error) {
	names := make([]string, 0, len(t.Columns)+1)
	for _, c := range t.Columns {
		names = append(names, c.Name)
	}
	if extra != "" {
		names = append(names, extra)
	}
	var parts []string
	for i, n := range names {
		typ, ok := types[n]
		if !ok {
			return "", fmt.Errorf("the file has no column %s", n)
		}
		col := storage.Ident(n)
		pgType := "text"
		if i < len(t.Columns) {
			pgType = t.Columns[i].Type
		}
		switch {
		case strings.HasPrefix(pgType, "geometry"):
			g := col
			if typ == "BLOB" {
				g = "ST_GeomFromWKB(" + col + ")"
			}
			parts = append(parts, ewkbHex(g))
		case strings.HasSuffix(pgType, "[]") || strings.Contains(typ, "[]") || strings.HasPrefix(typ, "STRUCT") || strings.HasPrefix(typ, "MAP"):
			return "", fmt.Errorf("column %s (%s): the bench's CSV writes no lists or structs", n, typ)
		default:
			parts = append(parts, col)
		}
	}
	return strings.Join(parts, ", "), nil
}

// ewkbHex is a DuckDB expression of a GEOMETRY's hex EWKB in SRID 4326:
// its WKB (little-endian, as DuckDB writes it) with the SRID flag set in
// the type's last byte and the SRID after the type.
func ewkbHex(g string) string {
	h := "hex(ST_AsWKB(" + g + "))"
	return fmt.Sprintf(`CASE WHEN %[1]s IS NULL THEN NULL
		WHEN substr(%[2]s, 1, 2) = '01' AND substr(%[2]s, 9, 2) = '00' THEN '01' || substr(%[2]s, 3, 6) || '20' || 'E6100000' || substr(%[2]s, 11)
		ELSE error('geometry is not little-endian WKB of a known type') END`, g, h)
}

// rawPGLoad is PostgreSQL alone loading a table: one transaction that
// creates it with t's DDL, COPYs the CSV file's rows in from the client
// (COPY FROM STDIN, as psql's \copy), adds its constraints and indexes
// and its comments.
func rawPGLoad(ctx context.Context, u string, t *pgTable, csv string) error {
	return inPGTx(ctx, u, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, t.create()); err != nil {
			return err
		}
		if err := copyCSV(ctx, c, t.qualified(), csv); err != nil {
			return err
		}
		for _, q := range append(slices.Clone(t.After), t.Comments...) {
			if _, err := c.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// rawPGMerge is PostgreSQL alone merging a changes file by record id: one
// transaction that COPYs the CSV of its rows (t's columns and
// _ploti_change) into a temporary table, deletes the rows it changes or
// removes and inserts the rows it adds or changes; with update, it
// updates the changed rows in place instead (the engine's way), deletes
// the removed ones and inserts the added ones.
func rawPGMerge(ctx context.Context, u string, t *pgTable, csv string, update bool) error {
	return inPGTx(ctx, u, func(c *pgx.Conn) error {
		tt, id, change := t.qualified(), storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange)
		var cols, set []string
		for _, col := range t.Columns {
			n := pgx.Identifier{col.Name}.Sanitize()
			cols = append(cols, n)
			if col.Name != storage.ColRecordID {
				set = append(set, n+" = m."+n)
			}
		}
		names := strings.Join(cols, ", ")
		stmts := []string{
			fmt.Sprintf("CREATE TEMPORARY TABLE raw_changes (LIKE %s, %s text) ON COMMIT DROP", tt, change),
			"COPY",
		}
		if update {
			stmts = append(stmts,
				fmt.Sprintf("UPDATE %s t SET %s FROM raw_changes m WHERE t.%s = m.%s AND m.%s = 'changed'", tt, strings.Join(set, ", "), id, id, change),
				fmt.Sprintf("DELETE FROM %s t USING raw_changes m WHERE t.%s = m.%s AND m.%s = 'removed'", tt, id, id, change),
				fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM raw_changes WHERE %s = 'added'", tt, names, names, change))
		} else {
			stmts = append(stmts,
				fmt.Sprintf("DELETE FROM %s t USING raw_changes m WHERE t.%s = m.%s AND m.%s <> 'added'", tt, id, id, change),
				fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM raw_changes WHERE %s <> 'removed'", tt, names, names, change))
		}
		for _, q := range stmts {
			var err error
			if q == "COPY" {
				err = copyCSV(ctx, c, "raw_changes", csv)
			} else {
				_, err = c.Exec(ctx, q)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// inPGTx runs fn in a transaction on a new session of the database at u,
// commits and hangs up: a whole step, connection included.
func inPGTx(ctx context.Context, u string, fn func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	if _, err := c.Exec(ctx, "BEGIN"); err != nil {
		return err
	}
	if err := fn(c); err != nil {
		c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	_, err = c.Exec(ctx, "COMMIT")
	return err
}

// copyCSV streams a CSV file into table by COPY FROM STDIN.
func copyCSV(ctx context.Context, c *pgx.Conn, table, csv string) error {
	f, err := os.Open(csv)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := c.PgConn().CopyFrom(ctx, f, "COPY "+table+" FROM STDIN (FORMAT csv)"); err != nil {
		return fmt.Errorf("copy %s into %s: %w", csv, table, err)
	}
	return nil
}

// tableSummary is a table's row count and a checksum of its rows: the
// sum of a 64-bit hash of each row's text (geometry as hex EWKB), which
// no order of the rows changes.
type tableSummary struct {
	Rows int64
	Sum  string
}

// tableSum reads t's summary in the database at u.
func tableSum(ctx context.Context, u string, t *pgTable) (tableSummary, error) {
	var s tableSummary
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return s, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	err = c.QueryRow(ctx, fmt.Sprintf(`SELECT count(*), coalesce(sum(hashtextextended(t::text, 0)::numeric), 0)::text FROM %s t`,
		t.qualified())).Scan(&s.Rows, &s.Sum)
	if err != nil {
		return s, fmt.Errorf("checksum %s: %w", t.qualified(), err)
	}
	return s, nil
}

// readerQuery is the reader's query: the rows in a small box (about a
// four hundredth of the permits' area) through the GiST index.
func readerQuery(t *pgTable) string {
	g := ""
	for _, c := range t.Columns {
		if strings.HasPrefix(c.Type, "geometry") {
			g = c.Name
			break
		}
	}
	if g == "" {
		return "SELECT count(*) FROM " + t.qualified()
	}
	return fmt.Sprintf("SELECT count(*) FROM %s WHERE %s && ST_MakeEnvelope(-81.41, 28.49, -81.39, 28.51, 4326)", t.qualified(), pgx.Identifier{g}.Sanitize())
}
