package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// PublishResult says what one Publish did.
type PublishResult struct {
	// Path is where the copy now is.
	Path string
	// Bytes is the copy's size.
	Bytes int64
	// Reflink is true when the copy shares the file's blocks (FICLONE),
	// false when its bytes were copied.
	Reflink bool
	// Duration is the whole publish: checkpoint, copy, sync, check, rename.
	Duration time.Duration
}

// SnapshotIDChecker is the Tables of an engine that can check the record
// ids of many snapshots with one read of them all: the DuckDB file.
// PostgreSQL's loads check each snapshot as it loads it.
type SnapshotIDChecker interface {
	// CheckSnapshotIDs counts the null and repeated record ids of
	// one-file snapshots with one read of them all and keeps the counts
	// for the transaction: a LoadSnapshot or CreateSnapshot of one of
	// those files later in it refuses on them, in its own words, instead
	// of reading the ids again. A failure (a file unreadable) leaves the
	// transaction to the caller's rollback.
	CheckSnapshotIDs(ctx context.Context, files []string) error
}

// GrowingFile is a Parquet snapshot still downloading in order, its footer
// already on disk (fetch.Stream is one): a load reads the row groups whose
// bytes have arrived while the rest come.
type GrowingFile interface {
	// Path is the file's local path.
	Path() string
	// Have is how many of the file's first bytes are on disk, for good:
	// the bytes it counts are never written again (a resumed download
	// starts after them), so what a load read from them is what Done
	// verifies.
	Have() int64
	// Arrived waits until the first n bytes are on disk, or returns why
	// the download stopped first.
	Arrived(ctx context.Context, n int64) error
	// Done waits for the end of the download and returns nil only when
	// the whole file arrived and matches its size and sha256.
	Done(ctx context.Context) error
}

// StreamLoader is the Tables of an engine that can load a snapshot while
// it downloads: the DuckDB file. PostgreSQL's loads whole files only
// (docs/decisions.md 50).
type StreamLoader interface {
	// LoadSnapshotStream is LoadSnapshot (replace) or CreateSnapshot of
	// one Parquet file that is still arriving: the rows of each run of row
	// groups on disk are inserted as soon as they are, all in the
	// caller's transaction, and their record ids checked as they come.
	// It then waits for the whole file's verification, and refuses, as
	// LoadSnapshot, a file whose record ids are null or repeat, or a
	// table that does not hold the file's rows; any failure leaves the
	// table to the caller's rollback.
	LoadSnapshotStream(ctx context.Context, table string, cols []ploti.Column, f GrowingFile, replace bool) (int64, error)
}

// Digest is a held table's ids and value hashes, taken by a ReloadLogger
// before a reload for its LogReload: opaque, the engine's own.
type Digest any

// What only some engines can do, each a small interface asserted on the
// engine (DB.Engine) or its transaction (Tx.Engine), never asked by the
// engine's name: today the DuckDB file has them all and a PostgreSQL
// database only ChangesIDChecker (docs/decisions.md 48), and a caller that
// finds one missing says so in words (ErrFileOnly) or goes without.

// Checkpointer writes what the engine keeps aside (a WAL) into its
// database.
type Checkpointer interface {
	Checkpoint(ctx context.Context) error
}

// CheckpointHolder is an engine that checkpoints on its own as its log
// grows (a DuckDB file's WAL), each checkpoint rewriting every table
// touched since the last: a writer making a run of small commits (the
// walk's batches) holds them back and checkpoints once after.
type CheckpointHolder interface {
	// HoldCheckpoints lets the commits of transactions marked small
	// (SmallCommitter) gather in the log until it holds bound bytes; a
	// commit of another that brings much is still checkpointed as it
	// commits. end ends the hold and checkpoints when the log holds
	// anything, returning the bytes the log held (0: no checkpoint).
	HoldCheckpoints(bound int64) (end func(context.Context) (int64, error))
}

// SmallCommitter is the transaction of a CheckpointHolder: Small marks it
// as holding bookkeeping and small merges only.
type SmallCommitter interface {
	Small()
}

// Publisher ends a sync by publishing a read-only copy of the replica at
// dst, renamed into place whole.
type Publisher interface {
	Publish(ctx context.Context, dst string) (PublishResult, error)
}

// SummaryCloser closes the engine leaving beside it a summary of its
// state, which status reads without opening it (summarize writes it).
type SummaryCloser interface {
	CloseWithSummary(ctx context.Context, summarize func(context.Context) ([]byte, error)) error
}

// File is an engine kept in one local file: its path and the storage
// version of its format.
type File interface {
	Path() string
	StorageVersion() uint64
}

// ChangesInspector reads changes files ahead of their merges (their
// columns and record ids), so that the merges find them read.
type ChangesInspector interface {
	InspectChanges(ctx context.Context, files []string)
}

// HistoryReader reads the history of the datasets that keep one.
type HistoryReader interface {
	HistoryOf(ctx context.Context, datasetID, table string) (HistoryState, error)
	HistoryStates(ctx context.Context) (map[string]HistoryState, error)
	HistoryDiff(ctx context.Context, datasetID, table string, dataCols []ploti.Column, from, to int) ([]DiffRow, error)
	HistoryStory(ctx context.Context, datasetID, table string, dataCols []ploti.Column, recordID string) ([]StoryRow, error)
}

// ChangeLogReader reads what _ploti.changes logged of a dataset between
// two versions, netted per record, with the rows now (marks).
type ChangeLogReader interface {
	LoggedChanges(ctx context.Context, datasetID, table string, cols []ploti.Column, from, to int) ([]RecordChange, error)
}

// HistoryWriter keeps every version of a dataset's records, written in
// the transaction that changes its table.
type HistoryWriter interface {
	HistoryOf(ctx context.Context, datasetID, table string) (HistoryState, error)
	StartHistory(ctx context.Context, hv HistoryVersion) error
	WidenHistory(ctx context.Context, datasetID, table string, cols []ploti.Column) error
	SetHistoryAside(ctx context.Context, datasetID, table, source string) (string, error)
	PruneHistory(ctx context.Context, keepVersions int, before time.Time) (int64, []MarkHold, error)
	MergeHistory(ctx context.Context, hv HistoryVersion, cols []ploti.Column, files []string) error
	ReloadHistory(ctx context.Context, hv HistoryVersion, cols []ploti.Column, mapVersions []int, logChanges bool) (int64, error)
	WatchHistory(ctx context.Context, hv HistoryVersion, m WatchMerge, at map[int]*time.Time) error
}

// ReloadLogger logs in _ploti.changes what a reload changed, compared
// with the rows held by record id: DigestTable before the reload,
// LogReload after it; LogSnapshotDiff compares a version's snapshot with
// the table held without loading it.
type ReloadLogger interface {
	DigestTable(ctx context.Context, table string, held, next []ploti.Column) (Digest, error)
	LogReload(ctx context.Context, d Digest, datasetID string, version int, table string, mapVersions []int) (int64, error)
	LogSnapshotDiff(ctx context.Context, datasetID string, version int, table string, cols []ploti.Column, files []string) (int64, error)
}

// Can is engine (a DB's Engine or a Tx's) as the capability C, or an error
// that wraps ErrFileOnly after what, the subject and its verb ("history
// is", "marks are"): "marks are kept in a DuckDB file only, …".
func Can[C any](engine any, what string) (C, error) {
	c, ok := engine.(C)
	if !ok {
		return c, fmt.Errorf("%s %w", what, ErrFileOnly)
	}
	return c, nil
}

// History is the transaction's engine as a HistoryWriter.
func (tx *Tx) History() (HistoryWriter, error) { return Can[HistoryWriter](tx.be, "history is") }

// ReloadLog is the transaction's engine as a ReloadLogger.
func (tx *Tx) ReloadLog() (ReloadLogger, error) {
	return Can[ReloadLogger](tx.be, "a reload's change log is")
}

// TxCan tells whether db's engine's transactions have the capability C,
// before one begins.
func TxCan[C any](db *DB) bool {
	_, ok := db.be.NilTx().(C)
	return ok
}

// ChangesIDChecker is the Tables of an engine that checks a version's
// changes files (its parts) together: both engines. Each merge checks
// its own file's ids; a record id listed in two parts of one version
// would be applied twice (the second part winning, silently) and logged
// twice in _ploti.changes.
type ChangesIDChecker interface {
	// CheckChangesIDs refuses, with a DataError, the changes files of one
	// version when a record id is listed in more than one of them
	// (docs/wire.md 5: a record id is unique in a version). One file, or
	// none, has nothing to check.
	CheckChangesIDs(ctx context.Context, files []string) error
}

// ErrReadOnly means a query through an engine's read-only handle
// (ReadOnlyQuerier) would write, or is not one statement that reads: it
// is refused before it runs, or by the engine's read-only transaction.
var ErrReadOnly = errors.New("read-only handle")

// ReadOnlyQuerier is an engine that gives a handle for queries of the
// committed state that cannot write, beside SQL (the writer's, on which
// users create their own tables): both engines. Each query through it
// runs in a read-only transaction of its own, and a transaction begun on
// it is read-only whatever its options say, so a caller reads several
// queries from one snapshot. A write is refused with an error that wraps
// ErrReadOnly.
type ReadOnlyQuerier interface {
	// ReadOnlySQL is the handle, made at its first call and closed with
	// the engine.
	ReadOnlySQL() *sql.DB
}

// Releaser is an engine that can give up its file while the caller waits
// on something slow (a Retry-After): other processes open the file
// meanwhile. The DuckDB file is one; a PostgreSQL database locks no
// reader out and is not.
type Releaser interface {
	// Release closes the engine's hold on the file, keeping its handles
	// (they fail until resume), and returns resume, which takes the file
	// back (waiting for another process's lock as the open did) and
	// refuses, with an error, a file another process changed meanwhile.
	// It returns nil, nil when it cannot let go now (a connection in
	// use: a transaction open, rows not closed): the caller waits holding
	// the file.
	Release(ctx context.Context) (resume func(context.Context) error, err error)
}
