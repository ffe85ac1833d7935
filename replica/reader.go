package replica

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// ReaderOptions configure OpenReader.
type ReaderOptions struct {
	// LockTimeout is how long OpenReader waits while another process
	// writes the file, as Options.LockTimeout for Open: 0 is
	// DefaultLockTimeout, negative does not wait.
	LockTimeout time.Duration
	// OnLocked is told once which process holds the file.
	OnLocked func(msg string)
	// Marks lets the reader move marks (Advance, Forget): the one write a
	// reader may do. The file is then opened for writing, as one writer
	// (it waits for a sync, and a sync waits for it), so that the changes
	// read and the mark moved are of the same state.
	Marks bool
	// Threads is DuckDB's thread count; 0: DuckDB's default.
	Threads int
	// Logger receives what the open does on its own: a reader with Marks
	// opens a PostgreSQL database as its writer, which gives dataset tables
	// an earlier build made their storage parameters and says so, as
	// Options.Logger. Nil discards.
	Logger *slog.Logger
}

// Reader reads a replica without changing it (but for its marks, when
// ReaderOptions.Marks says so). It never creates a file: a missing one is
// ErrNoFile, one that is no replica ErrNotReplica, and one another process
// writes ErrLocked once the lock timeout is past. It calls no API.
type Reader struct {
	db    *storage.DB
	marks bool
}

// OpenReader opens the replica at where (a DuckDB file's path or a
// postgres:// URL) for reading. Readers of a file share it with each
// other, not with its writer; a database's readers never wait.
func OpenReader(ctx context.Context, where string, opts ReaderOptions) (*Reader, error) {
	db, err := backends.Open(ctx, where, storage.Options{ReadOnly: !opts.Marks, NoCreate: true, LockTimeout: opts.LockTimeout,
		OnLocked: opts.OnLocked, Threads: opts.Threads, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return &Reader{db: db, marks: opts.Marks}, nil
}

// Close closes the replica.
func (r *Reader) Close() error { return r.db.Close() }

// DB is the database for raw reads.
func (r *Reader) DB() *sql.DB { return r.db.SQL() }

// Path is where the replica is: the path OpenReader was given, or a
// database's URL without its password.
func (r *Reader) Path() string { return r.db.Path() }

// Geometry is how the replica's tables store geometry: GeometryNative,
// GeometryWKB or GeometryPostGIS.
func (r *Reader) Geometry() string { return r.db.Geometry() }

// Status reads the replica's state.
func (r *Reader) Status(ctx context.Context) (*Status, error) { return readStatus(ctx, r.db) }

// Holds lists the replica's holds.
func (r *Reader) Holds(ctx context.Context) ([]Hold, error) { return readHolds(ctx, r.db) }

// Subscription is the subscription the replica replicates; nil before
// its first sync, or when it keeps watched datasets only.
func (r *Reader) Subscription(ctx context.Context) (*Subscription, error) {
	return r.db.Subscription(ctx)
}

// Attachments lists the attachments kept with a dataset ("": every
// dataset's), with their content when content is set.
func (r *Reader) Attachments(ctx context.Context, datasetID string, content bool) ([]Attachment, error) {
	return r.db.Attachments(ctx, datasetID, content)
}

// Changes is Replica.Changes: what changed since mark last moved.
func (r *Reader) Changes(ctx context.Context, mark string, opts ChangesOptions) (*ChangeSet, error) {
	return readChanges(ctx, r.db, mark, opts)
}

// errNoMarks means a reader opened without ReaderOptions.Marks was asked
// to move a mark.
var errNoMarks = errors.New("the reader was opened without ReaderOptions.Marks")

// Advance is Replica.Advance: it moves mark to the versions cs reached.
func (r *Reader) Advance(ctx context.Context, mark string, cs *ChangeSet) error {
	if !r.marks {
		return fmt.Errorf("advance mark %s: %w", mark, errNoMarks)
	}
	return advanceMark(ctx, r.db, mark, cs)
}

// Forget deletes mark on every dataset; it reports whether there was one.
func (r *Reader) Forget(ctx context.Context, mark string) (bool, error) {
	if !r.marks {
		return false, fmt.Errorf("forget mark %s: %w", mark, errNoMarks)
	}
	return forgetMark(ctx, r.db, mark)
}

// Story is Replica.Story: a record's every version, oldest first.
func (r *Reader) Story(ctx context.Context, datasetID, recordID string) ([]StoryRow, error) {
	return readStory(ctx, r.db, datasetID, recordID)
}

// Diff is Replica.Diff: what changed in a dataset between two versions.
func (r *Reader) Diff(ctx context.Context, datasetID string, from, to int) (*Diff, error) {
	return readDiff(ctx, r.db, datasetID, from, to)
}

// Inbox lists the request events recorded, oldest received first.
func (r *Reader) Inbox(ctx context.Context, f InboxFilter) ([]InboxItem, error) {
	return r.db.Inbox(ctx, f)
}
