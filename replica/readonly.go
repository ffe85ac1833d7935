package replica

import (
	"database/sql"

	"github.com/ploti-replica/ploti-replica/storage"
)

// ErrReadOnly means a query through ReadOnly() would write, or is not one
// statement that reads (in a DuckDB file: one SELECT, WITH, FROM-first,
// VALUES, SHOW, DESCRIBE or SUMMARIZE statement per query).
var ErrReadOnly = storage.ErrReadOnly

// ReadOnly is a handle for queries of the replica that cannot write, for
// a service that runs its users' SQL beside the sync: it sees the last
// committed state, whole versions only. Each query runs in a read-only
// transaction of its own (until its rows close), and a transaction begun
// on it (BeginTx, whatever its options) is read-only and reads one
// snapshot throughout. A write, or in a DuckDB file anything but one
// SELECT-like statement per query, fails with an error that wraps
// ErrReadOnly. DB() stays the writer's handle, on which the service may
// keep tables of its own beside the replica's.
//
// In a DuckDB file the handle's connections are the Replica's own DuckDB:
// this process cannot open the file a second time, not with OpenReader
// (ErrLocked) nor with its own sql.Open("duckdb", path), which DuckDB
// refuses ("different configuration than existing connections").
func (r *Replica) ReadOnly() *sql.DB { return readOnlySQL(r.db) }

// ReadOnly is Replica.ReadOnly for a reader: a handle that cannot write,
// even when the reader was opened with ReaderOptions.Marks (whose DB()
// can).
func (r *Reader) ReadOnly() *sql.DB { return readOnlySQL(r.db) }

// readOnlySQL is db's engine's read-only handle: both engines have one.
func readOnlySQL(db *storage.DB) *sql.DB {
	q, ok := db.Engine().(storage.ReadOnlyQuerier)
	if !ok { // each engine asserts that it is one (storage/duckdb, storage/postgres)
		panic("replica: the storage engine has no read-only handle")
	}
	return q.ReadOnlySQL()
}
