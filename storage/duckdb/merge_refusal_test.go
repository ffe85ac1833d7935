package duckdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// loadedPermits is a file holding the test snapshot as permits.
func loadedPermits(t *testing.T) *storage.DB {
	t.Helper()
	db := mustOpen(t)
	snap := mustParquet(t, db, snapQuery)
	bg := context.Background()
	if err := db.Update(bg, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(bg, "permits", testCols, []string{snap})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return db
}

// The refusal names its id through another pooled connection while the
// merge's transaction holds one: with the public handle limited to one
// connection (common DuckDB advice, and DB.SQL() is the user's handle), it
// must give up on the name, not wait until ctx ends (review finding).
func TestTx_MergeChanges_refusesWithOneConnection(t *testing.T) {
	db := loadedPermits(t)
	bg := context.Background()
	f := mustParquet(t, db, "SELECT 'removed' AS _ploti_change, * REPLACE ('zz' AS _ploti_record_id) FROM ("+snapQuery+") LIMIT 1")
	db.SQL().SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	start := time.Now()
	err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", testCols, f, -1)
		return err
	})
	if took := time.Since(start); took > 10*time.Second { // far below ctx's end, far above a busy machine's refusal
		t.Fatalf("refusal took %s (until ctx ended): %v", took.Round(time.Millisecond), err)
	}
	if !errors.Is(err, storage.ErrBadData) {
		t.Fatalf("err = %v", err)
	}
}

// A large merge whose counts cannot be read aside (the caller's pool of
// one connection) reads them in its own transaction, before its MERGE: a
// MERGE that refuses the file leaves DuckDB's transaction unusable, and
// the refusal must be the MERGE's words, not a failed read of the counts.
func TestTx_MergeChanges_largeWithOneConnectionRefusesInItsWords(t *testing.T) {
	db := loadedPermits(t)
	bg := context.Background()
	f := mustParquet(t, db, "SELECT 'added' AS _ploti_change, * FROM ("+snapQuery+") WHERE _ploti_record_id = 'r3'")
	db.SQL().SetMaxOpenConns(1)
	err := db.Update(bg, func(tx *storage.Tx) error {
		_, err := tx.Tables().MergeChanges(bg, "ds", 2, "permits", testCols, f, -1) // -1: unknown rows, a large merge
		return err
	})
	if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), "added id r3 is already held") {
		t.Fatalf("err = %v, want the refusal of added id r3", err)
	}
}

// Files in folders named like key=value (a spool under /data/env=prod/)
// load, merge and map ids as they are. DuckDB's read_parquet would
// otherwise take each folder for a hive partition: env becomes a new
// column, and a key that names one of the file's columns (permit, from_id)
// silently replaces its values.
func TestTx_FilesUnderKeyValueFolders(t *testing.T) {
	db := mustOpen(t)
	bg := context.Background()
	dir := filepath.Join(t.TempDir(), "env=prod", "permit=P-folder", "from_id=folder", "ploti.duckdb.spool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, query string) string {
		p := filepath.Join(dir, name)
		if _, err := db.SQL().Exec("COPY (" + query + ") TO " + storage.Literal(p) + " (FORMAT parquet)"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	snap := write("snap.parquet", snapQuery)
	changes := write("changes.parquet", "SELECT 'changed' AS _ploti_change, * FROM ("+snapQuery+") WHERE _ploti_record_id = 'r1'")
	idMap := write("idmap.parquet", "SELECT 'r2' AS from_id, 'r2-new' AS to_id")
	err := db.Update(bg, func(tx *storage.Tx) error {
		if _, err := tx.Tables().LoadSnapshot(bg, "permits", testCols, []string{snap}); err != nil {
			return err
		}
		if _, err := tx.Tables().MergeChanges(bg, "ds", 2, "permits", testCols, changes, -1); err != nil {
			return err
		}
		_, err := tx.Tables().ApplyIDMap(bg, "ds", 2, idMap, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var envCols, folderPermits, folderIDs int
	if err := db.SQL().QueryRow(`SELECT (SELECT count(*) FROM duckdb_columns() WHERE table_name = 'permits' AND column_name = 'env'),
		(SELECT count(*) FROM permits WHERE permit = 'P-folder'), (SELECT count(*) FROM _ploti.id_map WHERE from_id = 'folder')`).
		Scan(&envCols, &folderPermits, &folderIDs); err != nil {
		t.Fatal(err)
	}
	if envCols != 0 || folderPermits != 0 || folderIDs != 0 {
		t.Fatalf("read the folders as columns: env column %d, permits from the folder %d, id map rows from the folder %d", envCols, folderPermits, folderIDs)
	}
}
