package duckdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

// mustRows counts a table's rows through db.
func mustRows(tb testing.TB, db *storage.DB, table string) int {
	tb.Helper()
	var n int
	if err := db.SQL().QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// "Dashboards beside a running sync": the published copy is a
// whole, checkpointed, read-only replica; it replaces the last one by a
// rename, so a reader that holds the old copy open keeps reading it (its
// inode) and a reader that opens the path again gets the new one.
func TestDB_Publish(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	dst := filepath.Join(t.TempDir(), "published.duckdb")
	if _, err := db.SQL().Exec("CREATE TABLE main.t AS SELECT range AS i FROM range(1000)"); err != nil {
		t.Fatal(err)
	}
	res, err := Of(db).Publish(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != fi.Size() || res.Path != dst {
		t.Fatalf("result %+v, the copy has %d bytes", res, fi.Size())
	}
	if got := fi.Mode().Perm(); got != 0o444 {
		t.Fatalf("the copy's mode is %v, want read-only", got)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".*publish-*")); len(left) > 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
	old, err := Open(ctx, dst, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := mustRows(t, old, "main.t"); got != 1000 {
		t.Fatalf("copy has %d rows, want 1000", got)
	}

	// The writer goes on (the WAL holds the commit) and publishes again.
	if _, err := db.SQL().Exec("INSERT INTO main.t SELECT range FROM range(5)"); err != nil {
		t.Fatal(err)
	}
	if _, err := Of(db).Publish(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if fi2, err := os.Stat(dst); err != nil || os.SameFile(fi, fi2) {
		t.Fatalf("the second copy is the first one's file, rewritten in place (%v): its readers would see it change under them", err)
	}
	if got := mustRows(t, old, "main.t"); got != 1000 {
		t.Fatalf("a reader holding the old copy sees %d rows, want its 1000", got)
	}
	// In this process DuckDB would hand out the instance already open on
	// the path: the new reader is another process, as a dashboard is.
	out, err := openInChild(t, dst, "SELECT count(*) FROM main.t")
	if err != nil || !strings.Contains(out, "answer: 1005\n") {
		t.Fatalf("a new reader of the path does not see 1005 rows: %v\n%s", err, out)
	}
}

func TestDB_Publish_refuses(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	dir := t.TempDir()
	walled := filepath.Join(dir, "walled.duckdb")
	if err := os.WriteFile(walled+".wal", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.duckdb")
	if err := os.Symlink(db.Path(), link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dst, says string }{
		{"the file itself", db.Path(), "it is the replica file itself"},
		{"a link to the file", link, "it is the replica file itself"},
		{"a copy with a WAL", walled, "walled.duckdb.wal exists"},
		{"a folder that is not there", filepath.Join(dir, "no", "such.duckdb"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Of(db).Publish(ctx, tc.dst)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want one saying %q", err, tc.says)
			}
		})
	}
	if _, err := os.Stat(walled); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused publish wrote %s: %v", walled, err)
	}
	db.Close()
	ro, err := Open(ctx, db.Path(), storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := Of(ro).Publish(ctx, filepath.Join(dir, "p.duckdb")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("publish from a read-only open: %v", err)
	}
}

// DuckDB's lock is an fcntl lock, which any close of the file in the
// process drops: Publish must keep the file it read open until Close, or
// another process could open the file while this one still holds it.
func TestDB_Publish_keepsTheLock(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	if _, err := Of(db).Publish(ctx, filepath.Join(t.TempDir(), "p.duckdb")); err != nil {
		t.Fatal(err)
	}
	if _, err := Of(db).Publish(ctx, filepath.Join(t.TempDir(), "p.duckdb")); err != nil {
		t.Fatal(err)
	}
	out, err := openInChild(t, db.Path(), "")
	if err == nil || !strings.Contains(out, "locked") {
		t.Fatalf("another process opened the file after Publish: %v\n%s", err, out)
	}
	db.Close()
	if out, err := openInChild(t, db.Path(), ""); err != nil {
		t.Fatalf("after Close another process cannot open the file: %v\n%s", err, out)
	}
}

// openInChild opens path read-only in a child process (this test binary)
// and, given a query, prints "answer: " and its one value.
func openInChild(t *testing.T, path, query string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpenReadOnly$", "-test.v")
	cmd.Env = append(os.Environ(), "PLOTI_TEST_OPEN="+path, "PLOTI_TEST_QUERY="+query)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHelperOpenReadOnly is openInChild's child.
func TestHelperOpenReadOnly(t *testing.T) {
	path := os.Getenv("PLOTI_TEST_OPEN")
	if path == "" {
		t.Skip("a helper for openInChild")
	}
	db, err := Open(context.Background(), path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if q := os.Getenv("PLOTI_TEST_QUERY"); q != "" {
		var v string
		if err := db.SQL().QueryRow(q).Scan(&v); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("answer: %s\n", v)
	}
}
