package replica

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// ErrFileReplaced means RunFile found no file at its path, or another
// file, where an earlier sync of the run opened one: it was deleted or
// replaced under the running replica. Run stops rather than make a new
// file (or sync into another) in its place without a word: start it
// again to build a new one, or keep the one now there.
var ErrFileReplaced = errors.New("the file was deleted or replaced since the last sync")

// sameFile follows the DuckDB file RunFile syncs: the file each sync
// opens must be the one the run's first sync opened (its device and
// inode, and its id in _ploti: a new file may get a deleted one's inode),
// so that what the daemon around it hands to a sync (request events from
// its queue) goes into the file it was meant for, not one deleted, or
// made anew, meanwhile. A database has no file to follow.
type sameFile struct {
	path string
	last os.FileInfo // the file the last sync opened; nil before one
	id   string      // its storage.DB.FileID
}

func newSameFile(path string) *sameFile {
	if IsDatabase(path) {
		return nil
	}
	return &sameFile{path: path}
}

// options are o for the next sync's Open: once a sync opened the file,
// Open must not create one (a file missing then was deleted).
func (s *sameFile) options(o Options) Options {
	if s != nil && s.last != nil {
		o.NoCreate = true
	}
	return o
}

// openFailed words Open's err: no file where a sync opened one before is
// ErrFileReplaced.
func (s *sameFile) openFailed(err error) error {
	if s != nil && s.last != nil && errors.Is(err, ErrNoFile) {
		return fmt.Errorf("sync %s: the file was deleted since the last sync; the run stops rather than make a new one (start it again to build one): %w",
			s.path, ErrFileReplaced)
	}
	return err
}

// opened checks, with r open on the file, that it is the one the last
// sync opened, and remembers it for the next.
func (s *sameFile) opened(ctx context.Context, r *Replica) error {
	if s == nil {
		return nil
	}
	st, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("sync %s: the file opened is not at its path any more: %w: %w", s.path, ErrFileReplaced, err)
	}
	id, err := r.db.FileID(ctx)
	if err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	if s.last != nil && (!os.SameFile(s.last, st) || id != s.id) {
		return fmt.Errorf("sync %s: another file is at the path than the one the last sync wrote (copied or moved over it); "+
			"the run stops rather than sync into it (start it again to keep the file now there): %w", s.path, ErrFileReplaced)
	}
	s.last, s.id = st, id
	return nil
}
