package replica

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// A replica's label is a comment on its _ploti.subscription table: a tool
// that makes replicas of its own (the demo) labels them, to know later
// that one is its own to replace.

// SetLabel labels the replica at where, creating the DuckDB file (or the
// _ploti schema of a database) when there is none. It does not wait for
// another process's lock (ErrLocked).
func SetLabel(ctx context.Context, where, label string) error {
	db, err := backends.Open(ctx, where, storage.Options{LockTimeout: -1})
	if err != nil {
		return fmt.Errorf("label the replica in %s: %w", Name(where), err)
	}
	_, err = db.SQL().ExecContext(ctx, "COMMENT ON TABLE _ploti.subscription IS "+storage.Literal(label))
	return errors.Join(err, db.Close())
}

// Label reads the replica's label; "" when it has none.
func (r *Reader) Label(ctx context.Context) (string, error) {
	var label string
	err := r.db.SQL().QueryRowContext(ctx, r.db.Engine().LabelSQL()).Scan(&label)
	return label, err
}

// Remove deletes the replica at where: a DuckDB file with everything kept
// beside it (FilesOf); a database's dataset tables and its _ploti schema,
// in one transaction (the database itself stays). It does not wait for
// another process's lock (ErrLocked).
func Remove(ctx context.Context, where string) error {
	if !IsDatabase(where) {
		for _, p := range FilesOf(where) {
			if err := os.RemoveAll(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", p, err)
			}
		}
		return nil
	}
	db, err := backends.Open(ctx, where, storage.Options{LockTimeout: -1})
	if err != nil {
		return fmt.Errorf("remove the replica in %s: %w", Name(where), err)
	}
	defer db.Close()
	return db.Update(ctx, func(tx *storage.Tx) error {
		ds, err := tx.Datasets(ctx)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+storage.Ident(d.Table)); err != nil {
				return fmt.Errorf("remove %s: drop %s: %w", Name(where), d.Table, err)
			}
		}
		if _, err := tx.Exec(ctx, "DROP SCHEMA _ploti CASCADE"); err != nil {
			return fmt.Errorf("remove %s: drop schema _ploti: %w", Name(where), err)
		}
		return nil
	})
}
