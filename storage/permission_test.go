package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DuckDB's refusals are worded with the path and what to do: a refused
// write-ahead log names the folder, a refused new file its folder, and
// both match ErrPermission and fs.ErrPermission.
func TestAsPermission_wordsDuckDBsRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.duckdb")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "new.duckdb")
	for _, tc := range []struct {
		duck, db, want string
	}{
		{`TransactionContext Error: Failed to commit: Cannot open file "` + file + `.wal": Permission denied`, file,
			"the folder " + dir + " is read-only to this process"},
		{`IO Error: Cannot open file "` + fresh + `": Permission denied`, fresh, "cannot create " + fresh + ": the folder " + dir},
		{`IO Error: Cannot open file "` + file + `": Permission denied`, file, file + " is read-only to this process"},
	} {
		pe := AsPermission(errors.New(tc.duck), tc.db)
		if pe == nil || !strings.Contains(pe.Error(), tc.want) || strings.Contains(pe.Error(), "Error:") ||
			!errors.Is(pe, ErrPermission) || !errors.Is(pe, fs.ErrPermission) {
			t.Errorf("%s: %v; want it worded %q", tc.duck, pe, tc.want)
		}
	}
	if AsPermission(errors.New("IO Error: something else"), file) != nil {
		t.Error("an error that is not a refusal was taken for one")
	}
}
