package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// LoadSnapshot replaces table with the rows of a version's snapshot parts:
// the in-memory DuckDB reads the Parquet files, checks their columns and
// record ids and casts them to the schema's types, exactly as the DuckDB
// engine does, and COPY (binary) puts the rows in a new table, which
// replaces the old one when the transaction commits (swapIn). Readers see
// the old table until then, without waiting. It refuses a snapshot whose
// columns do not fit or whose record ids are null or repeat (a
// storage.DataError), and returns the row count.
func (tx *Tx) LoadSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error) {
	return tx.loadSnapshot(ctx, table, cols, files, true)
}

// CreateSnapshot is LoadSnapshot into a table that must not exist yet: it
// fails, and changes nothing, when the schema already has a table or view
// of that name.
func (tx *Tx) CreateSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error) {
	return tx.loadSnapshot(ctx, table, cols, files, false)
}

func (tx *Tx) loadSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string, replace bool) (int64, error) {
	if len(files) == 0 {
		return 0, &storage.DataError{Detail: "version has no snapshot files"}
	}
	names := duckread.BaseNames(files)
	stopped := func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("load %s: %w: %w", names, cerr, err)
		}
		return nil
	}
	src := duckread.ParquetSource(files)
	have, types, err := tx.db.fileColumns(ctx, src)
	if err != nil {
		if serr := stopped(err); serr != nil {
			return 0, serr
		}
		return 0, &storage.DataError{File: names, Detail: "not a readable Parquet snapshot: " + err.Error()}
	}
	if cols == nil {
		return 0, fmt.Errorf("load %s into %s: PostgreSQL tables need the dataset's schema", names, table)
	}
	if err := duckread.CheckColumns(have, cols); err != nil {
		return 0, &storage.DataError{File: names, Detail: err.Error()}
	}
	sel, err := duckread.SelectList(cols, types)
	if err != nil {
		return 0, err
	}
	id := storage.Ident(storage.ColRecordID)
	n, nulls, dups, err := duckread.CheckRecordIDs(ctx, tx.db.duck, fmt.Sprintf("(SELECT CAST(%[1]s AS VARCHAR) AS %[1]s FROM %[2]s)", id, src))
	if err != nil {
		if serr := stopped(err); serr != nil {
			return 0, serr
		}
		return 0, &storage.DataError{File: names, Detail: "load: " + err.Error()}
	}
	if err := duckread.SnapshotIDFaults(names, nulls, dups); err != nil {
		return 0, err
	}
	if !replace {
		if exists, err := tx.TableExists(ctx, table); err != nil || exists {
			if err == nil {
				err = fmt.Errorf("relation %s already exists", tx.db.table(table))
			}
			return 0, fmt.Errorf("create table %s: %w", table, err)
		}
	}
	got, err := tx.build(ctx, table, cols, fmt.Sprintf("SELECT %s FROM %s", sel, src), nil)
	if err != nil {
		if serr := stopped(err); serr != nil {
			return 0, serr
		}
		return 0, loadFault(names, err)
	}
	if got != n {
		return 0, fmt.Errorf("load %s: copied %d rows of %d", names, got, n)
	}
	return n, nil
}

// loadFault makes a DataError of a load's error when the rows are at
// fault (a value that does not cast in DuckDB, or that PostgreSQL or
// PostGIS refuse); other errors stay as they are.
func loadFault(names string, err error) error {
	var de *duckError
	if errors.As(err, &de) && isConversion(de.err) {
		return &storage.DataError{File: names, Detail: "load: " + firstLine(de.err.Error())}
	}
	if dataFault(err) {
		return &storage.DataError{File: names, Detail: "load: " + pgMessage(err)}
	}
	return err
}

// renamed is err with the name of the table a load builds replaced by
// the dataset table's, in PostgreSQL's words ("at COPY permits, line 7,
// column geometry").
func renamed(err error, built, table string) error {
	pe := pgError(err)
	if pe == nil {
		return err
	}
	c := *pe
	c.Message = strings.ReplaceAll(c.Message, built, table)
	c.Detail = strings.ReplaceAll(c.Detail, built, table)
	c.Where = strings.ReplaceAll(c.Where, built, table)
	return &c
}

// pgMessage is a PostgreSQL error's message and detail on one line.
func pgMessage(err error) string {
	pe := pgError(err)
	if pe == nil {
		return firstLine(err.Error())
	}
	msg := pe.Message
	if pe.Detail != "" {
		msg += " (" + firstLine(pe.Detail) + ")"
	}
	if pe.Where != "" {
		msg += " at " + firstLine(pe.Where)
	}
	return msg
}

// LoadRows replaces table with the rows of NDJSON files (a whole read of a
// watched dataset's rows), each value cast to its column's type by the
// in-memory DuckDB's read_json as the DuckDB engine casts it, and COPY'd
// into a new table swapped in at commit, as LoadSnapshot. No files makes
// an empty table. It refuses null or repeated record ids and rows that do
// not fit the columns (a storage.DataError), and returns the row count.
func (tx *Tx) LoadRows(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error) {
	rel := ""
	if len(files) > 0 {
		q, err := duckread.JSONRowsQuery(files, cols, "")
		if err != nil {
			return 0, err
		}
		rel = q
	}
	n, err := tx.build(ctx, table, cols, rel, nil)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, cerr
		}
		var de *duckError
		if errors.As(err, &de) {
			return 0, duckread.JSONError(duckread.BaseNames(files), de.err)
		}
		var ie *idsError
		if errors.As(err, &ie) {
			return 0, &storage.DataError{File: duckread.BaseNames(files), Detail: fmt.Sprintf("rows have %d null and %d repeated _ploti_record_id values", ie.nulls, ie.dups)}
		}
		return 0, loadFault(duckread.BaseNames(files), err)
	}
	return n, nil
}

// idsError is a built table whose record ids are null or repeat.
type idsError struct{ nulls, dups int64 }

func (e *idsError) Error() string {
	return fmt.Sprintf("%d null and %d repeated record ids", e.nulls, e.dups)
}

// build makes table's next version: a new table in the tables' schema,
// rel's rows COPY'd into it (none when rel is empty), its primary key on
// _ploti_record_id, a GiST index on each geometry column and each
// geometry column's comment; the swap at commit puts it in table's place.
// A second build of table in the transaction replaces the first.
func (tx *Tx) build(ctx context.Context, table string, cols []ploti.Column, rel string, args []any) (int64, error) {
	if len(table) > maxIdent {
		return 0, fmt.Errorf("table name %s is longer than PostgreSQL's %d bytes", table, maxIdent)
	}
	if err := tx.dropBuilt(ctx, table); err != nil {
		return 0, err
	}
	tx.db.loads++
	s := swap{table: table, built: fmt.Sprintf("_ploti_load_%d", tx.db.loads)}
	defs, err := columnDefs(cols)
	if err != nil {
		return 0, err
	}
	t := tx.db.table(s.built)
	if _, err := tx.conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (%s) WITH (%s)", t, defs, tableOptions)); err != nil {
		return 0, fmt.Errorf("create %s: %w", table, err)
	}
	var n int64
	var after string
	if rel != "" {
		encs, err := encodings(cols, tx.db.geomOID)
		if err != nil {
			return 0, err
		}
		if n, after, err = tx.copyRows(ctx, "", t, cols, nil, exportSelect(rel, cols), args, encs); err != nil {
			return 0, renamed(err, s.built, table)
		}
	}
	if err := tx.primaryKey(ctx, after, t, &s); err != nil {
		return 0, err
	}
	for i, c := range cols {
		if c.Type.Type != ploti.TypeGeometry {
			continue
		}
		ix := fmt.Sprintf("%s_%d_gist", s.built, i)
		if _, err := tx.conn.Exec(ctx, fmt.Sprintf("CREATE INDEX %s ON %s USING gist (%s)", ident(ix), t, ident(c.Name))); err != nil {
			return 0, fmt.Errorf("index %s.%s: %w", table, c.Name, err)
		}
		s.indexes = append(s.indexes, ix)
		s.final = append(s.final, shortName(table+"_"+c.Name+"_gist"))
	}
	if err := tx.commentGeometry(ctx, t, cols); err != nil {
		return 0, err
	}
	tx.swaps = append(tx.swaps, s)
	return n, nil
}

// tableOptions are a dataset table's storage parameters.
//
// fillfactor 90: a load leaves a tenth of each page free, so that a merge's
// changed rows are updated on their own pages (HOT updates: no new index
// entries, and the old row's room taken back by the page's next pruning,
// without VACUUM). The table is about a ninth larger on disk.
//
// vacuum_truncate off: a VACUUM (autovacuum, after merges removed the rows
// at a table's end) never takes the table's ACCESS EXCLUSIVE lock to give
// its empty last pages back. On the primary that lock is brief, but a hot
// standby replays it as a swap's: the replay waits for every query reading
// the table, the queries that come meanwhile wait behind it, and past
// max_standby_streaming_delay the standby cancels the readers, at any
// time, not only when a load swaps a table in. The pages stay the
// table's, for the rows of later merges.
const tableOptions = "fillfactor = 90, vacuum_truncate = off"

// tableOptionList is tableOptions as pg_class.reloptions lists them.
var tableOptionList = []string{"fillfactor=90", "vacuum_truncate=off"}

// primaryKey adds the built table's primary key on _ploti_record_id, or
// refuses its rows with an idsError when their ids are null or repeat.
// pre runs first, in the same round trip.
func (tx *Tx) primaryKey(ctx context.Context, pre, t string, s *swap) error {
	pk := s.built + "_pkey"
	if _, err := tx.conn.Exec(ctx, joinStatements(pre, "SAVEPOINT ploti_pkey")); err != nil {
		return err
	}
	_, err := tx.conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s PRIMARY KEY (%s)", t, ident(pk), ident(storage.ColRecordID)))
	if err == nil {
		s.indexes = append(s.indexes, pk)
		s.final = append(s.final, shortName(s.table+"_pkey"))
		return nil
	}
	if pe := pgError(err); pe == nil || (pe.Code != "23505" && pe.Code != "23502") {
		return fmt.Errorf("primary key of %s: %w", s.table, err)
	}
	if _, err := tx.conn.Exec(ctx, "ROLLBACK TO SAVEPOINT ploti_pkey"); err != nil {
		return err
	}
	var ie idsError
	id := ident(storage.ColRecordID)
	if err := tx.conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*) - count(%[1]s), count(%[1]s) - count(DISTINCT %[1]s) FROM %[2]s", id, t)).Scan(&ie.nulls, &ie.dups); err != nil {
		return err
	}
	return &ie
}

// dropBuilt drops a table an earlier load of table built in this
// transaction.
func (tx *Tx) dropBuilt(ctx context.Context, table string) error {
	for i, s := range tx.swaps {
		if s.table != table {
			continue
		}
		if _, err := tx.conn.Exec(ctx, "DROP TABLE "+tx.db.table(s.built)); err != nil {
			return err
		}
		tx.swaps = append(tx.swaps[:i], tx.swaps[i+1:]...)
		return nil
	}
	return nil
}

// rel is the table that statements on table act on in this transaction:
// the table a load built, until the commit swaps it in, or table.
func (tx *Tx) rel(table string) string {
	for _, s := range tx.swaps {
		if s.table == table {
			return tx.db.table(s.built)
		}
	}
	return tx.db.table(table)
}

// commentGeometry puts storage.GeometryComment on each geometry column of
// t (a qualified table), for readers that know nothing of _ploti.
func (tx *Tx) commentGeometry(ctx context.Context, t string, cols []ploti.Column) error {
	for _, c := range cols {
		if !hasGeometry(c.Type) {
			continue
		}
		q := fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", t, ident(c.Name), storage.Literal(storage.GeometryComment(c.Type, GeometryPostGIS)))
		if _, err := tx.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("comment on %s.%s: %w", t, c.Name, err)
		}
	}
	return nil
}

// GeometryPostGIS is how a PostgreSQL replica stores geometry
// (_ploti.settings 'geometry'): PostGIS geometry in SRID 4326.
const GeometryPostGIS = "postgis"

// TableExists reports whether the tables' schema has a table (or view)
// of that name, or this transaction built one.
func (tx *Tx) TableExists(ctx context.Context, table string) (bool, error) {
	for _, s := range tx.swaps {
		if s.table == table {
			return true, nil
		}
	}
	var ok bool
	err := tx.conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", tx.db.table(table)).Scan(&ok)
	return ok, err
}
