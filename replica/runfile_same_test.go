package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file deleted under RunFile between two syncs ends the run with
// ErrFileReplaced, and no new file is made in its place; so does a file
// replaced by another (moved over it), whether or not the file system
// gave it the deleted one's inode (its id in _ploti tells). Before, the
// next sync made a new file without a word.
func TestRunFile_aDeletedOrReplacedFileEndsTheRun(t *testing.T) {
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	opts := Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, Geometry: testGeometry, LockTimeout: 10 * time.Second}
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "feeds.duckdb")
			log := newSyncLog()
			signal := make(chan struct{}, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- RunFile(ctx, path, opts, RunOptions{Interval: -1, Signal: signal, OnSync: log.onSync})
			}()
			log.waitFor(t, "at start", movedTo("ds_permits", 1))
			must(t, os.Remove(path))
			if how == "replaced" {
				other := filepath.Join(t.TempDir(), "other.duckdb")
				r := mustOpen(t, em, sub, other)
				mustSync(t, r)
				must(t, r.Close())
				must(t, os.Rename(other, path))
			}
			signal <- struct{}{}
			select {
			case err := <-done:
				if !errors.Is(err, ErrFileReplaced) {
					t.Fatalf("RunFile after the file was %s: %v, want ErrFileReplaced", how, err)
				}
				t.Logf("%s: %v", how, err)
			case <-time.After(20 * time.Second):
				t.Fatalf("RunFile went on after the file was %s", how)
			}
			if _, err := os.Stat(path); (how == "deleted") != os.IsNotExist(err) {
				t.Fatalf("after the file was %s: stat %v", how, err)
			}
		})
	}
}
