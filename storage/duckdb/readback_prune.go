package duckdb

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// The cache folder keeps one stamp a file ever opened: pruneReadBack
// bounds it, once a process (after its first stamp is written), so that
// years of files made and removed (a test suite, a replica per day) do
// not pile up in the user's cache.

// maxReadBack is how many stamps the cache folder keeps at most: a stamp
// dropped costs its file one whole read at its next open.
const maxReadBack = 256

// tmpInfix marks a stamp being written (rememberReadBack).
const tmpInfix = ".tmp"

// pruned is set once this process has pruned the cache folder.
var pruned atomic.Bool

// pruneReadBack drops, best effort, the stamps in dir of files that no
// longer exist (or that do not say which file they are: a stamp of an
// older version), temporary files a crash left (older than an hour), and
// then the least recently written stamps beyond max.
func pruneReadBack(dir string, max int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type kept struct {
		path string
		at   time.Time
	}
	var live []kept
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if strings.Contains(e.Name(), tmpInfix) {
			if time.Since(info.ModTime()) > time.Hour {
				os.Remove(p)
			}
			continue
		}
		if !stampOfLiveFile(p) {
			os.Remove(p)
			continue
		}
		live = append(live, kept{p, info.ModTime()})
	}
	if len(live) <= max {
		return
	}
	sort.Slice(live, func(i, j int) bool { return live[i].at.After(live[j].at) })
	for _, k := range live[max:] {
		os.Remove(k.path)
	}
}

// stampOfLiveFile reports whether the stamp file at p names a file that
// exists (or one that cannot be told gone: a stat failing otherwise).
func stampOfLiveFile(p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return true
	}
	var st storedStamp
	if json.Unmarshal(b, &st) != nil || st.Path == "" {
		return false
	}
	_, err = os.Stat(st.Path)
	return !errors.Is(err, os.ErrNotExist)
}
