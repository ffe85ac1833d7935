package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	ddb "github.com/duckdb/duckdb-go/v2"

	"github.com/ploti-replica/ploti-replica/storage"
)

// The file's read-only handle (storage.ReadOnlyQuerier). DuckDB opens a
// file once per process with one configuration: a second connector to it
// in READ_ONLY access mode fails while the writer's is open, and
// access_mode cannot change on an open database. So the handle's
// connections are the writer's own connector's (the same DuckDB), each
// query in a transaction begun READ ONLY, in which DuckDB refuses any
// write (nextval's too). A query is let through only when DuckDB's parser
// reads it as exactly one SELECT-like statement: duckdb-go runs every
// statement of a string but the last while it prepares it, so "COMMIT;
// DROP TABLE t" would leave the transaction before the last statement
// were looked at.

var _ storage.ReadOnlyQuerier = (*DB)(nil)

// roHandle is the file's read-only *sql.DB, made at the first ReadOnlySQL.
type roHandle struct {
	once sync.Once
	db   *sql.DB
	made atomic.Pointer[sql.DB] // db, once made: what Release must empty too
}

// handle is the read-only *sql.DB if it was asked for, else nil.
func (h *roHandle) handle() *sql.DB { return h.made.Load() }

// ReadOnlySQL is a handle on the file that sees the last committed state
// and cannot write: each query must be one SELECT-like statement (SELECT,
// WITH, FROM-first, VALUES, SHOW, DESCRIBE, SUMMARIZE, TABLE) and runs in
// a READ ONLY transaction of its own, until its rows close; BeginTx
// begins a READ ONLY transaction whatever its options say. Anything else
// is refused with an error that wraps storage.ErrReadOnly. It is closed
// with the file.
func (db *DB) ReadOnlySQL() *sql.DB {
	db.ro.once.Do(func() {
		db.ro.db = sql.OpenDB(roConnector{db.fc})
		db.ro.made.Store(db.ro.db)
	})
	return db.ro.db
}

// closeReadOnly closes the read-only handle before the connector it
// shares (one made now, never connected, is closed too: ReadOnlySQL
// after Close is a closed *sql.DB, not nil).
func (db *DB) closeReadOnly() error { return db.ReadOnlySQL().Close() }

// roConnector makes the handle's connections from the engine's connector.
// It has no Close: the engine closes the connector.
type roConnector struct{ inner *fileConnector }

func (c roConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &roConn{c: dc.(*ddb.Conn)}, nil
}

func (c roConnector) Driver() driver.Driver { return c.inner.Driver() }

// parseSQL reads a query with DuckDB's parser without running it:
// json_serialize_sql serializes SELECT statements only, and errors on
// anything else (a write, a transaction's statement, PRAGMA, ATTACH,
// EXPLAIN), and on a string of several statements when one is not a
// SELECT.
const parseSQL = `SELECT coalesce((j->>'error')::BOOLEAN, true), coalesce(j->>'error_type', ''),
	coalesce(j->>'error_message', ''), coalesce(json_array_length(j->'statements'), 0)::BIGINT
	FROM (SELECT json_serialize_sql(?::VARCHAR) AS j)`

// readsOnly refuses, with an error wrapping storage.ErrReadOnly, a query
// that DuckDB's parser does not read as exactly one SELECT-like
// statement; a syntax error is DuckDB's, as running the query would say.
// It runs the parse on c, once per query text (readQueries).
func readsOnly(ctx context.Context, c *ddb.Conn, q string) error {
	if readQueries.has(q) {
		return nil
	}
	if err := parseOne(ctx, c, q); err != nil {
		return err
	}
	readQueries.add(q)
	return nil
}

// readQueries are query texts the parser read as one SELECT-like
// statement, which it always will: a service asks the same few again and
// again, and the parse is a third of a small query's time.
var readQueries = queryCache{seen: map[string]struct{}{}}

// queryCache is a set of query texts, emptied when it reaches maxQueries.
type queryCache struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

const maxQueries = 1024

func (c *queryCache) has(q string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.seen[q]
	return ok
}

func (c *queryCache) add(q string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) >= maxQueries {
		clear(c.seen)
	}
	c.seen[q] = struct{}{}
}

// parseOne is readsOnly's parse.
func parseOne(ctx context.Context, c *ddb.Conn, q string) error {
	rows, err := c.QueryContext(ctx, parseSQL, []driver.NamedValue{{Ordinal: 1, Value: q}})
	if err != nil {
		return fmt.Errorf("read-only handle: parse the query: %w", err)
	}
	v := make([]driver.Value, 4)
	err = rows.Next(v)
	rows.Close()
	if err != nil {
		return fmt.Errorf("read-only handle: parse the query: %w", err)
	}
	failed, _ := v[0].(bool)
	kind, _ := v[1].(string)
	msg, _ := v[2].(string)
	n, _ := v[3].(int64)
	switch {
	case failed && kind == "parser":
		return fmt.Errorf("read-only handle: Parser Error: %s", msg)
	case failed:
		return fmt.Errorf("%w: only one SELECT-like statement per query: %s", storage.ErrReadOnly, refusedStatement(q))
	case n != 1:
		return fmt.Errorf("%w: only one SELECT-like statement per query: %d statements", storage.ErrReadOnly, n)
	}
	return nil
}

// selectLike are the first words of the statements json_serialize_sql
// reads.
var selectLike = map[string]bool{"SELECT": true, "WITH": true, "FROM": true, "VALUES": true, "SHOW": true,
	"DESCRIBE": true, "SUMMARIZE": true, "TABLE": true}

// refusedStatement names the first statement of q that is not SELECT-like
// by its first word ("CREATE …"), never the whole query: a guess at the
// statements' bounds (a ; in a string literal splits it too), for words.
func refusedStatement(q string) string {
	for _, s := range strings.Split(q, ";") {
		if w := firstWord(s); w != "" && !selectLike[w] {
			return w + " …"
		}
	}
	if w := firstWord(q); w != "" {
		return w + " …"
	}
	return "an empty query"
}

// firstWord is s's first word, upper-cased, past blanks, comments and
// opening parentheses.
func firstWord(s string) string {
	for {
		s = strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
		switch {
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s, "*/"); i >= 0 {
				s = s[i+2:]
				continue
			}
			return ""
		}
		end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '_' })
		if end < 0 {
			end = len(s)
		}
		return strings.ToUpper(s[:end])
	}
}

// readOnlyRE matches DuckDB's refusal of a write in a READ ONLY
// transaction ("transaction is launched in read-only mode").
var readOnlyRE = regexp.MustCompile(`(?i)read-only mode|read-only transaction`)

// readOnlyErr wraps storage.ErrReadOnly around DuckDB's refusal of a
// write in a read-only transaction; other errors come back as they are.
func readOnlyErr(err error) error {
	if err != nil && !errors.Is(err, storage.ErrReadOnly) && readOnlyRE.MatchString(err.Error()) {
		return fmt.Errorf("%w: %w", storage.ErrReadOnly, err)
	}
	return err
}

// beginReadOnly begins a READ ONLY transaction on c (duckdb-go's BeginTx
// refuses TxOptions.ReadOnly).
func beginReadOnly(ctx context.Context, c *ddb.Conn) error {
	if _, err := c.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY", nil); err != nil {
		return fmt.Errorf("read-only handle: begin: %w", err)
	}
	return nil
}

// endReadOnly commits (or rolls back) the transaction beginReadOnly
// began; a commit that fails is rolled back.
func endReadOnly(c *ddb.Conn, commit bool) error {
	ctx := context.Background() // the query's may be done: end it anyway
	if commit {
		_, err := c.ExecContext(ctx, "COMMIT", nil)
		if err == nil {
			return nil
		}
		_, rerr := c.ExecContext(ctx, "ROLLBACK", nil)
		return errors.Join(err, rerr)
	}
	_, err := c.ExecContext(ctx, "ROLLBACK", nil)
	return err
}
