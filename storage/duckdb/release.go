package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	ddb "github.com/duckdb/duckdb-go/v2"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// errReleased is what a connection asked for while the file is released
// gets (Release).
var errReleased = errors.New("the file is released while the sync waits on Ploti; it is taken back after the wait")

// fileConnector is the engine's connector: DuckDB's, which Release closes
// (DuckDB's lock on the file goes with it) and resume makes again, so that
// the *sql.DB handles over it (the engine's, the read-only one, a
// caller's Replica.DB()) stay the same objects across the gap.
type fileConnector struct {
	mu    sync.Mutex
	inner *ddb.Connector // nil while released
	drv   driver.Driver
}

func newFileConnector(c *ddb.Connector) *fileConnector {
	return &fileConnector{inner: c, drv: c.Driver()}
}

func (c *fileConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.mu.Lock()
	inner := c.inner
	c.mu.Unlock()
	if inner == nil {
		return nil, errReleased
	}
	return inner.Connect(ctx)
}

func (c *fileConnector) Driver() driver.Driver { return c.drv }

// Close closes DuckDB's connector, once.
func (c *fileConnector) Close() error {
	c.mu.Lock()
	inner := c.inner
	c.inner = nil
	c.mu.Unlock()
	if inner == nil {
		return nil
	}
	return inner.Close()
}

// idleConns is database/sql's default pool of idle connections, which
// Release empties and resume gives back.
const idleConns = 2

// Release gives the file up while the caller waits (storage.Releaser):
// with no connection in use it closes DuckDB's idle connections and the
// database, which drops DuckDB's lock, and keeps the handles. resume
// opens the file again with the same options, waiting for another
// process's lock up to the options' LockTimeout (DefaultLockTimeout when
// told not to wait), and refuses a file whose commit log moved meanwhile:
// another writer changed it under the caller's feet.
func (db *DB) Release(ctx context.Context) (func(context.Context) error, error) {
	if db.readOnly || db.pubSrc != nil || db.writer == "" {
		return nil, nil
	}
	head, err := db.commitHead(ctx)
	if err != nil {
		return nil, nil // cannot tell what to check after: keep it
	}
	c := db.fc
	c.mu.Lock()
	inner := c.inner
	c.inner = nil // no connection is made from here on
	c.mu.Unlock()
	pools := db.pools()
	for _, p := range pools {
		p.SetMaxIdleConns(0) // closes the idle connections
	}
	for _, p := range pools {
		if p.Stats().InUse > 0 {
			c.mu.Lock()
			c.inner = inner
			c.mu.Unlock()
			for _, p := range pools {
				p.SetMaxIdleConns(idleConns)
			}
			return nil, nil
		}
	}
	if err := inner.Close(); err != nil {
		return nil, fmt.Errorf("release %s: %w", db.path, err)
	}
	releaseWriter(db.writer)
	db.writer = ""
	rememberReadBack(db.path)
	// Until it is taken back unchanged, the file is not this process's
	// to vouch for: Close neither remembers it as read back nor writes
	// its summary.
	db.readable = false
	return func(ctx context.Context) error { return db.takeBack(ctx, head) }, nil
}

// pools are the engine's handles over the connector: its own, and the
// read-only one once asked for.
func (db *DB) pools() []*sql.DB {
	out := []*sql.DB{db.sql}
	if ro := db.ro.handle(); ro != nil {
		out = append(out, ro)
	}
	return out
}

// takeBack opens the file again after Release, as it was opened, and
// checks that nobody wrote to it meanwhile.
func (db *DB) takeBack(ctx context.Context, head int64) error {
	timeout := db.opts.LockTimeout
	if timeout < 0 {
		timeout = storage.DefaultLockTimeout
	}
	err := storage.WaitLocked(ctx, db.path, timeout, db.opts.OnLocked, func() error {
		writer, err := holdWriter(db.path)
		if err != nil {
			return err
		}
		inner, err := duckread.NewConnector(db.path, db.opts)
		if err != nil {
			releaseWriter(writer)
			if lockRE.MatchString(err.Error()) {
				return fmt.Errorf("%w: %s", storage.ErrLocked, lockHolder(err.Error()))
			}
			return fmt.Errorf("open %s again after the wait: %w", db.path, err)
		}
		db.writer = writer
		db.fc.mu.Lock()
		db.fc.inner = inner
		db.fc.mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range db.pools() {
		p.SetMaxIdleConns(idleConns)
	}
	return db.afterTakeBack(ctx, head)
}

// afterTakeBack sets the open file's settings again and refuses one that
// another writer changed while it was released.
func (db *DB) afterTakeBack(ctx context.Context, head int64) error {
	now, err := db.commitHead(ctx)
	if err != nil {
		return fmt.Errorf("open %s again after the wait: %w", db.path, err)
	}
	if now != head {
		return fmt.Errorf("open %s again after the wait: another process wrote to it meanwhile (commit %d, was %d): %w",
			db.path, now, head, storage.ErrLocked)
	}
	if err := db.readThreads(ctx); err != nil {
		return err
	}
	if _, err := db.sql.ExecContext(ctx, "SET checkpoint_threshold = '"+CheckpointThreshold+"'"); err != nil {
		return fmt.Errorf("open %s again after the wait: %w", db.path, err)
	}
	db.readable = true
	return nil
}
