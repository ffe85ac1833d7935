package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// commitLogKeep is how many commits _ploti.commit_log keeps.
const commitLogKeep = 1000

// chainCommit appends the transaction's link to _ploti.commit_log, inside
// it (see checkWAL). It reports the new row's seq.
func (tx *Tx) chainCommit() (int64, error) {
	var seq int64
	err := tx.tx.QueryRow(`INSERT INTO _ploti.commit_log
		SELECT coalesce(max(seq), 0) + 1, ?, arg_max(token, seq), ? FROM _ploti.commit_log RETURNING seq`,
		rand.Int64(), tx.Now).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("commit: log the commit: %w", err)
	}
	return seq, nil
}

// pruneCommitLog keeps the last commitLogKeep commits, best effort, in a
// statement of its own (two syncs' prunes must never make a commit fail).
func (db *DB) pruneCommitLog(seq int64) {
	if seq%commitLogKeep == 0 {
		db.sql.Exec("DELETE FROM _ploti.commit_log WHERE seq <= ?", seq-commitLogKeep)
	}
}

// commitLink is one row of _ploti.commit_log.
type commitLink struct{ token, prev int64 }

// checkWAL refuses a write-ahead log beside path that does not continue
// the file's last commit, before DuckDB replays it. DuckDB
// replays any log it finds beside a file; at storage v1.0.0 the log
// carries nothing that tells a crash's log from one of an older state. So
// the file is opened read-only twice through hard links, once without its
// log and once with it (DuckDB replays in memory and writes nothing), and
// every commit the log adds must follow the file's last commit or another
// commit of the log. A file that cannot be linked, or that has no commit
// log yet, is not checked.
func checkWAL(ctx context.Context, path string) error {
	removeLeftLinks(path)
	if _, err := os.Stat(path + ".wal"); err != nil {
		return nil
	}
	stem := fmt.Sprintf("%s.walcheck-%d-%d", path, os.Getpid(), rand.Uint32())
	base, full := stem+"-file", stem+"-log"
	defer func() {
		for _, p := range []string{base, full, full + ".wal"} {
			os.Remove(p)
		}
	}()
	if os.Link(path, base) != nil || os.Link(path, full) != nil || os.Link(path+".wal", full+".wal") != nil {
		return nil
	}
	before, head, ok, err := readCommitLog(ctx, base)
	if err != nil || !ok {
		return nil // the file's own open says what is wrong with it
	}
	after, _, _, err := readCommitLog(ctx, full)
	if err != nil {
		if d := asDamaged(path, err); d != nil {
			return &DamagedError{Path: path, Err: fmt.Errorf("replay %s.wal: %w", path, err)}
		}
		return nil
	}
	follows := map[int64]bool{head: true}
	for t := range after {
		if _, had := before[t]; !had {
			follows[t] = true
		}
	}
	for t, l := range after {
		if _, had := before[t]; !had && !follows[l.prev] {
			return &DamagedError{Path: path, Err: fmt.Errorf("%w: %s.wal holds commits that follow commit %s, not the file's last (%s): "+
				"a log of an older state of the file, which DuckDB would replay over it",
				storage.ErrStaleWAL, path, strconv.FormatInt(l.prev, 16), strconv.FormatInt(head, 16))}
		}
	}
	return nil
}

// removeLeftLinks removes the links a check killed midway left beside
// path: those of processes that are gone.
func removeLeftLinks(path string) {
	left, _ := filepath.Glob(path + ".walcheck-*")
	for _, l := range left {
		var pid int
		if _, err := fmt.Sscanf(l[len(path)+len(".walcheck-"):], "%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		if pid != os.Getpid() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.Remove(l)
		}
	}
}

// readCommitLog opens path read-only and reads its commit log: the links
// by token, and the last commit's token. ok is false when the file has no
// commit log (a file of an older build, or not a replica).
func readCommitLog(ctx context.Context, path string) (links map[int64]commitLink, head int64, ok bool, err error) {
	connector, err := duckread.NewConnector(path, storage.Options{ReadOnly: true})
	if err != nil {
		return nil, 0, false, err
	}
	db := sql.OpenDB(connector)
	defer func() {
		db.Close()
		connector.Close()
	}()
	var catalog string
	if err := db.QueryRowContext(ctx, "SELECT current_database()").Scan(&catalog); err != nil {
		return nil, 0, false, err
	}
	if ok, err := hasRelation(ctx, db, catalog, "_ploti", "commit_log"); err != nil || !ok {
		return nil, 0, false, err
	}
	rows, err := db.QueryContext(ctx, "SELECT token, coalesce(prev, 0), seq FROM _ploti.commit_log")
	if err != nil {
		return nil, 0, false, err
	}
	defer rows.Close()
	links = map[int64]commitLink{}
	var top int64 = -1
	for rows.Next() {
		var l commitLink
		var seq int64
		if err := rows.Scan(&l.token, &l.prev, &seq); err != nil {
			return nil, 0, false, err
		}
		links[l.token] = l
		if seq > top {
			top, head = seq, l.token
		}
	}
	return links, head, true, rows.Err()
}
