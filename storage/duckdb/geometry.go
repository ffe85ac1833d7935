package duckdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// storedType is the DuckDB type of a column of type t in this file's
// tables: DuckType, with geometry as a BLOB of WKB when the file stores
// WKB.
func (db *DB) storedType(t ploti.Type) (string, error) {
	d, err := duckread.DuckType(t)
	if err != nil || db.geometry != storage.GeometryWKB || !storage.HasGeometry(t) {
		return d, err
	}
	return strings.Replace(d, "GEOMETRY", "BLOB", 1), nil
}

// stored turns q, a query of a dataset table's rows whose geometry columns
// are GEOMETRY, into the rows as this file stores them: with WKB, each
// geometry becomes its WKB (in DuckDB 1.5, GEOMETRY holds WKB already, so
// this costs little; docs/bench-history.md). A value the query cannot turn into
// geometry fails it either way: a bad file is refused in both encodings.
func (db *DB) stored(q string, cols []ploti.Column) string {
	if db.geometry != storage.GeometryWKB {
		return q
	}
	if repl := storage.ReplaceGeometry(cols, "ST_AsWKB"); repl != "" {
		return fmt.Sprintf("SELECT * REPLACE (%s) FROM (%s)", repl, q)
	}
	return q
}

// commentGeometry puts GeometryComment on each geometry column of table
// (a table just created or given new columns: DuckDB keeps a comment with
// its column, and a CREATE OR REPLACE starts without).
func (tx *Tx) commentGeometry(ctx context.Context, table string, cols []ploti.Column) error {
	for _, c := range cols {
		if !storage.HasGeometry(c.Type) {
			continue
		}
		q := fmt.Sprintf("COMMENT ON COLUMN main.%s.%s IS %s", storage.Ident(table), storage.Ident(c.Name), storage.Literal(storage.GeometryComment(c.Type, tx.db.geometry)))
		if _, err := tx.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("comment on %s.%s: %w", table, c.Name, err)
		}
	}
	return nil
}

// readGeometry reads the file's geometry setting.
func (db *DB) readGeometry(ctx context.Context) error {
	err := db.sql.QueryRowContext(ctx, "SELECT value FROM _ploti.settings WHERE name = 'geometry'").Scan(&db.geometry)
	if err != nil {
		return fmt.Errorf("open %s: read the geometry setting: %w", db.path, err)
	}
	return nil
}

// setGeometry makes the file store geometry as want, converting the
// geometry columns of every dataset table in one transaction with the
// setting, so that a file is always all one or all the other.
func (db *DB) setGeometry(ctx context.Context, want string) error {
	if want == "" || want == db.geometry {
		return nil
	}
	fn := "ST_AsWKB"
	if want == storage.GeometryNative {
		fn = "ST_GeomFromWKB"
	}
	was := db.geometry
	db.geometry = want // for storedType and the comments
	err := db.update(ctx, func(reg *storage.Tx, tx *Tx) error {
		ds, err := reg.Datasets(ctx)
		if err != nil {
			return err
		}
		histories, err := tx.historyTables(ctx) // history.go
		if err != nil {
			return err
		}
		for _, d := range ds {
			if err := tx.convertTable(ctx, d, fn); err != nil {
				return err
			}
			if !histories[d.Table] {
				continue
			}
			if err := tx.convertHistory(ctx, d, fn); err != nil {
				return err
			}
		}
		_, err = tx.tx.ExecContext(ctx, "UPDATE _ploti.settings SET value = ? WHERE name = 'geometry'", want)
		return err
	})
	if err != nil {
		db.geometry = was
		return fmt.Errorf("open %s: store geometry as %s: %w", db.path, want, err)
	}
	return nil
}

// convertTable converts a dataset table's geometry columns with fn, those
// that its registry row says are geometry and that the table has in the
// other encoding.
func (tx *Tx) convertTable(ctx context.Context, d *storage.Dataset, fn string) error {
	tx.heavyWrite()
	have := map[string]string{}
	rows, err := tx.tx.QueryContext(ctx, `SELECT column_name, data_type FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ?`, d.Table)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return err
		}
		have[name] = typ
	}
	if err := rows.Close(); err != nil {
		return err
	}
	var done []ploti.Column
	for _, c := range d.Columns {
		want, err := tx.db.storedType(c.Type)
		if err != nil || !storage.HasGeometry(c.Type) || have[c.Name] == "" || have[c.Name] == want {
			continue
		}
		q := fmt.Sprintf("ALTER TABLE main.%s ALTER COLUMN %s SET DATA TYPE %s USING %s",
			storage.Ident(d.Table), storage.Ident(c.Name), want, storage.ConvertGeometry(c.Type, storage.Ident(c.Name), fn))
		if _, err := tx.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("convert %s.%s: %w", d.Table, c.Name, err)
		}
		done = append(done, c)
	}
	return tx.commentGeometry(ctx, d.Table, done)
}
