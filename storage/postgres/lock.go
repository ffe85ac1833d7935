package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// The writer's advisory lock (PostgreSQL's pg_try_advisory_lock, two
// int4 keys): one writer a database, as a DuckDB file has one writer. A
// database holds one replica's _ploti (one subscription and its
// watches), so the lock is the database's; advisory locks are scoped to
// the database by PostgreSQL itself. The session that holds it is the one
// every write runs on: should it die, its transaction dies with the lock.
const (
	lockClass = 0x706c6f74 // "plot"
	lockObj   = 0x69726570 // "irep"
)

// lock takes the writer's lock, waiting with backoff up to LockTimeout,
// with the --lock-timeout messages of a DuckDB file.
func (db *DB) lock(ctx context.Context, opts Options) error {
	return storage.WaitLocked(ctx, db.name, opts.LockTimeout, opts.OnLocked, func() error {
		var got bool
		if err := db.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", lockClass, lockObj).Scan(&got); err != nil {
			return fmt.Errorf("open %s: take the writer's lock: %w", db.name, err)
		}
		if !got {
			return fmt.Errorf("%w: %s", storage.ErrLocked, db.holder(ctx))
		}
		db.locked = true
		return nil
	})
}

// refuseStandby refuses, before anything else, to write a database that
// is a hot standby (in recovery: every write there fails, and the
// advisory lock taken on it would not keep the primary's writer out):
// the replica is written on the primary, and the standby is for readers.
func (db *DB) refuseStandby(ctx context.Context) error {
	var standby bool
	if err := db.conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&standby); err != nil {
		return fmt.Errorf("open %s: %w", db.name, err)
	}
	if standby {
		return fmt.Errorf("open %s: the database is a hot standby (in recovery, read-only): "+
			"sync writes to its primary, and readers and status may use this standby", db.name)
	}
	return nil
}

// holder names the session that holds the writer's lock, as DuckDB's
// message names the process that holds a file.
func (db *DB) holder(ctx context.Context) string {
	var pid int
	var app, user, client string
	var since time.Time
	err := db.conn.QueryRow(ctx, `SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.usename, ''),
			coalesce(host(a.client_addr), 'a local socket'), a.backend_start
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		LIMIT 1`, int64(lockClass), int64(lockObj)).Scan(&pid, &app, &user, &client, &since)
	if err != nil {
		return "another writer holds " + db.name
	}
	return fmt.Sprintf("Conflicting lock is held by %q (server pid %d, user %s, from %s, connected %s) on %s",
		app, pid, user, client, since.UTC().Format(time.RFC3339), db.name)
}
