package duckdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

var _ storage.StreamLoader = (*Tx)(nil)

// rowGroup is a Parquet row group's rows and the end of its bytes.
type rowGroup struct {
	rows int64 // the file row number after its last row
	end  int64 // the byte after its last column chunk (or past it)
}

// rowGroups reads a Parquet file's row groups from its footer alone
// (parquet_metadata), in file order: where each ends in rows and in
// bytes. A column chunk's end is counted from its data page, the later
// of its two first pages, so that an end is never short.
func (tx *Tx) rowGroups(ctx context.Context, path string) ([]rowGroup, error) {
	rows, err := tx.tx.QueryContext(ctx, `SELECT any_value(row_group_num_rows),
		max(greatest(coalesce(dictionary_page_offset, 0), data_page_offset) + total_compressed_size)
		FROM parquet_metadata(`+storage.Literal(path)+`) GROUP BY row_group_id ORDER BY row_group_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rowGroup
	var at int64
	for rows.Next() {
		var n, end int64
		if err := rows.Scan(&n, &end); err != nil {
			return nil, err
		}
		at += n
		out = append(out, rowGroup{rows: at, end: end})
	}
	return out, rows.Err()
}

// LoadSnapshotStream is StreamLoader's, for the DuckDB file. The schema's
// casts are the whole-file load's (snapshotSelect); DuckDB prunes the row
// groups a file_row_number filter excludes without reading their bytes,
// so a statement reads only row groups already on disk. Each run's record
// ids are hashed and checked as soon as its rows are in (runIDs); once the
// file's sha256 has matched, the counts settle the check, and the table
// must hold as many rows as the file.
func (tx *Tx) LoadSnapshotStream(ctx context.Context, table string, cols []ploti.Column, f storage.GrowingFile, replace bool) (int64, error) {
	tx.heavyWrite()
	files := []string{f.Path()}
	l := &streamLoad{tx: tx, table: table, name: strings.TrimSuffix(duckread.BaseNames(files), ".part"), // the file's name once verified
		stopped: loadStopped(ctx, files), create: "CREATE TABLE"}
	if replace {
		l.create = "CREATE OR REPLACE TABLE"
	}
	if err := tx.fitThreads(ctx, false); err != nil {
		return 0, err
	}
	groups, err := tx.rowGroups(ctx, f.Path())
	if err != nil {
		if serr := l.stopped(err); serr != nil {
			return 0, serr
		}
		return 0, &storage.DataError{File: l.name, Detail: "not a readable Parquet snapshot: " + err.Error()}
	}
	if l.sel, l.cols, err = tx.snapshotSelect(ctx, files, cols); err != nil {
		return 0, err
	}
	l.src = "read_parquet(" + duckread.FileList(files) + ", hive_partitioning = false, file_row_number = true)"
	if len(groups) == 0 {
		if err := l.insert(ctx, "true"); err != nil {
			return 0, err
		}
	} else {
		l.ids = tx.newRunIDs(l.src, groups[len(groups)-1].rows)
		defer l.ids.release()
	}
	from, err := tx.insertAsArrived(ctx, f, l.name, groups, l.run)
	if err != nil {
		return 0, err
	}
	if err := f.Done(ctx); err != nil {
		return 0, fmt.Errorf("load %s: %w", l.name, err)
	}
	n, err := l.check(ctx, files, from, len(groups) > 0)
	if err != nil {
		return 0, err
	}
	return n, tx.commentGeometry(ctx, table, l.cols)
}

// streamLoad is one LoadSnapshotStream's statements.
type streamLoad struct {
	tx          *Tx
	table, name string
	sel, src    string // the select list's casts, the file's read_parquet
	cols        []ploti.Column
	create      string // the first statement's CREATE; "" once made
	stopped     func(error) error
	ids         *runIDs // nil: checked whole after the last byte
}

// insert inserts the rows of the file that where selects, the first
// statement creating the table.
func (l *streamLoad) insert(ctx context.Context, where string) error {
	q := l.tx.db.stored(fmt.Sprintf("SELECT %s FROM %s WHERE %s", l.sel, l.src, where), l.cols)
	if l.create != "" {
		q = fmt.Sprintf("%s main.%s AS %s", l.create, storage.Ident(l.table), q)
		l.create = ""
	} else {
		q = fmt.Sprintf("INSERT INTO main.%s %s", storage.Ident(l.table), q)
	}
	if _, err := l.tx.tx.ExecContext(ctx, q); err != nil {
		if serr := l.stopped(err); serr != nil {
			return serr
		}
		return &storage.DataError{File: l.name, Detail: "load: " + err.Error()}
	}
	return nil
}

// run inserts the file's rows [from, to), a run of row groups on disk,
// and checks their record ids.
func (l *streamLoad) run(ctx context.Context, from, to int64) error {
	if err := l.insert(ctx, rowRange(from, to)); err != nil {
		return err
	}
	if err := l.ids.add(ctx, from, to); err != nil {
		if serr := l.stopped(err); serr != nil {
			return serr
		}
		return fmt.Errorf("load %s: %w", l.name, err)
	}
	return nil
}

// rowRange is the WHERE of the file's rows [from, to).
func rowRange(from, to int64) string {
	return fmt.Sprintf("file_row_number >= %d AND file_row_number < %d", from, to)
}

// check refuses a streamed snapshot whose record ids are null or repeat
// in its files, or whose table does not hold the files' rows (nor, when
// the file had row groups, the footer's count from), and returns the row
// count. The ids are the file's, not the table's: checked run by run as
// the rows arrived (l.ids) when that check held, else read from the file
// now.
func (l *streamLoad) check(ctx context.Context, files []string, from int64, grouped bool) (int64, error) {
	rel := recordIDsOf(duckread.ParquetSource(files))
	var n, nulls, dups int64
	var err error
	if l.ids.held() {
		n, nulls, dups, err = l.ids.counts(ctx, rel)
	} else {
		n, nulls, dups, err = l.tx.checkRecordIDs(ctx, rel)
	}
	var held int64
	if err == nil {
		err = l.tx.tx.QueryRowContext(ctx, "SELECT count(*) FROM main."+storage.Ident(l.table)).Scan(&held)
	}
	if err != nil {
		if serr := l.stopped(err); serr != nil {
			return 0, serr
		}
		return 0, &storage.DataError{File: l.name, Detail: "load: " + err.Error()}
	}
	if err := duckread.SnapshotIDFaults(l.name, nulls, dups); err != nil {
		return 0, err
	}
	if held != n || (from != n && grouped) {
		return 0, &storage.DataError{File: l.name, Detail: fmt.Sprintf("load: %d rows loaded, the file has %d and its footer counts %d", held, n, from)}
	}
	return n, nil
}

// insertAsArrived inserts the file's row groups, each run as soon as its
// bytes are on disk, and returns the rows the footer counts for them.
func (tx *Tx) insertAsArrived(ctx context.Context, f storage.GrowingFile, name string, groups []rowGroup, run func(ctx context.Context, from, to int64) error) (from int64, err error) {
	// A row group is DuckDB's unit of work in a Parquet scan: a statement
	// of one row group runs on one thread. Each statement waits for two
	// row groups a thread (the file's last ones excepted), so the load
	// uses every core while the rest arrives: with one row group a
	// statement, a 10M-row snapshot over a 50 MB/s link took 22.8 s on
	// two quiet cores, the download 10.2 s and the whole-file load 12.3 s.
	var threads int
	if err := tx.tx.QueryRowContext(ctx, "SELECT current_setting('threads')").Scan(&threads); err != nil || threads < 1 {
		threads = 1
	}
	for next := 0; next < len(groups); {
		want := min(next+2*threads, len(groups)) - 1
		if err := f.Arrived(ctx, groups[want].end); err != nil {
			return 0, fmt.Errorf("load %s: %w", name, err)
		}
		// Every row group wholly on disk goes in this statement: when
		// DuckDB is slower than the wire, the statements grow.
		have := f.Have()
		last := want
		for last+1 < len(groups) && groups[last+1].end <= have {
			last++
		}
		to := groups[last].rows
		if err := run(ctx, from, to); err != nil {
			return 0, err
		}
		from, next = to, last+1
	}
	return from, nil
}
