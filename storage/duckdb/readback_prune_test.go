package duckdb

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The read-back cache keeps one stamp a file: a process drops the stamps
// of files that are gone once, after its first stamp is written, and
// keeps at most maxReadBack, the least recently written dropped first.
func TestReadBack_cacheIsPruned(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(ReadBackDirEnv, cache)
	files := t.TempDir()
	touch := func(name string) string {
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone, kept := touch("gone.duckdb"), touch("kept.duckdb")
	rememberReadBack(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	old := stampFile(stampKey(touch("old.duckdb")))
	noErr(t, os.WriteFile(old, []byte(`{"Dev":1,"Ino":2}`), 0o600)) // a stamp without its path
	crashed := filepath.Join(cache, "abc"+tmpInfix+"120000.000000000")
	noErr(t, os.WriteFile(crashed, nil, 0o600))
	noErr(t, os.Chtimes(crashed, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)))

	pruned.Store(false) // another process
	rememberReadBack(kept)
	for _, f := range []string{stampFile(stampKey(gone)), old, crashed} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s is still in the cache: %v", f, err)
		}
	}
	if _, err := os.Stat(stampFile(stampKey(kept))); err != nil {
		t.Fatalf("the stamp of a file that is there: %v", err)
	}

	start := time.Now().Add(-time.Hour)
	for i := range maxReadBack + 20 {
		p := touch(fmt.Sprintf("f%03d.duckdb", i))
		rememberReadBack(p)
		at := start.Add(time.Duration(i) * time.Second)
		noErr(t, os.Chtimes(stampFile(stampKey(p)), at, at))
	}
	pruneReadBack(cache, maxReadBack)
	ents, err := os.ReadDir(cache)
	noErr(t, err)
	if len(ents) != maxReadBack {
		t.Fatalf("%d stamps in the cache, want %d", len(ents), maxReadBack)
	}
	if _, err := os.Stat(stampFile(stampKey(filepath.Join(files, "f000.duckdb")))); !os.IsNotExist(err) {
		t.Fatalf("the least recently written stamp stayed: %v", err)
	}
}

func noErr(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
