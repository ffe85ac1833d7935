package replica

import (
	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// The words a caller of the replica needs, under replica's name: each is
// the storage (or apply) value itself, so that a value compared or an
// error matched with errors.Is means the same on either side.

// What a MAJOR schema change does (Options.OnMajor).
const (
	// OnMajorHold keeps the version held for review (the default).
	OnMajorHold = apply.OnMajorHold
	// OnMajorReload reloads the dataset at the new version.
	OnMajorReload = apply.OnMajorReload
)

// How a file's tables store geometry (Options.Geometry, Status.Geometry).
const (
	// GeometryNative is DuckDB's GEOMETRY type.
	GeometryNative = storage.GeometryNative
	// GeometryWKB is standard WKB in a BLOB, which every DuckDB client reads.
	GeometryWKB = storage.GeometryWKB
	// GeometryPostGIS is a database's: PostGIS geometry.
	GeometryPostGIS = storage.GeometryPostGIS
)

// A dataset's status (DatasetStatus.Status).
const (
	StatusPending = storage.StatusPending
	StatusCurrent = storage.StatusCurrent
	StatusHeld    = storage.StatusHeld
	StatusRemoved = storage.StatusRemoved
	StatusFailed  = storage.StatusFailed
)

// Where a dataset comes from (DatasetStatus.Source).
const (
	// SourceFeed is a dataset of the subscription (Data Feeds versions).
	SourceFeed = storage.SourceFeed
	// SourceWatch is a watched dataset (Ploti's own versions).
	SourceWatch = storage.SourceWatch
)

// Whose hold a Hold is (Hold.Kind).
const (
	// HoldServer is Ploti's: its next version is not sent yet.
	HoldServer = storage.HoldServer
	// HoldLocal is the file's own review hold (OnMajorHold).
	HoldLocal = storage.HoldLocal
)

// The kinds of change (Change.Change, DiffRow.Change).
const (
	ChangeAdded   = storage.ChangeAdded
	ChangeChanged = storage.ChangeChanged
	ChangeRemoved = storage.ChangeRemoved
	ChangeRenamed = storage.ChangeRenamed
)

// ColRecordID is the column of every dataset table that holds the
// record's id.
const ColRecordID = storage.ColRecordID

// DefaultLockTimeout is how long Open and OpenReader wait for another
// process's lock when Options.LockTimeout (ReaderOptions.LockTimeout) is 0.
const DefaultLockTimeout = storage.DefaultLockTimeout

// DuckDBVersion is the DuckDB release this build embeds, and StorageV1_0
// the storage version number of the files it writes.
const (
	DuckDBVersion = backends.DuckDBVersion
	StorageV1_0   = backends.StorageV1_0
)

// The rows the readers return.
type (
	// StoryRow is one version of a record in its history (Story).
	StoryRow = storage.StoryRow
	// DiffRow is one record's change between two versions (Diff).
	DiffRow = storage.DiffRow
	// Attachment is a file the replica keeps with a dataset's version.
	Attachment = storage.Attachment
	// InboxItem is a request event recorded in the inbox.
	InboxItem = storage.InboxItem
	// InboxFilter narrows Reader.Inbox.
	InboxFilter = storage.InboxFilter
	// Subscription is the subscription a file replicates.
	Subscription = storage.Subscription
	// Run is one sync's row in the file's log of runs.
	Run = storage.Run
)

// CheckGeometry refuses a geometry mode other than GeometryNative and
// GeometryWKB ("" keeps the file's).
func CheckGeometry(s string) error { return storage.CheckGeometry(s) }

// StorageName is storage version v's name, "v1.0.0" for StorageV1_0; ""
// when this build does not know it.
func StorageName(v uint64) string { return backends.StorageName(v) }

// StorageReaders says in words which DuckDB clients read a file of
// storage version v.
func StorageReaders(v uint64) string { return backends.StorageReaders(v) }

// CheckFolder refuses, in words, a file to create whose folder is not there.
func CheckFolder(path string) error { return backends.CheckFolder(path) }
