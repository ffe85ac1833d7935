package storage

import (
	"context"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// Tables is the seam between the engine-neutral part of a replica (the
// event rules, the walk, the registry's meaning) and the engine that
// holds the dataset tables: what moves rows, each operation documented
// here once. Two engines implement it: the DuckDB file (storage/duckdb's
// *Tx) and a
// PostgreSQL/PostGIS database (storage/postgres's *Tx); apply reaches the
// tables only through it (Tx.Tables), and tests run the same operations on
// both from one table of backends (storage/backends'
// TestSeam_sameOnBothEngines). docs/decisions.md 48 says why the cut is
// here.
//
// Every operation runs inside the transaction it came from, and nothing it
// does is seen by a reader before that transaction commits; a refusal of
// the data is a *DataError (errors.Is ErrBadData) in the same words on
// both engines, and leaves the table as it was once the caller rolls
// back.
type Tables interface {
	// LoadSnapshot replaces table with the rows of a version's snapshot
	// parts (Parquet), cast to the schema's types, and returns the row
	// count. The old table stays until the transaction commits. It
	// refuses parts whose record ids are null or repeat, or whose columns
	// are not the schema's.
	LoadSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error)
	// CreateSnapshot is LoadSnapshot into a table that must not exist
	// yet: it fails, and changes nothing, when the engine already has a
	// table or view of that name (a user's, made since it was chosen).
	CreateSnapshot(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error)
	// LoadRows is LoadSnapshot from a watched dataset's rows (NDJSON
	// files, one object a line, as Ploti's rows endpoint gives them).
	LoadRows(ctx context.Context, table string, cols []ploti.Column, files []string) (int64, error)
	// MergeChanges applies a changes file (Parquet: _ploti_change added,
	// changed or removed, then the row) to table, logs its lines in
	// _ploti.changes as datasetID's version, and returns what it did. It
	// refuses a file that does not fit the held version: an added id
	// held, a changed or removed id not held, a null or repeated id, a
	// kind it does not know, columns not the schema's. rowsBefore is the
	// table's row count before, or negative when unknown.
	MergeChanges(ctx context.Context, datasetID string, version int, table string, cols []ploti.Column, file string, rowsBefore int64) (MergeStats, error)
	// MergeDeferred is MergeChanges whose checks and log an engine may
	// leave to FinishMerged, which the caller runs once for the files of
	// many merges before it commits (and rolls back when it refuses one).
	// An engine that checks at once does so here and finishes nothing.
	MergeDeferred(ctx context.Context, datasetID string, version int, table string, cols []ploti.Column, file string, rowsBefore int64) (Merged, error)
	// FinishMerged checks and logs the merges MergeDeferred left.
	FinishMerged(ctx context.Context, ms []Merged) error
	// MergeWatch applies a watched dataset's changes (ids touched, rows
	// read) to its table and logs them in _ploti.changes.
	MergeWatch(ctx context.Context, m WatchMerge) (MergeStats, error)
	// AddColumns adds columns (a MINOR schema change) to table, NULL in
	// the rows it holds.
	AddColumns(ctx context.Context, table string, cols []ploti.Column) error
	// ApplyIDMap records a version's id map (Parquet: from_id, to_id) in
	// _ploti.id_map and rewrites the ids in the user columns refs name; it
	// refuses a map that sends two ids to one or one id to two.
	ApplyIDMap(ctx context.Context, datasetID string, version int, file string, refs []IDRef) (int64, error)
	// TableExists tells whether the engine has a dataset table of that
	// name.
	TableExists(ctx context.Context, table string) (bool, error)
	// LoadScratch loads a version's snapshot parts as LoadSnapshot
	// would, into a table no reader sees and that nothing commits (the
	// caller rolls the transaction back), for a comparison with the
	// dataset's table (verify). It returns the table's qualified name
	// and its row count.
	LoadScratch(ctx context.Context, cols []ploti.Column, files []string) (rel string, n int64, err error)
}

// Tables is the engine's table operations in this transaction.
func (tx *Tx) Tables() Tables { return tx.be }
