package replica

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file that this process has open already cannot be opened again in it
// with other settings (DuckDB's instance cache): OpenReader beside a
// Replica, or a Replica beside a Reader, is ErrLocked in words that say
// so and what to use, not DuckDB's "different configuration"; a second
// Replica is ErrLocked too.
func TestOpen_sameFileTwiceInOneProcessIsLocked(t *testing.T) {
	onlyInAFile(t, "one DuckDB per file in a process")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	path := filepath.Join(t.TempDir(), "r.duckdb")
	r := mustOpen(t, em, sub, path)
	mustSync(t, r)
	_, err := OpenReader(ctx, path, ReaderOptions{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || strings.Contains(err.Error(), "different configuration") || !strings.Contains(err.Error(), "ReadOnly()") {
		t.Fatalf("OpenReader beside the Replica in one process: %v, want ErrLocked naming ReadOnly()", err)
	}
	_, err = Open(ctx, path, Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("a second Replica of the file in one process: %v, want ErrLocked", err)
	}
	must(t, r.Close())

	rd, err := OpenReader(ctx, path, ReaderOptions{})
	must(t, err)
	defer rd.Close()
	_, err = Open(ctx, path, Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || strings.Contains(err.Error(), "different configuration") {
		t.Fatalf("a Replica beside a Reader in one process: %v, want ErrLocked", err)
	}
	var n int
	if err := rd.ReadOnly().QueryRowContext(ctx, "SELECT count(*) FROM _ploti.datasets").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the Reader's ReadOnly() counts %d datasets (%v), want 2", n, err)
	}
}
