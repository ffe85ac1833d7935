package duckdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// fileColumns lists the columns of Parquet files (of the first, when
// several parts must agree), with the DuckDB type each is read as. Its
// error does not name the files: the caller's DataError does.
func (tx *Tx) fileColumns(ctx context.Context, files []string) ([]string, map[string]string, error) {
	return duckread.SourceColumns(ctx, tx.tx, duckread.ParquetSource(files))
}

// LoadSnapshot replaces table with the rows of a version's snapshot parts,
// read by DuckDB, cast to the schema's types. The old table stays until the
// transaction commits. It refuses a snapshot whose record ids are null or
// repeat. It returns the row count.
func (tx *Tx) LoadSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error) {
	tx.heavyWrite()
	return tx.loadSnapshot(ctx, table, cols, files, true)
}

// CreateSnapshot is LoadSnapshot into a table that must not exist yet: it
// fails, and changes nothing, when main already has a table or view of
// that name (a user's, made since the name was chosen).
func (tx *Tx) CreateSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error) {
	tx.heavyWrite()
	return tx.loadSnapshot(ctx, table, cols, files, false)
}

func (tx *Tx) loadSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string, replace bool) (int64, error) {
	if len(files) == 0 {
		return 0, &storage.DataError{Detail: "version has no snapshot files"}
	}
	if err := tx.fitThreads(ctx, smallFiles(files)); err != nil {
		return 0, err
	}
	stopped := loadStopped(ctx, files)
	sel, cols, err := tx.snapshotSelect(ctx, files, cols)
	if err != nil {
		return 0, err
	}
	// The ids are checked in the files, before the load: the check's sort
	// is done and its memory free before the load fills DuckDB's buffers
	// (checking the loaded table added a sixth to the peak RSS).
	src := duckread.ParquetSource(files)
	n, nulls, dups, err := tx.snapshotIDs(ctx, files)
	if err != nil {
		if serr := stopped(err); serr != nil {
			return 0, serr
		}
		return 0, &storage.DataError{File: duckread.BaseNames(files), Detail: "load: " + err.Error()}
	}
	if err := duckread.SnapshotIDFaults(duckread.BaseNames(files), nulls, dups); err != nil {
		return 0, err
	}
	create := "CREATE TABLE"
	if replace {
		create = "CREATE OR REPLACE TABLE"
	}
	q := fmt.Sprintf("%s main.%s AS %s", create, storage.Ident(table), tx.db.stored(fmt.Sprintf("SELECT %s FROM %s", sel, src), cols))
	if _, err := tx.tx.ExecContext(ctx, q); err != nil {
		if serr := stopped(err); serr != nil {
			return 0, serr
		}
		if !replace && strings.Contains(err.Error(), "already exists") {
			return 0, fmt.Errorf("create table %s: %w", table, err)
		}
		return 0, &storage.DataError{File: duckread.BaseNames(files), Detail: "load: " + err.Error()}
	}
	return n, tx.commentGeometry(ctx, table, cols)
}

// loadStopped is how a load names a failure while its context is done: a
// stopped sync is not the file's fault, so the error names the context's
// (nil while the context is live).
func loadStopped(ctx context.Context, files []string) func(error) error {
	return func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("load %s: %w: %w", duckread.BaseNames(files), cerr, err)
		}
		return nil
	}
}

// snapshotSelect checks a snapshot's columns (read from its footers)
// against the schema and returns the select list that casts them to the
// schema's types, and the columns (the file's own when cols is nil).
func (tx *Tx) snapshotSelect(ctx context.Context, files []string, cols []ploti.Column) (string, []ploti.Column, error) {
	have, types, err := tx.fileColumns(ctx, files)
	if err != nil {
		if serr := loadStopped(ctx, files)(err); serr != nil {
			return "", nil, serr
		}
		return "", nil, &storage.DataError{File: duckread.BaseNames(files), Detail: "not a readable Parquet snapshot: " + err.Error()}
	}
	if cols == nil {
		cols = duckread.ColumnsFromFile(have)
	}
	if err := duckread.CheckColumns(have, cols); err != nil {
		return "", nil, &storage.DataError{File: duckread.BaseNames(files), Detail: err.Error()}
	}
	sel, err := duckread.SelectList(cols, types)
	return sel, cols, err
}

// checkRecordIDs counts rel's rows, null record ids and repeated ones in
// the file's transaction (duckread.CheckRecordIDs).
func (tx *Tx) checkRecordIDs(ctx context.Context, rel string) (n, nulls, dups int64, err error) {
	return duckread.CheckRecordIDs(ctx, tx.tx, rel)
}

// mergeDeleteSQL is the MERGE that deletes a changes file's changed and
// removed rows from table t and refuses an added id that t holds; ids is
// a query of the file's record ids and kinds of change (see MergeChanges).
//
// The source's WHERE keeps every row (MergeChanges has refused any other
// kind of change before) but makes the join's build side a filtering one,
// and only then does DuckDB push a Bloom filter of the file's ids into the
// table's scan (its join filter pushdown asks for a filter on the build
// side): the scan hands the join about as many rows as the file has,
// instead of every row of the table. The join's CPU time at 1% of
// 10M rows fell from 0.26 s to 0.05 s; DuckDB alone's DELETE ... WHERE id
// IN (SELECT ... WHERE change <> 'added') has the filter by chance.
func mergeDeleteSQL(t, ids string) string {
	return fmt.Sprintf(`MERGE INTO %[3]s t
		USING (SELECT * FROM %[5]s WHERE %[2]s IN ('added', 'changed', 'removed')) m ON t.%[1]s = m.%[1]s
		WHEN MATCHED AND m.%[2]s = 'added' THEN ERROR concat('%[4]sadded id ', m.%[1]s, ' is already held')
		WHEN MATCHED THEN DELETE`,
		storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange), t, duckread.FitMark, ids)
}

// MergeChanges applies a changes file to table by _ploti_record_id: removed
// and changed rows are deleted, added and changed rows inserted, and each
// change is logged in _ploti.changes. A file that does not fit the table
// (columns, null or repeated ids, an added id already held, a changed or
// removed id not held) is refused with a DataError and changes nothing.
// rowsBefore is the table's row count before the merge, or negative when
// unknown; the stats' Rows is the count after.
func (tx *Tx) MergeChanges(ctx context.Context, datasetID string, version int, table string, cols []ploti.Column, file string, rowsBefore int64) (storage.MergeStats, error) {
	var st storage.MergeStats
	small, err := tx.fitMerge(ctx, file, rowsBefore)
	if err != nil {
		return st, err
	}
	// A large merge's checks read the file beside its statements (aside.go).
	aside := !small && tx.startAside(ctx, file)
	cf, err := tx.probeChanges(ctx, cols, file)
	if err != nil {
		return st, err
	}
	id, change, t := storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange), "main."+storage.Ident(table)
	// The file's ids and changes, read from the file by each statement
	// that needs them, as DuckDB alone would (a temporary table of
	// them cost 0.02–0.03 s of a 1% merge at 10M rows, a copy of every
	// column a tenth of it; reading two columns again costs less).
	ids := duckread.ChangesIDsSQL(cf.src, cf.types)
	// The file's own checks (ids, kinds of change, their counts) come
	// before the statements' verdict: a file with repeated ids is
	// refused for them, whatever the MERGE made of it. Read in the
	// transaction, they come before the MERGE, whose refusal leaves it
	// unusable.
	if !aside {
		got, err := countChanges(ctx, tx.tx, []string{file})
		if err := fileFits(ctx, file, got[file], err, &st); err != nil {
			return st, err
		}
	}
	deleted, _, applyErr := tx.applyChanges(ctx, table, cols, cf)
	if aside {
		c, _, err := tx.takeAside(file)
		if err := fileFits(ctx, file, c, err, &st); err != nil {
			return st, err
		}
	}
	if applyErr != nil {
		return st, applyErr
	}
	// The caller rolls the transaction back on an error: nothing changes.
	if want := st.Changed + st.Removed; deleted != want {
		return st, tx.changesNotHeld(ctx, table, file, want, deleted)
	}
	if _, err := tx.logSet(ctx, datasetID, version, fmt.Sprintf("%s, %s FROM %s", id, change, ids)); err != nil {
		return st, fmt.Errorf("log changes of %s v%d: %w", datasetID, version, err)
	}
	if rowsBefore >= 0 {
		st.Rows = rowsBefore + st.Added - st.Removed
		return st, nil
	}
	if err := tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&st.Rows); err != nil {
		return st, err
	}
	return st, nil
}

// fileFits refuses a changes file whose counts (read with err) show null,
// repeated or unknown ids or kinds, and fills st's counts of each kind.
func fileFits(ctx context.Context, file string, c changeCounts, err error, st *storage.MergeStats) error {
	if err != nil {
		return countsFailed(ctx, []string{file}, err)
	}
	st.Added, st.Changed, st.Removed = c.added, c.changed, c.removed
	return duckread.FileFaults(filepath.Base(file), c.nulls, c.dups, c.bad)
}

// changesFile is a changes file probed: its read_parquet call, the types
// DuckDB reads its columns as, and the select list that reads it into the
// table.
type changesFile struct {
	path, src, sel string
	types          map[string]string
}

// probeChanges reads a changes file's columns, refuses one that lacks a
// column of the schema or has one the schema does not, and returns how to
// read it into the table.
func (tx *Tx) probeChanges(ctx context.Context, cols []ploti.Column, file string) (changesFile, error) {
	name := filepath.Base(file)
	cf := changesFile{path: file, src: duckread.ParquetSource([]string{file})}
	var have []string
	var types map[string]string
	var err error
	if f, ok := tx.db.facts.get(file); ok {
		have, types = f.have, f.types
	} else if have, types, err = tx.fileColumns(ctx, []string{file}); err != nil {
		return cf, &storage.DataError{File: name, Detail: "not a readable Parquet changes file: " + err.Error()}
	}
	if err := duckread.CheckColumns(have, cols, storage.ColChange); err != nil {
		return cf, &storage.DataError{File: name, Detail: err.Error()}
	}
	known := map[string]bool{storage.ColRecordID: true, storage.ColPlaceID: true, storage.ColChange: true}
	for _, c := range cols {
		known[c.Name] = true
	}
	for _, c := range have {
		if !known[c] {
			return cf, duckread.ExtraColumn(name, c)
		}
	}
	cf.types = types
	cf.sel, err = duckread.ChangesSelectList(cols, types)
	return cf, err
}

// applyChanges deletes a changes file's changed and removed rows from the
// table and inserts its added and changed rows, read with sel; it
// returns how many rows each statement touched.
//
// One pass over the table deletes the changed and removed rows and checks
// that the file fits the held version: an added id must not be held (the
// MERGE's error clause), and every changed or removed id must be: record
// ids are unique in the table (the engine's own, which users query and do
// not write) and, checked, in the file, so the MERGE deletes as many rows
// as the file changes and removes only if each of those ids is held. A
// semi-join for the added ids and a DELETE each scanned the table's ids;
// MERGE's error clause does both in the DELETE's scan, and an inner join,
// with no NOT MATCHED BY TARGET clause, costs 0.02–0.03 s less at 10M
// rows.
func (tx *Tx) applyChanges(ctx context.Context, table string, cols []ploti.Column, cf changesFile) (deleted, inserted int64, err error) {
	name, t, src := filepath.Base(cf.path), "main."+storage.Ident(table), cf.src
	res, err := tx.tx.ExecContext(ctx, mergeDeleteSQL(t, duckread.ChangesIDsSQL(src, cf.types)))
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "Merge error condition") {
			if _, why, ok := strings.Cut(msg, duckread.FitMark); ok {
				return 0, 0, &storage.DataError{File: name, Detail: "changes file does not fit the held version: " + why}
			}
		}
		return 0, 0, fmt.Errorf("merge %s into %s: delete: %w", name, table, err)
	}
	if deleted, err = res.RowsAffected(); err != nil {
		return 0, 0, fmt.Errorf("merge %s into %s: delete: %w", name, table, err)
	}
	rows := tx.db.stored(fmt.Sprintf(`SELECT %s FROM %s WHERE %s`, cf.sel, src, duckread.ChangeIn(cf.types, "'added', 'changed'")), cols)
	res, err = tx.tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s) %s`, t, duckread.ColumnNames(cols), rows))
	if err != nil {
		// A value that does not cast to the schema's type is the file's
		// fault; anything else (the disk, memory) is not.
		if strings.Contains(err.Error(), "Conversion Error") {
			return 0, 0, &storage.DataError{File: name, Detail: "read: " + err.Error()}
		}
		return 0, 0, fmt.Errorf("merge %s into %s: insert: %w", name, table, err)
	}
	if inserted, err = res.RowsAffected(); err != nil {
		return 0, 0, fmt.Errorf("merge %s into %s: insert: %w", name, table, err)
	}
	tx.touched(table, deleted+inserted)
	return deleted, inserted, nil
}

// changesNotHeld is the refusal of a changes file whose want changed or removed
// ids matched only deleted held rows, naming one when it can.
func (tx *Tx) changesNotHeld(ctx context.Context, table, file string, want, deleted int64) error {
	detail := fmt.Sprintf("its %d changed or removed ids match %d held rows", want, deleted)
	// Name one. The transaction no longer sees the rows the MERGE
	// deleted: ask the committed table, on another connection. That is
	// the held version unless an earlier merge in this transaction
	// changed it: a page's shared merges are then applied again each
	// on its own, where the answer is exact; what remains is a version
	// whose parts change one id twice, refused either way. The pool
	// may have no connection to spare (a caller's SetMaxOpenConns(1)):
	// wait briefly, then refuse without the name.
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var first string
	id, change, ids := storage.Ident(storage.ColRecordID), storage.Ident(storage.ColChange), duckread.FileIDsSQL(duckread.ParquetSource([]string{file}))
	err := tx.db.sql.QueryRowContext(qctx, fmt.Sprintf(`SELECT m.%[2]s || ' id ' || m.%[1]s FROM %[3]s m
		WHERE m.%[2]s <> 'added' AND m.%[1]s NOT IN (SELECT %[1]s FROM %[4]s) ORDER BY m.%[1]s LIMIT 1`, id, change, ids, "main."+storage.Ident(table))).Scan(&first)
	if err == nil {
		detail = first + " is not held"
	}
	return &storage.DataError{File: filepath.Base(file), Detail: "changes file does not fit the held version: " + detail}
}

// AddColumns adds schema columns to a table (a MINOR schema change); rows
// keep NULL in them until a changed row or a reload fills them. A column
// of NULLs is no heavier for a checkpoint than the rows a light merge
// appends, and it is asked for every watched version, whose columns are
// mostly there already (light.go).
func (tx *Tx) AddColumns(ctx context.Context, table string, cols []ploti.Column) error {
	for _, c := range cols {
		t, err := tx.db.storedType(c.Type)
		if err != nil {
			return fmt.Errorf("add column %s to %s: %w", c.Name, table, err)
		}
		if _, err := tx.tx.ExecContext(ctx, fmt.Sprintf("ALTER TABLE main.%s ADD COLUMN IF NOT EXISTS %s %s", storage.Ident(table), storage.Ident(c.Name), t)); err != nil {
			return fmt.Errorf("add column %s to %s: %w", c.Name, table, err)
		}
	}
	return tx.commentGeometry(ctx, table, cols)
}

// TableExists reports whether main.table exists (a table, not a view).
func (tx *Tx) TableExists(ctx context.Context, table string) (bool, error) {
	catalog, err := tx.db.catalogName(ctx, tx.tx)
	if err != nil {
		return false, err
	}
	ok, err := hasRelation(ctx, tx.tx, catalog, "main", table)
	if !ok || err != nil {
		return false, err
	}
	var views int
	err = tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main' AND view_name = ?", table).Scan(&views)
	return views == 0, err
}

// catalogName is DuckDB's name for the file's database (current_database()),
// read once through q and kept: it does not change while the file is open.
func (db *DB) catalogName(ctx context.Context, q storage.Querier) (string, error) {
	if c := db.catalog.Load(); c != nil {
		return *c, nil
	}
	var c string
	if err := q.QueryRowContext(ctx, "SELECT current_database()").Scan(&c); err != nil {
		return "", err
	}
	db.catalog.Store(&c)
	return c, nil
}

// hasRelation tells whether schema, in the database db (the file's),
// holds a table or a view named name, by looking the one name up. duckdb_tables() builds a row
// for every table of the catalog, 40 ms a call at 4,000 tables (a
// statewide replica's with --history): a lookup is 0.3–0.5 ms, 1–2 ms for
// a name not found (DuckDB's suggestion of a near name reads the
// catalog). A name not found is a Catalog Error at bind time, which
// leaves the transaction usable. The name is qualified with the file's
// own database, so that a temporary table or one of DuckDB's system
// views is not found; a name with a double quote, which
// pragma_table_info reads without its escapes, is looked for in the list.
func hasRelation(ctx context.Context, q storage.Querier, db, schema, name string) (bool, error) {
	var n int
	if strings.Contains(db+schema+name, `"`) {
		err := q.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND schema_name = ? AND table_name = ?)
			+ (SELECT count(*) FROM duckdb_views() WHERE database_name = ? AND schema_name = ? AND view_name = ?)`,
			db, schema, name, db, schema, name).Scan(&n)
		return n > 0, err
	}
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM pragma_table_info(?)", storage.Ident(db)+"."+storage.Ident(schema)+"."+storage.Ident(name)).Scan(&n)
	var de *duckdb.Error
	if errors.As(err, &de) && de.Type == duckdb.ErrorTypeCatalog {
		return false, nil
	}
	return err == nil, err
}

// ApplyIDMap records a version's id map in _ploti.id_map and rewrites the ids
// in the given user columns. A map with a repeated from_id or to_id (two ids
// mapped to one) is refused.
func (tx *Tx) ApplyIDMap(ctx context.Context, datasetID string, version int, file string, refs []storage.IDRef) (int64, error) {
	tx.heavyWrite()
	name := filepath.Base(file)
	have, _, err := tx.fileColumns(ctx, []string{file})
	if err != nil {
		return 0, &storage.DataError{File: name, Detail: "not a readable Parquet id map: " + err.Error()}
	}
	set := map[string]bool{}
	for _, c := range have {
		set[c] = true
	}
	if !set["from_id"] || !set["to_id"] {
		return 0, &storage.DataError{File: name, Detail: "id map lacks from_id or to_id"}
	}
	src := duckread.ParquetSource([]string{file})
	var n, nulls, dupFrom, dupTo int64
	err = tx.tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE from_id IS NULL OR to_id IS NULL),
		count(from_id) - count(DISTINCT from_id), count(to_id) - count(DISTINCT to_id) FROM `+src).Scan(&n, &nulls, &dupFrom, &dupTo)
	if err != nil {
		return 0, &storage.DataError{File: name, Detail: "read: " + err.Error()}
	}
	if nulls > 0 || dupFrom > 0 || dupTo > 0 {
		return 0, &storage.DataError{File: name, Detail: fmt.Sprintf("id map has %d null ids, %d repeated from_id and %d repeated to_id (two ids mapped to one)", nulls, dupFrom, dupTo)}
	}
	if _, err := tx.tx.ExecContext(ctx, `INSERT INTO _ploti.id_map (dataset_id, version, from_id, to_id)
		SELECT ?, ?, CAST(from_id AS VARCHAR), CAST(to_id AS VARCHAR) FROM `+src, datasetID, version); err != nil {
		return 0, fmt.Errorf("record id map of %s v%d: %w", datasetID, version, err)
	}
	for _, r := range refs {
		if r.DatasetID != datasetID {
			continue
		}
		q := fmt.Sprintf(`UPDATE %[1]s SET %[2]s = m.to_id FROM _ploti.id_map m
			WHERE m.dataset_id = ? AND m.version = ? AND %[1]s.%[2]s = m.from_id`, qualified(r.Table), storage.Ident(r.Column))
		if _, err := tx.tx.ExecContext(ctx, q, datasetID, version); err != nil {
			return 0, fmt.Errorf("rewrite ids in %s.%s for %s v%d: %w", r.Table, r.Column, datasetID, version, err)
		}
	}
	return n, nil
}

// qualified quotes a possibly schema-qualified table name.
func qualified(name string) string {
	parts := strings.SplitN(name, ".", 2)
	for i := range parts {
		parts[i] = storage.Ident(parts[i])
	}
	return strings.Join(parts, ".")
}
