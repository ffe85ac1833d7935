package duckdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ploti-replica/ploti-replica/storage"
)

// DuckDB's storage version numbers, as its main header records them
// (duckdb src/storage/storage_info.cpp; checked by writing files with
// ATTACH … (STORAGE_VERSION 'v1.N.0') under DuckDB 1.5.6).
const (
	// StorageV1_0 is what the engine writes: every DuckDB since 0.10,
	// and so every 1.x client, reads it.
	StorageV1_0 = 64
	// MaxStorageVersion is the newest storage this build's DuckDB reads.
	MaxStorageVersion = 68
)

// storageReaders names the oldest DuckDB release that reads each storage
// version DuckDB 1.x writes.
var storageReaders = map[uint64]string{64: "0.10", 65: "1.2", 66: "1.3", 67: "1.4", 68: "1.5"}

// storageNames are the names DuckDB gives its storage versions (ATTACH …
// (STORAGE_VERSION 'v1.0.0')), which its docs and the README use.
var storageNames = map[uint64]string{64: "v1.0.0", 65: "v1.2.0", 66: "v1.3.0", 67: "v1.4.0", 68: "v1.5.0"}

// StorageName is storage version v's name, "v1.0.0" for 64; "" when this
// build does not know it.
func StorageName(v uint64) string { return storageNames[v] }

// StorageReaders says which DuckDB clients can read a file of storage
// version v, in words: "DuckDB 0.10 and later".
func StorageReaders(v uint64) string {
	if r, ok := storageReaders[v]; ok {
		return "DuckDB " + r + " and later"
	}
	if v > MaxStorageVersion {
		return "a DuckDB newer than this build's " + DuckDBVersion
	}
	return "DuckDB older than 0.10 only"
}

// DuckDBVersion is the DuckDB release this build embeds.
const DuckDBVersion = "1.5.6"

// FileInfo is what the first bytes of a file say about it.
type FileInfo struct {
	// Exists is false when there is no file (or an empty one, which
	// DuckDB writes a new database into).
	Exists bool
	// StorageVersion is DuckDB's storage version number of the file.
	StorageVersion uint64
}

// duckMagic follows the main header's 8-byte checksum.
var duckMagic = []byte("DUCK")

// Inspect reads a file's DuckDB header without opening it with DuckDB: a
// file that is not DuckDB's (a SQLite file, text) is ErrNotDuckDB, and one
// written in a storage version this build cannot read is ErrStorageVersion,
// both in words, before DuckDB would answer with an extension download or a
// serialization error.
func Inspect(path string) (FileInfo, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return FileInfo{}, nil // no file; Open's CheckFolder names a missing folder
	}
	if pe := storage.AsPermission(err, path); pe != nil {
		return FileInfo{}, fmt.Errorf("open %s: %w", path, pe)
	}
	if err != nil {
		return FileInfo{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return FileInfo{}, fmt.Errorf("open %s: %w: it is a folder; name a file (a new one is created)", path, storage.ErrNotDuckDB)
	}
	head := make([]byte, 20)
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return FileInfo{}, nil
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return FileInfo{}, fmt.Errorf("read %s: %w", path, unwrapPath(err))
	case n < len(head) || !bytes.Equal(head[8:12], duckMagic):
		return FileInfo{Exists: true}, fmt.Errorf("open %s: %w%s", path, storage.ErrNotDuckDB, looksLike(head[:n]))
	}
	info := FileInfo{Exists: true, StorageVersion: binary.LittleEndian.Uint64(head[12:20])}
	if info.StorageVersion > MaxStorageVersion {
		return info, fmt.Errorf("open %s: %w: it has storage version %d, written by a DuckDB newer than the %s this build embeds, "+
			"which cannot read it (nor can any DuckDB 1.x client); only a fresh sync can rebuild it",
			path, storage.ErrStorageVersion, info.StorageVersion, DuckDBVersion)
	}
	return info, nil
}

// CheckFolder refuses, in words, a file path to create whose folder does
// not exist (or is not a folder), before DuckDB answers with its own "No
// such file or directory" for the file itself.
func CheckFolder(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("open %s: %w: %s does not exist; create it, or give a path in a folder that does", path, storage.ErrNoFolder, dir)
	case err != nil:
		return fmt.Errorf("open %s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("open %s: %w: %s is a file, not a folder", path, storage.ErrNoFolder, dir)
	}
	return nil
}

// looksLike names a few well-known file kinds from their first bytes.
func looksLike(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("SQLite format 3")):
		return " (it is a SQLite database)"
	case bytes.HasPrefix(head, []byte("PAR1")):
		return " (it is a Parquet file)"
	case len(head) > 0 && isText(head):
		return fmt.Sprintf(" (it starts with %q)", strings.TrimSpace(string(head)))
	}
	return ""
}

func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x09 || c > 0x7e && c < 0xa0 {
			return false
		}
	}
	return true
}

// unwrapPath is err without the path an *fs.PathError repeats, for a
// caller that names the path itself.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
