package duckdb

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
)

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	db := mustOpen(t)
	replica := db.Path()
	db.Close()
	good, err := os.ReadFile(replica)
	if err != nil {
		t.Fatal(err)
	}
	newer := append([]byte(nil), good...)
	binary.LittleEndian.PutUint64(newer[12:20], 69)
	tests := []struct {
		name    string
		path    string
		exists  bool
		version uint64
		err     error
		says    string
	}{
		{"missing", filepath.Join(dir, "nope.duckdb"), false, 0, nil, ""},
		{"empty", write("empty", nil), false, 0, nil, ""},
		{"replica", replica, true, StorageV1_0, nil, ""},
		{"sqlite", write("app.db", append([]byte("SQLite format 3\x00"), make([]byte, 100)...)), true, 0, storage.ErrNotDuckDB, "(it is a SQLite database)"},
		{"text", write("notes.txt", []byte("hello there, this is text\n")), true, 0, storage.ErrNotDuckDB, `(it starts with "hello there, this is"`},
		{"short", write("short", []byte("DU")), true, 0, storage.ErrNotDuckDB, "not a DuckDB file"},
		{"parquet", write("x.parquet", append([]byte("PAR1"), make([]byte, 40)...)), true, 0, storage.ErrNotDuckDB, "(it is a Parquet file)"},
		{"newer storage", write("newer.duckdb", newer), true, 69, storage.ErrStorageVersion, "storage version 69"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := Inspect(tc.path)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %q should say %q", err, tc.says)
			}
			if info.Exists != tc.exists || info.StorageVersion != tc.version {
				t.Fatalf("info %+v, want exists %v version %d", info, tc.exists, tc.version)
			}
		})
	}
}

// A file that needs an extension made DuckDB download it.
func TestOpen_neverInstallsOrLoadsExtensions(t *testing.T) {
	db := mustOpen(t)
	defer db.Close()
	var install, load bool
	if err := db.SQL().QueryRow("SELECT current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')").Scan(&install, &load); err != nil {
		t.Fatal(err)
	}
	if install || load {
		t.Fatalf("autoinstall %v, autoload %v: want both off", install, load)
	}
	_, err := db.SQL().Exec("SELECT * FROM sqlite_scan('x.db', 't')")
	if err == nil || !strings.Contains(err.Error(), "sqlite") {
		t.Fatalf("a function of an extension not loaded should fail: %v", err)
	}
}

func TestOpen_noCreateAndReadOnlyNeedAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.duckdb")
	for _, opts := range []storage.Options{{NoCreate: true}, {ReadOnly: true}} {
		_, err := Open(context.Background(), path, opts)
		if !errors.Is(err, storage.ErrNoFile) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%+v: %v, want ErrNoFile", opts, err)
		}
		if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
			t.Fatalf("%+v created the file", opts)
		}
	}
}

func TestOpen_aMissingFolderIsNamedInWords(t *testing.T) {
	dir := t.TempDir()
	notAFolder := filepath.Join(dir, "notes.txt")
	os.WriteFile(notAFolder, []byte("notes\n"), 0o644)
	for path, want := range map[string]string{
		filepath.Join(dir, "none", "deeper", "replica.duckdb"): filepath.Join(dir, "none", "deeper") + " does not exist",
		filepath.Join(notAFolder, "replica.duckdb"):            notAFolder + " is a file, not a folder",
	} {
		_, err := Open(context.Background(), path, storage.Options{})
		if !errors.Is(err, storage.ErrNoFolder) || !strings.Contains(err.Error(), want) {
			t.Fatalf("open %s: %v, want ErrNoFolder saying %q", path, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("open made a folder")
	}
	db, err := Open(context.Background(), filepath.Join(dir, "here.duckdb"), storage.Options{})
	if err != nil {
		t.Fatalf("a file in a folder that exists: %v", err)
	}
	db.Close()
}
