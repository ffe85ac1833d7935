package duckdb

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// "the failed one is tried again": a file downloaded again under
// the same spool name (the repair after a bad download) is read afresh.
// DuckDB's external file cache served the bad file's bytes for the good one
// of the same path and size, so the repair failed with the old error.
func TestTx_LoadSnapshot_readsAReplacedFileAfresh(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	good := mustParquet(t, db, "SELECT 'r1' AS _ploti_record_id, 'fl' AS _ploti_place_id, 'P-1' AS permit")
	gb, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), gb...) // the footer's metadata spoiled, the framing kept
	n := len(bad)
	footer := int(uint32(bad[n-8]) | uint32(bad[n-7])<<8 | uint32(bad[n-6])<<16 | uint32(bad[n-5])<<24)
	for i := n - 8 - footer; i < n-8-footer/2; i++ {
		bad[i] = 0xfe
	}
	path := filepath.Join(t.TempDir(), "ds-v2-snapshot-0.parquet")
	cols := []ploti.Column{{Name: "permit", Type: ploti.Type{Type: ploti.TypeString}}}
	load := func(b []byte) error {
		t.Helper()
		// as fetch.Download and the replica do: .part, rename, read, remove
		if err := os.WriteFile(path+".part", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".part", path); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		return db.Update(ctx, func(tx *storage.Tx) error {
			_, err := tx.Tables().LoadSnapshot(ctx, "permits", cols, []string{path})
			return err
		})
	}
	if err := load(bad); err == nil {
		t.Fatal("a spoiled footer loaded")
	}
	if err := load(gb); err != nil {
		t.Fatalf("the good file under the same name: %v", err)
	}
}
