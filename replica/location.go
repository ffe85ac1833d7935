package replica

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// Where a replica is, and where what goes with it is kept. A replica is a
// DuckDB file (a path) or a PostgreSQL database (a postgres:// URL); what
// goes with a file is kept beside it, as <file><suffix>. A database is no
// path and has nothing beside it: what goes with it is a file named from
// its URL without the password (so that every process of the same
// database finds the same one, and no error quotes the password), in a
// folder of the machine's.

// IsDatabase tells whether where names a database (a postgres:// or
// postgresql:// URL) rather than a DuckDB file.
func IsDatabase(where string) bool { return backends.IsDatabase(where) }

// Name is where as logs, errors and output show it: a database's URL
// without its password, a file's path as it is.
func Name(where string) string { return backends.Name(where) }

// Exists tells whether where names something to read: a database (its
// open says whether it is there), or a file that exists.
func Exists(where string) bool {
	if IsDatabase(where) {
		return true
	}
	_, err := os.Stat(where)
	return err == nil
}

// FileExists tells whether a DuckDB file is at path, reading its first
// bytes: an error for what is there but is no DuckDB file this build
// reads (ErrNotDuckDB, ErrStorageVersion). A database URL is no file.
func FileExists(path string) (bool, error) {
	return backends.FileExists(path)
}

// BesidePath is where what goes with the replica at where is kept under
// suffix (".inbox", ".spool"): <file><suffix> beside a file; for a
// database, "ploti-replica-<hash of its name>"+suffix in dir, the hash
// keeping n bytes of the name's SHA-256.
func BesidePath(where, suffix, dir string, n int) string {
	if !IsDatabase(where) {
		return where + suffix
	}
	sum := sha256.Sum256([]byte(Name(where)))
	return filepath.Join(dir, "ploti-replica-"+hex.EncodeToString(sum[:n])+suffix)
}

// SpoolDir is the folder in which a sync of the replica at where keeps
// the files it downloads: <file>.spool beside a file, a folder of the
// system's temporary one for a database; under, when set
// (Options.SpoolDir), holds it instead.
func SpoolDir(where, under string) string {
	spool := BesidePath(where, ".spool", os.TempDir(), 6)
	if under != "" {
		spool = filepath.Join(under, filepath.Base(spool))
	}
	return spool
}

// InboxQueuePath is where serve queues the request events it receives for
// the replica at where until a sync records them (<file>.inbox beside a
// file); a database's queue is in the user's cache folder, else the
// working folder.
func InboxQueuePath(where string) string {
	dir, err := os.UserCacheDir()
	if err == nil {
		dir = filepath.Join(dir, "ploti-replica")
	}
	return BesidePath(where, ".inbox", dir, 8)
}

// SeenPath is where serve keeps the ids of the webhook deliveries it
// answered at a webhook (kind "" for the subscription's, "member" for the
// member's), so that a delivery repeated after a restart is known:
// <file>.seen or <file>.member.seen beside a file; a database's is in
// the user's cache folder, as its inbox queue.
func SeenPath(where, kind string) string {
	dir, err := os.UserCacheDir()
	if err == nil {
		dir = filepath.Join(dir, "ploti-replica")
	}
	suffix := ".seen"
	if kind != "" {
		suffix = "." + kind + suffix
	}
	return BesidePath(where, suffix, dir, 8)
}

// FilesOf lists what a DuckDB file at path is kept as: the file, its
// write-ahead log, its attachments folder and its status summary (what
// removing the replica removes). A database has none.
func FilesOf(path string) []string {
	if IsDatabase(path) {
		return nil
	}
	return []string{path, path + ".wal", path + ".attachments", backends.SummaryPath(path)}
}
