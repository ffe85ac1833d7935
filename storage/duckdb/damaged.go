package duckdb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/ploti-replica/ploti-replica/storage"
)

// DamagedError is a file DuckDB cannot read back whole, with DuckDB's word.
type DamagedError struct {
	Path string
	Err  error
}

func (e *DamagedError) Error() string {
	if errors.Is(e.Err, storage.ErrStaleWAL) {
		return fmt.Sprintf("open %s: %v; nothing was written. Move %s.wal aside: the file then opens at its last checkpoint "+
			"and the next sync fetches what came since. Or rebuild the file: move it aside too and sync into a new file, "+
			"which loads every dataset from Ploti", e.Path, e.Err, e.Path)
	}
	cause := e.Err.Error()
	if i := strings.IndexByte(cause, '\n'); i >= 0 {
		cause = cause[:i]
	}
	return fmt.Sprintf("open %s: the file is damaged, so nothing was written to it (DuckDB: %s). "+
		"Rebuild it: copy out any tables of your own, move %s and any %s.wal beside it aside, and sync into a new file, "+
		"which loads every dataset from Ploti (or restore a backup)",
		e.Path, cause, e.Path, e.Path)
}

// Unwrap makes errors.Is(err, storage.ErrDamaged) true.
func (e *DamagedError) Unwrap() []error { return []error{storage.ErrDamaged, e.Err} }

// damageRE is what DuckDB says of a file it cannot read: a block or
// header whose checksum fails, a file shorter than its blocks, metadata
// that does not deserialize, a write-ahead log that does not replay.
var damageRE = regexp.MustCompile(`(?i)corrupt|checksum|could not read|read enough|serializ|internal error|fatal|\bwal\b|replay|` +
	`failed to load|malformed|not a valid|out of range|invalidated|deserializ|block|metadata|truncat`)

// asDamaged words err as a DamagedError when it tells of a file DuckDB
// cannot read; nil otherwise.
func asDamaged(path string, err error) error {
	var de *DamagedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return de
	case errors.Is(err, storage.ErrLocked) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return nil
	case damageRE.MatchString(err.Error()):
		return &DamagedError{Path: path, Err: err}
	}
	return nil
}

// checkReadable reads every table of the file whole (every column of
// every row, hashed, which reads and checksums every block DuckDB holds
// for them) before anything is written to it: a file that does not read
// back whole is refused as damaged. a measurement found about 0.2 s per
// million rows of six columns.
func (db *DB) checkReadable(ctx context.Context) error {
	if readBackKnown(db.path) {
		return nil
	}
	before, _ := stampOf(db.path)
	rows, err := db.sql.QueryContext(ctx, `SELECT schema_name, table_name FROM duckdb_tables()
		WHERE database_name = current_database() AND NOT temporary ORDER BY ALL`)
	if err != nil {
		return db.damaged(err)
	}
	var tables [][2]string
	for rows.Next() {
		var s, t string
		if err := rows.Scan(&s, &t); err != nil {
			rows.Close()
			return db.damaged(err)
		}
		tables = append(tables, [2]string{s, t})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return db.damaged(err)
	}
	for _, t := range tables {
		var h any
		q := "SELECT sum(hash(t)) FROM " + storage.Ident(t[0]) + "." + storage.Ident(t[1]) + " AS t"
		if err := db.sql.QueryRowContext(ctx, q).Scan(&h); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &DamagedError{Path: db.path, Err: fmt.Errorf("read %s.%s: %w", t[0], t[1], err)}
		}
	}
	if after, ok := stampOf(db.path); ok && after == before {
		rememberReadBack(db.path)
	}
	return nil
}

// damaged words err as DamagedError when it is DuckDB failing to read.
func (db *DB) damaged(err error) error {
	if d := asDamaged(db.path, err); d != nil {
		return d
	}
	return fmt.Errorf("open %s: %w", db.path, err)
}
