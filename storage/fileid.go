package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
)

// FileID is the replica's own id, made at random the first time it is
// asked for and kept in _ploti.settings ('file_id'): a replica made anew
// in another's place (a file deleted and made again, another replica
// moved over it) has another id, even where the file system gives the
// new file the old one's inode. A copy of the file keeps it.
func (db *DB) FileID(ctx context.Context) (string, error) {
	var id string
	err := db.sql.QueryRowContext(ctx, "SELECT value FROM _ploti.settings WHERE name = 'file_id'").Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read the file's id: %w", err)
	}
	var b [16]byte
	rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	err = db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, "INSERT INTO _ploti.settings VALUES ('file_id', ?)", id)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("give the file an id: %w", err)
	}
	return id, nil
}
