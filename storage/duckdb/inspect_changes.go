package duckdb

import (
	"context"
	"os"
	"sync"

	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// factCache keeps what InspectChanges read of changes files, for the merge
// that reads them next. An entry is for the file as it was (the same
// inode, size and modification time): a file written again under its
// name (a download replaces the file it repairs) is read again.
type factCache struct {
	mu sync.Mutex
	m  map[string]fileFacts
}

// factCacheMax bounds the entries: past it the cache starts again empty.
const factCacheMax = 256

// fileFacts are a changes file's columns and the DuckDB types they are
// read as.
type fileFacts struct {
	file  os.FileInfo // the file as read: its inode, size and modification time
	have  []string
	types map[string]string
}

// InspectChanges reads changes files' columns (their footers), on a
// connection of its own (not in any transaction: the files are read,
// never the tables), and keeps them for the merges that read the files
// next (MergeDeferred and MergeChanges check them against the schema),
// which then need not. The walk runs it for the next merges of a page
// while the page's transaction applies the ones before them (a
// small merge's probe was 2–2.5 ms of its time, with one core idle). It
// reads no rows: the counts of a page's files cost least in one read of
// them all (FinishMerged), a read of each file on its own cost 10 ms. A
// file it cannot read is left to the merge, which says what is wrong
// with it. Only the DuckDB file keeps them: another engine's merges read
// the files in their own way.
func (db *DB) InspectChanges(ctx context.Context, files []string) {
	if len(files) == 0 {
		return
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			continue
		}
		have, types, err := duckread.SourceColumns(ctx, db.sql, duckread.ParquetSource([]string{f}))
		if err != nil {
			continue
		}
		// Written again while it was read: its facts are of neither.
		if again, err := os.Stat(f); err != nil || !same(st, again) {
			continue
		}
		db.facts.put(f, fileFacts{file: st, have: have, types: types})
	}
}

// same reports whether two looks at a path saw the same file, unchanged.
func same(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

func (c *factCache) put(path string, f fileFacts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= factCacheMax {
		c.m = map[string]fileFacts{}
	}
	c.m[path] = f
}

// get returns the facts kept for the file at path as it is now.
func (c *factCache) get(path string) (fileFacts, bool) {
	c.mu.Lock()
	f, ok := c.m[path]
	c.mu.Unlock()
	if !ok {
		return f, false
	}
	st, err := os.Stat(path)
	if err != nil || !same(f.file, st) {
		return f, false
	}
	return f, true
}

// forget drops the facts of files read for good.
func (c *factCache) forget(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		delete(c.m, p)
	}
}
