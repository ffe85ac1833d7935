package duckdb

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The stamp of a file read back whole (damaged.go), kept in this process
// and in the user's cache folder, so that the next process to open the
// file need not read it whole again while nothing else has changed it.
// a measurement found the read at about 0.2 s per million rows on every
// `sync` and `status` run of the CLI when the stamp lived only in memory.
//
// A stamp is the file's device, inode, size, modification and change
// times, and its write-ahead log's size: any write to the file (a stray
// dd, a copy over it, DuckDB's own) changes them, and the change time
// cannot be set back by a user's tools. A copy of the file is another
// inode, and is read whole at its first open.

// fileStamp identifies one state of a file on disk.
type fileStamp struct {
	Dev, Ino         uint64
	Size, WALSize    int64
	ModNano, ChgNano int64
}

var readBack sync.Map // cleaned path → fileStamp

// storedStamp is a stamp as the cache folder keeps it: with the file's
// path, so that the stamps of files gone can be dropped (pruneReadBack).
type storedStamp struct {
	Path string `json:"path"`
	fileStamp
}

// stampOf is the path's stamp now; false when the file cannot be stat'ed.
func stampOf(path string) (fileStamp, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, false
	}
	s := fileStamp{Size: st.Size(), ModNano: st.ModTime().UnixNano(), WALSize: -1}
	s.Dev, s.Ino, s.ChgNano = sysStamp(st)
	if w, err := os.Stat(path + ".wal"); err == nil {
		s.WALSize = w.Size()
	}
	return s, true
}

// readBackKnown reports whether path was read back whole (or written by
// this engine, which closed it cleanly) in the state it is in now.
func readBackKnown(path string) bool {
	now, ok := stampOf(path)
	if !ok {
		return false
	}
	key := stampKey(path)
	if prev, seen := readBack.Load(key); seen {
		return prev.(fileStamp) == now
	}
	f := stampFile(key)
	if f == "" {
		return false
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return false
	}
	var prev storedStamp
	if json.Unmarshal(b, &prev) != nil || prev.fileStamp != now {
		return false
	}
	readBack.Store(key, prev.fileStamp)
	return true
}

// rememberReadBack records path's state now as one read back whole, in
// memory and, best effort, in the cache folder.
func rememberReadBack(path string) {
	now, ok := stampOf(path)
	if !ok {
		return
	}
	key := stampKey(path)
	readBack.Store(key, now)
	f := stampFile(key)
	if f == "" {
		return
	}
	b, _ := json.Marshal(storedStamp{Path: key, fileStamp: now})
	if os.MkdirAll(filepath.Dir(f), 0o700) != nil {
		return
	}
	tmp := f + tmpInfix + time.Now().Format("150405.000000000")
	if os.WriteFile(tmp, b, 0o600) == nil && os.Rename(tmp, f) == nil {
		if pruned.CompareAndSwap(false, true) {
			pruneReadBack(filepath.Dir(f), maxReadBack)
		}
		return
	}
	os.Remove(tmp)
}

// stampKey is the file's absolute path, symlinks followed where they
// resolve.
func stampKey(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// ReadBackDirEnv names the folder that keeps the stamps of files read back
// whole; empty: the user's cache folder, under ploti-replica/readback.
const ReadBackDirEnv = "PLOTI_READBACK_DIR"

// stampFile is where key's stamp is kept; "" when there is no cache folder.
func stampFile(key string) string {
	dir := os.Getenv(ReadBackDirEnv)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(cache, "ploti-replica", "readback")
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, hex.EncodeToString(sum[:16]))
}
