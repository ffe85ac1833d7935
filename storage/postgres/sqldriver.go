package postgres

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"
)

// connector is pgx's database/sql connector with one difference: the
// statements of the engine-neutral registry (package storage) use ?
// placeholders, as DuckDB's driver does, and each becomes PostgreSQL's $n
// on its way in (placeholders).
type connector struct{ inner driver.Connector }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sqlConn{dc.(*stdlib.Conn)}, nil
}

func (c connector) Driver() driver.Driver { return c.inner.Driver() }

// sqlConn is a pgx database/sql connection whose statements may use ?.
type sqlConn struct{ *stdlib.Conn }

func (c *sqlConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, placeholders(q), withoutNUL(args))
}

func (c *sqlConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, placeholders(q), withoutNUL(args))
}

// withoutNUL is args with NUL replaced by U+FFFD in each string (nul.go):
// the registry's text from Ploti (a title, a column's description in the
// schema's JSON) goes to text and jsonb columns, which cannot hold it. A
// string that is a JSON object or array gets the JSON reading, its
// escaped NULs replaced too.
func withoutNUL(args []driver.NamedValue) []driver.NamedValue {
	var out []driver.NamedValue
	for i, a := range args {
		s, ok := a.Value.(string)
		if !ok || !hasNUL(s) {
			continue
		}
		if out == nil {
			out = append([]driver.NamedValue(nil), args...)
		}
		if (s[0] == '{' || s[0] == '[') && json.Valid([]byte(s)) {
			out[i].Value = string(appendJSONText(nil, s))
		} else {
			out[i].Value = string(appendText(nil, s))
		}
	}
	if out == nil {
		return args
	}
	return out
}

func (c *sqlConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, placeholders(q))
}

func (c *sqlConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

// placeholders numbers q's ? placeholders as $1, $2 … (a statement that
// already uses $n has none), leaving string literals, quoted names and
// comments as they are.
func placeholders(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c { // a doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
