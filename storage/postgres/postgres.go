package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// Defaults for Options.
const (
	// DefaultSchema is the schema of the dataset tables.
	DefaultSchema = "public"
	// DefaultSwapWait is how long one try to take a table from its
	// readers waits (lock_timeout) before it lets them go on and tries
	// again: the longest a reader's query waits for a swap.
	DefaultSwapWait = 5 * time.Millisecond
)

// Options configure Open.
type Options struct {
	// Schema is the schema of the dataset tables; empty means
	// DefaultSchema. The database remembers it (_ploti.settings 'schema').
	Schema string
	// LockTimeout is how long Open waits while another writer holds the
	// database; zero means storage.DefaultLockTimeout, negative means do
	// not wait.
	LockTimeout time.Duration
	// OnLocked is called once, the first time Open finds the database
	// held, with a message naming the session that holds it.
	OnLocked func(msg string)
	// Now is the clock used for timestamps written to _ploti; default time.Now.
	Now func() time.Time
	// SwapWait is each try's lock_timeout when a load swaps its table in
	// (and when columns are added); zero means DefaultSwapWait.
	SwapWait time.Duration
	// ReadOnly opens the database as one of its readers (status, holds):
	// no writer's lock, no migration, no DuckDB; it must be a replica at
	// this build's migration, and its schema is the one it names.
	ReadOnly bool
	// MemoryLimit and Threads configure the in-memory DuckDB that reads
	// the downloaded files, as storage.Options does.
	MemoryLimit string
	Threads     int
	// Logger receives what Open does on its own and does not fail for
	// (upgradeTables); nil discards it.
	Logger *slog.Logger
}

// DB is a PostgreSQL database with the _ploti schema migrated, held by
// this process as its one writer.
type DB struct {
	conn     *pgx.Conn  // the writer's session: it holds the advisory lock, and every Tx runs on it
	pool     *sql.DB    // database/sql over pgx, ? placeholders allowed (sqldriver.go): the registry's statements
	pinned   *sql.Conn  // conn, as pool's connection kept out of the pool
	duck     *sql.DB    // in-memory DuckDB: reads and checks the downloaded files
	chunks   *chunkDuck // in-memory DuckDB of the COPYs' exports, read by data chunks
	name     string     // the database as errors name it: host and database, never a password
	schema   string
	now      func() time.Time
	swapWait time.Duration
	geomOID  uint32
	loads    int // numbers the tables loads build
	readOnly bool
	locked   bool            // holds the writer's advisory lock
	cfg      *pgx.ConnConfig // the sessions' settings, for the read-only pool
	log      *slog.Logger    // what an open does on its own (upgradeTables)
	ro       roHandle        // the read-only pool, once asked for (readonly.go)
}

// IsURL tells whether a --db value names a PostgreSQL database rather
// than a DuckDB file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact is a database URL as errors and logs may show it: without its
// password (and any other query parameter but host and sslmode).
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres database"
	}
	u.User = url.User(u.User.Username())
	if u.User.Username() == "" {
		u.User = nil
	}
	q := url.Values{}
	for _, k := range []string{"host", "port", "sslmode", "schema"} {
		if v := u.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Open connects to the database at dsn (a postgres:// URL), takes the
// writer's advisory lock (waiting with backoff up to LockTimeout while
// another writer holds it), makes sure PostGIS and the tables' schema
// exist, and migrates _ploti. The URL's schema parameter (ours, not
// PostgreSQL's: taken out before connecting) names the tables' schema
// when opts.Schema does not.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	name := Redact(dsn) // with the schema, which it names
	dsn, opts.Schema = cutSchema(dsn, opts.Schema)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = storage.DefaultLockTimeout
	}
	if opts.SwapWait <= 0 {
		opts.SwapWait = DefaultSwapWait
	}
	cfg, err := connConfig(dsn, opts.Schema)
	if err != nil {
		return nil, fmt.Errorf("open %s: parse the URL: %w", name, scrub(err, dsn))
	}
	// One pool: the writer's session is pinned out of it (it holds the
	// advisory lock, and every Tx runs on it); readers of the committed
	// state (the registry outside a transaction) take the others.
	pool := sql.OpenDB(connector{stdlib.GetConnector(*cfg)})
	pool.SetMaxIdleConns(2)
	// A writer's in-memory DuckDBs open while the session connects, takes
	// the lock and migrates: a few milliseconds each of this machine's
	// CPU, where the session mostly waits on the server.
	var opening <-chan ducks
	if !opts.ReadOnly {
		opening = openDucks(ctx, storage.Options{MemoryLimit: opts.MemoryLimit, Threads: opts.Threads})
	}
	pinned, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		if opening != nil {
			d := <-opening
			<-closeDucks(d.duck, d.chunks)
		}
		return nil, fmt.Errorf("open %s: %w", name, scrub(err, dsn))
	}
	var conn *pgx.Conn
	pinned.Raw(func(dc any) error { conn = dc.(*sqlConn).Conn.Conn(); return nil })
	db := &DB{conn: conn, pool: pool, pinned: pinned, name: name, schema: opts.Schema, now: opts.Now, swapWait: opts.SwapWait, cfg: cfg,
		log: logs.OrDiscard(opts.Logger)}
	if opts.ReadOnly {
		if err := db.checkReplica(ctx); err != nil {
			db.Close()
			return nil, err
		}
		db.readOnly = true
		return db, nil
	}
	if err := db.openWriter(ctx, opts, opening); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openWriter makes db the database's writer: it refuses a hot standby,
// takes the writer's lock, migrates, and takes the in-memory DuckDBs
// opening (always, so that Close closes them whatever failed).
func (db *DB) openWriter(ctx context.Context, opts Options, opening <-chan ducks) error {
	// The pool's second session, which the registry's reads outside a
	// transaction take, connects meanwhile too.
	warm := make(chan struct{})
	go func() {
		defer close(warm)
		if c, err := db.pool.Conn(ctx); err == nil {
			c.Close() // idle in the pool (an error shows at its first use)
		}
	}()
	defer func() { <-warm }()
	err := db.refuseStandby(ctx)
	if err == nil {
		err = db.lock(ctx, opts)
	}
	if err == nil {
		err = db.setup(ctx)
	}
	d := <-opening
	db.duck, db.chunks = d.duck, d.chunks
	if err == nil && d.err != nil {
		err = fmt.Errorf("open %s: %w", db.name, d.err)
	}
	return err
}

// ducks are the in-memory DuckDBs a writer opens.
type ducks struct {
	duck   *sql.DB
	chunks *chunkDuck
	err    error
}

// openDucks opens the DuckDB that reads and checks files and the one of
// the exports side by side, in the background: 5–7 ms each on two
// cores, and one after the other they were most of a writer's open.
func openDucks(ctx context.Context, opts storage.Options) <-chan ducks {
	ch := make(chan ducks, 1)
	go func() {
		var d ducks
		var chunkErr error
		exports := make(chan struct{})
		go func() {
			defer close(exports)
			d.chunks, chunkErr = openChunkDuck(opts)
		}()
		duck, err := duckread.OpenPlain(ctx, "", opts)
		<-exports
		d.duck = duck
		if err != nil {
			err = fmt.Errorf("the DuckDB that reads files: %w", err)
		}
		if chunkErr != nil {
			chunkErr = fmt.Errorf("the DuckDB that exports rows: %w", chunkErr)
		}
		d.err = errors.Join(err, chunkErr)
		ch <- d // the caller closes whichever opened
	}()
	return ch
}

// scrub takes the URL's password out of an error's text, should a driver
// ever quote it.
func scrub(err error, dsn string) error {
	u, perr := url.Parse(dsn)
	if perr != nil || u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

// setup makes sure PostGIS and the schemas exist, migrates _ploti, and
// reads what the tables need (geometry's oid, the tables' schema).
func (db *DB) setup(ctx context.Context) error {
	// Statements without arguments go by the simple protocol: one round
	// trip, not a describe first.
	var oid *uint32
	if err := db.conn.QueryRow(ctx, "SELECT to_regtype('geometry')::oid", pgx.QueryExecModeSimpleProtocol).Scan(&oid); err != nil {
		return fmt.Errorf("open %s: %w", db.name, err)
	}
	if oid == nil {
		if _, err := db.conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS postgis"); err != nil {
			return fmt.Errorf("open %s: PostGIS is not installed in the database and creating it failed (a superuser can run CREATE EXTENSION postgis): %w", db.name, err)
		}
		if err := db.conn.QueryRow(ctx, "SELECT 'geometry'::regtype::oid", pgx.QueryExecModeSimpleProtocol).Scan(&oid); err != nil {
			return fmt.Errorf("open %s: find PostGIS's geometry type: %w", db.name, err)
		}
	}
	db.geomOID = *oid
	if err := db.migrate(ctx); err != nil {
		return err
	}
	return db.checkSchema(ctx)
}

// checkSchema records the tables' schema in a new database, and refuses
// another one than the database's: its registry names tables there. The
// same query (one round trip: no statement described first) finds the
// dataset tables an earlier build made without tableOptions, which
// upgradeTables gives them.
func (db *DB) checkSchema(ctx context.Context) error {
	var was *string
	var old []string
	err := db.conn.QueryRow(ctx, `SELECT (SELECT value FROM _ploti.settings WHERE name = 'schema'),
		ARRAY(SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname IN (SELECT table_name FROM _ploti.datasets)
				AND NOT coalesce(c.reloptions, '{}') @> $2 ORDER BY 1)`, pgx.QueryExecModeExec, db.schema, tableOptionList).Scan(&was, &old)
	switch {
	case err != nil:
		return fmt.Errorf("open %s: %w", db.name, err)
	case was == nil:
		_, err = db.conn.Exec(ctx, "INSERT INTO _ploti.settings VALUES ('schema', $1)", db.schema)
		return err
	case *was != db.schema:
		return fmt.Errorf("open %s: its tables are in schema %s, not %s (one database holds one replica)", db.name, *was, db.schema)
	}
	return db.upgradeTables(ctx, old)
}

// upgradeTables gives the dataset tables an earlier build made the
// storage parameters this one makes them with (tableOptions): a merge then
// updates their changed rows on their pages as it does a new table's. It
// rewrites nothing: the free room comes as pages are written again.
// ALTER TABLE SET takes a SHARE UPDATE EXCLUSIVE lock, which readers'
// ACCESS SHARE does not wait for and a hot standby does not replay, but a
// VACUUM, an ANALYZE or a user's CREATE INDEX holds: each waits at most
// upgradeWait. A table it cannot change (that lock taken, another owner)
// is left as it is, and the next open tries again: the parameters only
// make merges faster, so they never stop a sync.
func (db *DB) upgradeTables(ctx context.Context, tables []string) error {
	if len(tables) == 0 {
		return nil
	}
	if _, err := db.conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", upgradeWait.Milliseconds())); err != nil {
		return fmt.Errorf("open %s: %w", db.name, err)
	}
	var left []string
	var first error
	for _, t := range tables {
		_, err := db.conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s SET (%s)", db.table(t), tableOptions))
		switch {
		case err == nil:
		case pgError(err) == nil:
			return fmt.Errorf("open %s: set %s's storage parameters (%s): %w", db.name, t, tableOptions, err)
		default:
			left = append(left, t)
			first = cmp.Or(first, err)
			db.log.Debug("a table an earlier build made keeps its storage parameters", "db", db.name, "table", db.table(t), logs.Err(err))
		}
	}
	if n := len(tables) - len(left); n > 0 {
		db.log.Info("gave tables an earlier build made their storage parameters", "db", db.name, "tables", n, "parameters", tableOptions)
	}
	if len(left) > 0 {
		// One line an open, however many tables: a reason that lasts
		// (another owner) would otherwise repeat for each at every open.
		db.log.Warn("tables an earlier build made keep their storage parameters; the next open tries again",
			"db", db.name, "tables", len(left), "first", db.table(left[0]), "parameters", tableOptions, logs.Err(first))
	}
	if _, err := db.conn.Exec(ctx, "RESET lock_timeout"); err != nil {
		return fmt.Errorf("open %s: %w", db.name, err)
	}
	return nil
}

// upgradeWait is how long upgradeTables waits for one table's lock.
const upgradeWait = time.Second

// Name is the database as errors name it (no password).
func (db *DB) Name() string { return db.name }

// Schema is the schema of the dataset tables.
func (db *DB) Schema() string { return db.schema }

// Conn is the writer's session, for tests and the benchmark: statements
// on it run between the engine's transactions, never inside one.
func (db *DB) Conn() *pgx.Conn { return db.conn }

// Now is the storage clock.
func (db *DB) Now() time.Time { return db.now().UTC() }

// Close closes the session (which releases the advisory lock) and the
// DuckDB that read the files, gathering every error.
func (db *DB) Close() error {
	// The in-memory DuckDBs close beside the sessions' end, each on its
	// own: a few milliseconds each, one after the other they were most
	// of a writer's close. They hold nothing the database needs.
	ducks := closeDucks(db.duck, db.chunks)
	errs := []error{db.closeReadOnly()}
	if db.locked {
		// The lock is let go before the session ends: a server ends a
		// closed session's backend (and its locks) a moment after the
		// client hangs up, and the next writer must not find it held.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		db.conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", lockClass, lockObj)
		cancel()
	}
	if db.pinned != nil {
		// Closed for good, not given back to the pool with the lock.
		db.pinned.Raw(func(any) error { return driver.ErrBadConn })
		if err := db.pinned.Close(); !errors.Is(err, sql.ErrConnDone) {
			errs = append(errs, err)
		}
	}
	if db.pool != nil {
		errs = append(errs, db.pool.Close())
	}
	errs = append(errs, <-ducks)
	return errors.Join(errs...)
}

// closeDucks closes the DuckDB that reads files and the one of the
// exports side by side, in the background; either may be nil. The
// channel gives the first's error once both are closed.
func closeDucks(duck *sql.DB, chunks *chunkDuck) <-chan error {
	ch := make(chan error, 1)
	go func() {
		exports := make(chan struct{})
		go func() {
			defer close(exports)
			if chunks != nil {
				chunks.close()
			}
		}()
		var err error
		if duck != nil {
			err = duck.Close()
		}
		<-exports
		ch <- err
	}()
	return ch
}

// table is a dataset table's name qualified by the tables' schema.
func (db *DB) table(name string) string { return ident(db.schema) + "." + ident(name) }

// pgError is err's PostgreSQL error, if it is one.
func pgError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// checkReplica refuses, in words, a database opened read-only that is not
// a replica at this build's migration, and takes the schema it names.
func (db *DB) checkReplica(ctx context.Context) error {
	var there bool
	if err := db.conn.QueryRow(ctx, "SELECT to_regclass('_ploti.schema_migrations') IS NOT NULL").Scan(&there); err != nil {
		return fmt.Errorf("open %s: %w", db.name, err)
	}
	var have *int
	if there {
		if err := db.conn.QueryRow(ctx, "SELECT max(version) FROM _ploti.schema_migrations").Scan(&have); err != nil {
			return fmt.Errorf("open %s: %w", db.name, err)
		}
	}
	if have == nil {
		return fmt.Errorf("open %s: %w: the database has no _ploti schema (a sync makes it)", db.name, storage.ErrNotReplica)
	}
	switch want := MigrationVersion(); {
	case *have > want:
		return fmt.Errorf("open %s: database at migration %d, this build knows %d: %w", db.name, *have, want, storage.ErrNewerFile)
	case *have < want:
		return fmt.Errorf("open %s: database at migration %d, this build reads %d (a sync migrates it): %w", db.name, *have, want, storage.ErrOlderFile)
	}
	if err := db.conn.QueryRow(ctx, "SELECT value FROM _ploti.settings WHERE name = 'schema'").Scan(&db.schema); err != nil {
		return fmt.Errorf("open %s: %w", db.name, err)
	}
	_, err := db.conn.Exec(ctx, "SELECT set_config('search_path', $1, false)", ident(db.schema)+", public")
	return err
}

// cutSchema takes the schema parameter out of a postgres:// URL, and
// returns the URL without it and the schema (schema, when given, wins).
func cutSchema(dsn, schema string) (string, string) {
	u, err := url.Parse(dsn)
	if err != nil || !u.Query().Has("schema") {
		return dsn, schema
	}
	q := u.Query()
	if schema == "" {
		schema = q.Get("schema")
	}
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String(), schema
}

// connConfig is the sessions' settings: the application name that names
// this process, UTC, the dataset tables' schema first on the search path,
// and statements described each time.
func connConfig(dsn, schema string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = fmt.Sprintf("ploti-replica pid %d", os.Getpid())
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	// Unqualified names are the dataset tables' (PostGIS's functions are
	// in public).
	cfg.RuntimeParams["search_path"] = schema + ", public"
	// Statements are described each time, never cached: a load replaces
	// a table, and a plan cached for the old one would fail once.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	return cfg, nil
}
