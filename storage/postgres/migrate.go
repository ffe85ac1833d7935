package postgres

import (
	"context"
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ploti-replica/ploti-replica/storage"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded file: its number is the DuckDB migration
// whose _ploti it brings the database to.
type migration struct {
	version int
	name    string
}

func migrations() ([]migration, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: no number", e.Name())
		}
		ms = append(ms, migration{v, e.Name()})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// MigrationVersion is the newest migration this build knows: the same
// number as the DuckDB file's (the DuckDB engine's MigrationVersion) for
// the same _ploti tables, as storage/backends' tests check.
func MigrationVersion() int {
	ms, _ := migrations()
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies the embedded migrations not yet applied, each in a
// transaction with its row in _ploti.schema_migrations.
func (db *DB) migrate(ctx context.Context) error {
	// One round trip: the schemas and the table made if missing, and the
	// version read.
	results, err := batch(ctx, db.conn, "CREATE SCHEMA IF NOT EXISTS "+ident(db.schema), "CREATE SCHEMA IF NOT EXISTS _ploti",
		"CREATE TABLE IF NOT EXISTS _ploti.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)",
		"SELECT coalesce(max(version), 0) FROM _ploti.schema_migrations")
	if err != nil {
		if pgError(err) != nil && len(results) == 0 {
			return fmt.Errorf("open %s: create schema %s: %w", db.name, db.schema, err)
		}
		return fmt.Errorf("migrate %s: %w", db.name, err)
	}
	row, err := firstRow(results, 3)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", db.name, err)
	}
	n, err := row[0].int64()
	if err != nil {
		return fmt.Errorf("migrate %s: %w", db.name, err)
	}
	have := int(n)
	ms, err := migrations()
	if err != nil {
		return err
	}
	if want := MigrationVersion(); have > want {
		return fmt.Errorf("open %s: database at migration %d, this build knows %d: %w", db.name, have, want, storage.ErrNewerFile)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		body, err := migrationFS.ReadFile("migrations/" + m.name)
		if err != nil {
			return err
		}
		tx, err := db.conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, string(body)); err != nil {
			tx.Rollback(ctx)
			return fmt.Errorf("migrate %s to %d (%s): %w", db.name, m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO _ploti.schema_migrations VALUES ($1, $2)", m.version, db.Now()); err != nil {
			tx.Rollback(ctx)
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("migrate %s to %d: %w", db.name, m.version, err)
		}
	}
	return nil
}
