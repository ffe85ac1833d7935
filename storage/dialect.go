package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
)

// Dialect is the few registry statements whose SQL differs between the
// engines, each engine's own; every other statement is the same text on
// all of them.
type Dialect interface {
	// TakenNamesSQL lists the names of the tables and views in the schema
	// of the dataset tables: a new dataset's table takes none of them.
	TakenNamesSQL() string
	// IdentMax is the longest identifier the engine takes, in bytes, or 0
	// for no limit that a table's name reaches.
	IdentMax() int
	// PairHash is an expression hashing a row's record id with one of its
	// values, whose sum over a table does not depend on the rows' order.
	PairHash(id, col string) string
	// JSONText is a JSON value's text, the same for the same value on
	// every engine.
	JSONText(expr string) string
	// FirstIDs is an aggregate of the first five values of expr in order,
	// as a JSON list of strings.
	FirstIDs(expr string) string
	// ColumnsOf maps a dataset table's columns (name in the dataset
	// schema, rel the same qualified) to the engine's names of their
	// types, read in tx.
	ColumnsOf(ctx context.Context, tx *sql.Tx, name, rel string) (map[string]string, error)
	// JSONRows is a relation r of many rows read from one JSON text bound
	// as its one parameter, of schema (their JSON structure), for an
	// engine whose cost of binding grows with the square of its
	// parameters (DuckDB); ok is false for an engine that takes rows as
	// VALUES lists of parameters in parts (PostgreSQL takes at most 65,535
	// a statement).
	JSONRows(schema string) (rel string, ok bool)
	// LabelSQL reads the replica's label, the comment on its
	// _ploti.subscription table ("" for none).
	LabelSQL() string
}

// CutIdent is name when it has at most max bytes, else its start and a
// hash of key, in max bytes: names alike in their first characters stay
// apart.
func CutIdent(name, key string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	return name[:max-9] + "_" + hex.EncodeToString(sum[:4])
}

// tableBase is the table name a new dataset asks for (TableName). In an
// engine whose identifiers are bounded, a name longer than they take less
// room for the "_N" that sets a taken name apart is cut, and ends in a
// hash of the dataset id (CutIdent).
func (db *DB) tableBase(datasetID string) string {
	max := db.be.IdentMax()
	if max == 0 {
		return TableName(datasetID)
	}
	return CutIdent(TableName(datasetID), datasetID, max-4)
}

// tableRel is a dataset table's name, qualified by its schema.
func (db *DB) tableRel(table string) string {
	return Ident(db.be.Schema()) + "." + Ident(table)
}

func (db *DB) takenNamesSQL() string          { return db.be.TakenNamesSQL() }
func (db *DB) pairHash(id, col string) string { return db.be.PairHash(id, col) }
func (tx *Tx) jsonText(expr string) string    { return tx.db.be.JSONText(expr) }
func (db *DB) firstIDs(expr string) string    { return db.be.FirstIDs(expr) }

func (tx *Tx) columnsOf(ctx context.Context, name, rel string) (map[string]string, error) {
	return tx.db.be.ColumnsOf(ctx, tx.tx, name, rel)
}

// rowsInParts tells whether the engine takes many rows as VALUES lists of
// parameters in parts, rather than as one JSON text (Dialect.JSONRows).
func (db *DB) rowsInParts() bool {
	_, ok := db.be.JSONRows("")
	return !ok
}
