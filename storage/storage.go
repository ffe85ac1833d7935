package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Defaults for Options.
const (
	DefaultLockTimeout = 30 * time.Second
)

// Options configure Open.
type Options struct {
	// MemoryLimit is DuckDB's memory_limit, e.g. "1GB"; empty leaves DuckDB's default.
	MemoryLimit string
	// Threads is DuckDB's thread count; 0 leaves DuckDB's default.
	Threads int
	// LockTimeout is how long Open waits while another process holds the
	// file; zero means DefaultLockTimeout, negative means do not wait.
	LockTimeout time.Duration
	// OnLocked is called once, the first time Open finds the file locked,
	// with DuckDB's message naming the process that holds it.
	OnLocked func(msg string)
	// Now is the clock used for timestamps written to _ploti; default time.Now.
	Now func() time.Time
	// ReadOnly opens the file read-only (status, holds list). The file
	// must exist and be a ploti-replica file at this build's migration.
	ReadOnly bool
	// NoCreate makes Open fail with ErrNoFile rather than create a new
	// file: commands that only read or edit state never leave one behind.
	NoCreate bool
	// Geometry is how the tables store geometry columns: GeometryNative
	// or GeometryWKB. The file remembers it (a new file starts with
	// GeometryNative); a writing Open with the other one converts every
	// dataset table's geometry columns, in one transaction. Empty keeps
	// the file's.
	Geometry string
}

// DB is an open DuckDB file with the _ploti schema migrated.
type DB struct {
	sql       *sql.DB
	connector *duckdb.Connector
	path      string
	now       func() time.Time
	readOnly  bool
	storage   uint64      // DuckDB storage version of the file
	pubSrc    *os.File    // the file opened by Publish; closed after DuckDB (see publishSource)
	chained   bool        // Commit appends to _ploti.commit_log (walcheck.go)
	readable  bool        // read back whole at open, or created by it (damaged.go)
	geometry  string      // how the tables store geometry: GeometryNative or GeometryWKB
	be        Backend     // another engine's database (backend.go), or nil for the DuckDB file
	facts     factCache   // changes files read ahead of their merges (inspect_changes.go)
	threads   threadCount // DuckDB's threads: as opened, and now (threads.go)
	writer    string      // the path holdWriter took for this writer; "" for none
}

var lockRE = regexp.MustCompile(`(?i)conflicting lock|could not set lock`)

// Open opens or creates the DuckDB file at path and migrates _ploti. While
// another process holds the file it waits with backoff up to LockTimeout.
// It reads the file's header first: a file that is not DuckDB's
// (ErrNotDuckDB) or whose storage version the embedded DuckDB cannot read
// (ErrStorageVersion) is refused in words, before DuckDB touches it.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := CheckGeometry(opts.Geometry); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	info, err := Inspect(path)
	if err != nil {
		return nil, err
	}
	if info.Exists {
		if err := checkWAL(ctx, path); err != nil {
			return nil, err
		}
	}
	if !info.Exists && (opts.NoCreate || opts.ReadOnly) {
		return nil, fmt.Errorf("open %s: %w", path, ErrNoFile)
	}
	if !info.Exists {
		if err := CheckFolder(path); err != nil {
			return nil, err
		}
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	deadline := time.Now().Add(opts.LockTimeout)
	wait := 100 * time.Millisecond
	told := false
	for {
		db, err := open(ctx, path, opts, info.Exists)
		if err == nil {
			db.storage = info.StorageVersion
			if !info.Exists {
				db.storage = StorageV1_0
			}
			return db, nil
		}
		if !errors.Is(err, ErrLocked) {
			return nil, err
		}
		if !told && opts.OnLocked != nil {
			opts.OnLocked(err.Error())
			told = true
		}
		left := time.Until(deadline)
		if opts.LockTimeout < 0 {
			return nil, fmt.Errorf("open %s: told not to wait: %w", path, err)
		}
		if left <= 0 {
			return nil, fmt.Errorf("open %s: gave up after %s: %w", path, opts.LockTimeout, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(wait, left)): // the last try is at the deadline
		}
		if wait *= 2; wait > 2*time.Second {
			wait = 2 * time.Second
		}
	}
}

func open(ctx context.Context, path string, opts Options, existed bool) (*DB, error) {
	var writer string
	if !opts.ReadOnly {
		var err error
		if writer, err = holdWriter(path); err != nil {
			return nil, err
		}
	}
	connector, err := newConnector(path, opts)
	if err != nil {
		releaseWriter(writer)
		if lockRE.MatchString(err.Error()) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, lockHolder(err.Error()))
		}
		if d := asDamaged(path, err); d != nil && existed {
			return nil, d
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db := &DB{sql: sql.OpenDB(connector), connector: connector, path: path, now: opts.Now, readOnly: opts.ReadOnly, writer: writer}
	if !opts.ReadOnly {
		// Held now: no summary of an older state outlives what this
		// process writes (summary.go).
		if err := removeSummary(path); err != nil {
			db.Close()
			return nil, err
		}
	}
	if existed {
		// Issue 15: a file that does not read back whole is refused
		// before the migrations (or anything) write to it.
		if err := db.checkReadable(ctx); err != nil {
			db.Close()
			return nil, err
		}
	}
	db.readable = true
	if err := db.prepare(ctx, opts); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// prepare gets an opened file ready: a reader checks that it is a replica
// this build reads; a writer migrates it and sets the engine's settings.
func (db *DB) prepare(ctx context.Context, opts Options) error {
	if opts.ReadOnly {
		if err := db.checkReplica(ctx); err != nil {
			return err
		}
		return db.readGeometry(ctx)
	}
	if err := db.migrate(ctx); err != nil {
		return err
	}
	db.chained = true
	if err := db.readThreads(ctx); err != nil {
		return err
	}
	if err := db.readGeometry(ctx); err != nil {
		return err
	}
	if err := db.setGeometry(ctx, opts.Geometry); err != nil {
		return err
	}
	// DuckDB's setting is global to the open file: every connection
	// of the pool shares it.
	if _, err := db.sql.ExecContext(ctx, "SET checkpoint_threshold = '"+CheckpointThreshold+"'"); err != nil {
		return fmt.Errorf("open %s: %w", db.path, err)
	}
	return nil
}

// CheckpointThreshold is the engine's DuckDB checkpoint_threshold between
// its commits (DuckDB's default): small commits (state-only pages, a page
// of small merges, a run's row) go to the WAL until it holds this much,
// and the commit past it checkpoints them all.
const CheckpointThreshold = "16MB"

// checkpointBytes is CheckpointThreshold in bytes (DuckDB's MB is 10^6).
const checkpointBytes = 16_000_000

// BulkCommit is how much a commit of the engine's may add to the WAL
// before it is checkpointed as it commits, without the WAL: each commit
// sets checkpoint_threshold to the WAL's size plus this (CheckpointThreshold
// at most) and puts it back after (decision 52). A merge's rows would
// otherwise be written twice, to the WAL at its commit and into the file
// at the next checkpoint, which comes soon (the CLI's sync closes the
// file; a long watch reaches the threshold). Issue 6: a 1% merge at 10M
// rows commits in 0.39–0.40 s this way against 0.08 s for the WAL and
// 0.36–0.45 s for the checkpoint after. Issue 18: with 4MB as the
// threshold itself, a catch-up of 1,800 small merges over 500 tables
// checkpointed every few pages, each time rewriting the tables they had
// touched: 52 s against 31 s with DuckDB's 16MB (DuckDB alone 19 s).
const BulkCommit = 4_000_000 // DuckDB's "4MB"

// commitThreshold is the checkpoint_threshold a commit of the file's runs
// with: the WAL's size now plus BulkCommit, at most CheckpointThreshold.
func (db *DB) commitThreshold() string {
	wal := int64(0)
	if fi, err := os.Stat(db.path + ".wal"); err == nil {
		wal = fi.Size()
	}
	return fmt.Sprintf("%dKB", min(wal+BulkCommit, checkpointBytes)/1000)
}

// newConnector opens the file with opts' DuckDB settings.
func newConnector(path string, opts Options) (*duckdb.Connector, error) {
	q := url.Values{}
	// The replica reads each downloaded file once, and a file fetched
	// again (a repair after a bad download) reuses its spool name: DuckDB's
	// external file cache served the old bytes for it.
	q.Set("enable_external_file_cache", "false")
	// Never reach for the network: a file that needs an extension (a
	// SQLite file makes DuckDB fetch sqlite_scanner) is refused instead.
	q.Set("autoinstall_known_extensions", "false")
	q.Set("autoload_known_extensions", "false")
	// New files in the storage every DuckDB 1.x client reads (issue 14),
	// whatever a later DuckDB's default.
	q.Set("storage_compatibility_version", "v1.0.0")
	if opts.ReadOnly {
		q.Set("access_mode", "READ_ONLY")
	}
	if opts.MemoryLimit != "" {
		q.Set("memory_limit", opts.MemoryLimit)
	}
	if opts.Threads > 0 {
		q.Set("threads", strconv.Itoa(opts.Threads))
	}
	dsn := path + "?" + q.Encode()
	return duckdb.NewConnector(dsn, func(execer driver.ExecerContext) error {
		// Timestamps in the feed are UTC; make casts and display agree.
		_, err := execer.ExecContext(context.Background(), "SET TimeZone = 'UTC'", nil)
		return err
	})
}

// lockHolder keeps the part of DuckDB's lock message that names the holder.
func lockHolder(msg string) string {
	if i := strings.Index(msg, "Conflicting lock"); i >= 0 {
		msg = msg[i:]
	}
	for _, tail := range []string{". See also", ". However, you would be able to open"} {
		if i := strings.Index(msg, tail); i >= 0 {
			msg = msg[:i]
		}
	}
	return strings.TrimSpace(msg)
}

// Path is the file's path.
func (db *DB) Path() string { return db.path }

// StorageVersion is the file's DuckDB storage version number (see
// StorageReaders).
func (db *DB) StorageVersion() uint64 { return db.storage }

// checkReplica refuses, in words, a file opened read-only that this build
// cannot read as a replica: one ploti-replica never wrote, one whose
// migrations never ran, or one at another migration.
func (db *DB) checkReplica(ctx context.Context) error {
	// The migrations table itself first: a scan of duckdb_tables() costs
	// a row a table (20–100 ms at 2,000 tables), so it only words why the
	// query failed.
	var have int
	err := db.sql.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM _ploti.schema_migrations").Scan(&have)
	if err != nil {
		var tables int
		if cerr := db.sql.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables()
			WHERE database_name = current_database() AND schema_name = '_ploti' AND table_name = 'schema_migrations'`).Scan(&tables); cerr != nil {
			return fmt.Errorf("open %s: %w", db.path, cerr)
		}
		if tables == 0 {
			return fmt.Errorf("open %s: %w: it is a DuckDB file without the _ploti schema", db.path, ErrNotReplica)
		}
		return fmt.Errorf("open %s: %w", db.path, err)
	}
	switch want := MigrationVersion(); {
	case have == 0:
		return fmt.Errorf("open %s: %w: its _ploti migrations never ran", db.path, ErrNotReplica)
	case have > want:
		return fmt.Errorf("open %s: file at migration %d, this build knows %d: %w", db.path, have, want, ErrNewerFile)
	case have < want:
		return fmt.Errorf("open %s: file at migration %d, this build reads %d (a sync, which opens it for writing, migrates it): %w",
			db.path, have, want, ErrOlderFile)
	}
	return nil
}

// SQL is the database handle for queries. In-process readers see the last
// committed state while a sync runs.
func (db *DB) SQL() *sql.DB { return db.sql }

// Now is the storage clock.
func (db *DB) Now() time.Time { return db.now().UTC() }

// Close closes the file, gathering every error.
func (db *DB) Close() error {
	if db.be != nil {
		return db.be.Close()
	}
	var errs []error
	if db.sql != nil {
		errs = append(errs, db.sql.Close())
	}
	if db.connector != nil {
		errs = append(errs, db.connector.Close())
	}
	if db.pubSrc != nil { // only now: closing it drops DuckDB's lock
		errs = append(errs, db.pubSrc.Close())
	}
	err := errors.Join(errs...)
	releaseWriter(db.writer)
	db.writer = ""
	if err == nil && db.readable && !db.readOnly {
		// The file as this process left it, read whole at open and
		// written since by DuckDB: the next open, here or in another
		// process, need not read it again unless something else changes
		// it (readback.go).
		rememberReadBack(db.path)
	}
	return err
}

// Checkpoint writes the WAL into the file and lets DuckDB reuse freed blocks.
func (db *DB) Checkpoint(ctx context.Context) error {
	if db.be != nil {
		return nil // a file's concern
	}
	if _, err := db.sql.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// MigrationVersion is the newest migration this build knows.
func MigrationVersion() int {
	names, _ := migrationNames()
	return len(names)
}

func migrationNames() ([]string, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// migrate applies the embedded migrations not yet applied, each in a transaction.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.sql.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS _ploti;
		CREATE TABLE IF NOT EXISTS _ploti.schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)`); err != nil {
		return fmt.Errorf("migrate %s: %w", db.path, err)
	}
	var have int
	if err := db.sql.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM _ploti.schema_migrations").Scan(&have); err != nil {
		return fmt.Errorf("migrate %s: %w", db.path, err)
	}
	names, err := migrationNames()
	if err != nil {
		return err
	}
	if have > len(names) {
		return fmt.Errorf("open %s: file at migration %d, this build knows %d: %w", db.path, have, len(names), ErrNewerFile)
	}
	for i := have; i < len(names); i++ {
		body, err := migrationFS.ReadFile("migrations/" + names[i])
		if err != nil {
			return err
		}
		tx, err := db.sql.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s to %d (%s): %w", db.path, i+1, names[i], err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO _ploti.schema_migrations VALUES (?, ?)", i+1, db.Now()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate %s to %d: %w", db.path, i+1, err)
		}
	}
	return nil
}

// Tx is a transaction with a fixed now.
type Tx struct {
	tx  *sql.Tx
	db  *DB
	be  BackendTx // the Backend's transaction, or nil for the DuckDB file
	Now time.Time
	ids map[string]idCounts // snapshots' ids counted ahead (CheckSnapshotIDs)
}

// Begin starts a transaction.
func (db *DB) Begin(ctx context.Context) (*Tx, error) {
	if db.be != nil {
		btx, err := db.be.Begin(ctx)
		if err != nil {
			return nil, fmt.Errorf("begin: %w", err)
		}
		return &Tx{tx: btx.SQL(), db: db, be: btx, Now: db.Now()}, nil
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return &Tx{tx: tx, db: db, Now: db.Now()}, nil
}

// Commit commits the transaction.
func (tx *Tx) Commit() error {
	if tx.be != nil {
		return tx.be.Commit()
	}
	defer tx.db.allThreads()
	if !tx.db.chained {
		return tx.tx.Commit()
	}
	seq, err := tx.chainCommit()
	if err != nil {
		tx.tx.Rollback()
		return err
	}
	// DuckDB reads the setting as the transaction commits (global to the
	// open file; set within the transaction, it holds for its commit).
	if _, err := tx.tx.Exec("SET GLOBAL checkpoint_threshold = '" + tx.db.commitThreshold() + "'"); err != nil {
		tx.tx.Rollback()
		return fmt.Errorf("commit: %w", err)
	}
	err = tx.tx.Commit()
	// Back to the threshold between commits, for writes through DB(); a
	// failure leaves this commit's, which the next commit sets again.
	tx.db.sql.Exec("SET GLOBAL checkpoint_threshold = '" + CheckpointThreshold + "'")
	if err != nil {
		return err
	}
	tx.db.pruneCommitLog(seq)
	return nil
}

// Rollback aborts the transaction; after Commit it does nothing.
func (tx *Tx) Rollback() error {
	if tx.be != nil {
		return tx.be.Rollback()
	}
	err := tx.tx.Rollback()
	tx.db.allThreads()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// Exec runs a statement in the transaction.
func (tx *Tx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return tx.tx.ExecContext(ctx, q, args...)
}

// QueryRow runs a query returning one row in the transaction.
func (tx *Tx) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return tx.tx.QueryRowContext(ctx, q, args...)
}

// Query runs a query in the transaction.
func (tx *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return tx.tx.QueryContext(ctx, q, args...)
}

// Update runs fn in a transaction and commits it, or rolls it back on error.
func (db *DB) Update(ctx context.Context, fn func(tx *Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
