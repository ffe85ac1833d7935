package duckdb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

var lockRE = regexp.MustCompile(`(?i)conflicting lock|could not set lock`)

// sameProcessRE is DuckDB's refusal (duckdb-go's instance cache) of a
// second open of a file that this process has open with other settings:
// a Reader (READ_ONLY) beside a Replica, or the reverse, or an
// application's own sql.Open of the file.
var sameProcessRE = regexp.MustCompile(`(?i)same database file with a different configuration`)

// Open opens or creates the DuckDB file at path and migrates _ploti. While
// another process holds the file it waits with backoff up to LockTimeout.
// It reads the file's header first: a file that is not DuckDB's
// (ErrNotDuckDB) or whose storage version the embedded DuckDB cannot read
// (ErrStorageVersion) is refused in words, before DuckDB touches it.
func Open(ctx context.Context, path string, opts storage.Options) (*storage.DB, error) {
	db, err := OpenFile(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return db.reg, nil
}

// OpenFile is Open's engine itself, for what only the file does (the
// benchmark's Publish on its own); Open's storage.DB is over it.
func OpenFile(ctx context.Context, path string, opts storage.Options) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := storage.CheckGeometry(opts.Geometry); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	info, err := Inspect(path)
	if err != nil {
		return nil, err
	}
	if err := checkAccess(path, info.Exists, opts.ReadOnly); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if info.Exists {
		if err := checkWAL(ctx, path); err != nil {
			return nil, err
		}
	}
	if !info.Exists && (opts.NoCreate || opts.ReadOnly) {
		return nil, fmt.Errorf("open %s: %w", path, storage.ErrNoFile)
	}
	if !info.Exists {
		if err := CheckFolder(path); err != nil {
			return nil, err
		}
	}
	// A WAL left by a process that did not close the file holds writes
	// this one did not count: its first checkpoint keeps FSST (light.go).
	hadWAL := info.Exists && walSize(path) > 0
	var db *DB
	err = storage.WaitLocked(ctx, path, opts.LockTimeout, opts.OnLocked, func() (err error) {
		db, err = open(ctx, path, opts, info.Exists)
		return err
	})
	if err != nil {
		return nil, err
	}
	if hadWAL {
		db.pending.add(true, nil)
	}
	db.storage = info.StorageVersion
	if !info.Exists {
		db.storage = StorageV1_0
	}
	return db, nil
}

func open(ctx context.Context, path string, opts storage.Options, existed bool) (*DB, error) {
	var writer string
	if !opts.ReadOnly {
		var err error
		if writer, err = holdWriter(path); err != nil {
			return nil, err
		}
	}
	connector, err := duckread.NewConnector(path, opts)
	if err != nil {
		releaseWriter(writer)
		if lockRE.MatchString(err.Error()) {
			return nil, fmt.Errorf("%w: %s", storage.ErrLocked, lockHolder(err.Error()))
		}
		if sameProcessRE.MatchString(err.Error()) {
			return nil, fmt.Errorf("%w: %s is open elsewhere in this process (a Replica or Reader of it, or the application's own "+
				"sql.Open) with other settings, and DuckDB opens a file once per process: query it through the open Replica's "+
				"ReadOnly() or DB()", storage.ErrLocked, path)
		}
		if d := asDamaged(path, err); d != nil && existed {
			return nil, d
		}
		if pe := storage.AsPermission(err, path); pe != nil {
			return nil, fmt.Errorf("open %s: %w", path, pe)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fc := newFileConnector(connector)
	db := &DB{sql: sql.OpenDB(fc), fc: fc, opts: opts, path: path, now: opts.Now, readOnly: opts.ReadOnly, writer: writer}
	db.reg = storage.OpenEngine(db, opts)
	if !opts.ReadOnly {
		// Held now: no summary of an older state outlives what this
		// process writes (summary.go).
		if err := removeSummary(path); err != nil {
			db.Close()
			return nil, err
		}
	}
	if existed {
		// A file that does not read back whole is refused
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
func (db *DB) prepare(ctx context.Context, opts storage.Options) error {
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
// file; a long watch reaches the threshold). A 1% merge at 10M
// rows commits in 0.39–0.40 s this way against 0.08 s for the WAL and
// 0.36–0.45 s for the checkpoint after. With 4MB as the
// threshold itself, a catch-up of 1,800 small merges over 500 tables
// checkpointed every few pages, each time rewriting the tables they had
// touched: 52 s against 31 s with DuckDB's 16MB (DuckDB alone 19 s).
const BulkCommit = 4_000_000

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
			return fmt.Errorf("open %s: %w: it is a DuckDB file without the _ploti schema", db.path, storage.ErrNotReplica)
		}
		return fmt.Errorf("open %s: %w", db.path, err)
	}
	switch want := MigrationVersion(); {
	case have == 0:
		return fmt.Errorf("open %s: %w: its _ploti migrations never ran", db.path, storage.ErrNotReplica)
	case have > want:
		return fmt.Errorf("open %s: file at migration %d, this build knows %d: %w", db.path, have, want, storage.ErrNewerFile)
	case have < want:
		return fmt.Errorf("open %s: file at migration %d, this build reads %d (a sync, which opens it for writing, migrates it): %w",
			db.path, have, want, storage.ErrOlderFile)
	}
	return nil
}

// Checkpoint writes the WAL into the file and lets DuckDB reuse freed blocks.
func (db *DB) Checkpoint(ctx context.Context) error {
	if err := db.checkpoint(ctx); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// checkpointWait is how long a checkpoint waits for another connection's
// write transaction to end: DuckDB refuses a CHECKPOINT while one is open
// (a FORCE CHECKPOINT would abort it), and those of this process are
// short (a statement or a commit of the registry).
const checkpointWait = 2 * time.Second

// checkpoint runs DuckDB's CHECKPOINT, trying again every 10 ms for up to
// checkpointWait while another write transaction is open, with FSST left
// out when it writes light work only (light.go).
func (db *DB) checkpoint(ctx context.Context) error {
	return db.lightCheckpoint(ctx, func() error { return db.checkpointWaiting(ctx) })
}

// checkpointWaiting is checkpoint's CHECKPOINT and its waits.
func (db *DB) checkpointWaiting(ctx context.Context) error {
	deadline := time.Now().Add(checkpointWait)
	for {
		_, err := db.sql.ExecContext(ctx, "CHECKPOINT")
		if err == nil || !strings.Contains(err.Error(), "other write transactions active") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
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
	// A replica's file has its migrations' table: it is read first, and
	// only a file without it (a new one) has it created, two statements
	// of DDL that cost every open a millisecond.
	const current = "SELECT coalesce(max(version), 0) FROM _ploti.schema_migrations"
	var have int
	if first := db.sql.QueryRowContext(ctx, current).Scan(&have); first != nil {
		// The read's own error is kept: an I/O error is not a missing table.
		if _, err := db.sql.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS _ploti;
			CREATE TABLE IF NOT EXISTS _ploti.schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL)`); err != nil {
			return fmt.Errorf("migrate %s: %w", db.path, errors.Join(first, err))
		}
		if err := db.sql.QueryRowContext(ctx, current).Scan(&have); err != nil {
			return fmt.Errorf("migrate %s: %w", db.path, errors.Join(first, err))
		}
	}
	names, err := migrationNames()
	if err != nil {
		return err
	}
	if have > len(names) {
		return fmt.Errorf("open %s: file at migration %d, this build knows %d: %w", db.path, have, len(names), storage.ErrNewerFile)
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
