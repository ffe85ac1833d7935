package main

import (
	"fmt"
	"regexp"
	"time"

	"github.com/ploti-replica/ploti-replica/replica"
)

// readerOptions are the options of a command that reads the file: how
// long to wait for another process's lock (--lock-timeout), and the
// notice that says at once, on stderr, that it waits and for whom:
// nothing logs the wait itself, so without the notice it would sit
// silent for up to the whole timeout while a sync runs. The log
// (--log-level, --log-format), when the command takes it, hears what an
// open does on its own: a reader that moves marks opens a database as
// its writer.
func (c *connFlags) readerOptions(env *Env) (replica.ReaderOptions, error) {
	wait, err := c.lockWait()
	if err != nil {
		return replica.ReaderOptions{}, err
	}
	ro := replica.ReaderOptions{LockTimeout: wait, OnLocked: lockNotice(env, c.DB, wait)}
	if c.logFlags {
		if ro.Logger, err = c.logger(env.Stderr); err != nil {
			return replica.ReaderOptions{}, err
		}
	}
	return ro, nil
}

// lockNotice tells once on stderr that the command waits for the file and
// who holds it: "ploti-replica: waiting for feeds.duckdb: held by PID 4242
// (/usr/local/bin/ploti-replica); up to 30s (--lock-timeout)". nil when
// the command does not wait (wait < 0): its error says who held it.
func lockNotice(env *Env, db string, wait time.Duration) func(string) {
	if wait < 0 {
		return nil
	}
	if wait == 0 {
		wait = replica.DefaultLockTimeout
	}
	return func(msg string) {
		fmt.Fprintf(env.Stderr, "ploti-replica: waiting for %s: %s; up to %s (--lock-timeout)\n", replica.Name(db), lockHolderWords(msg), wait)
	}
}

// duckHolderRE is DuckDB's "Conflicting lock is held in PROGRAM (PID N)"
// ("held by" for a reader).
var duckHolderRE = regexp.MustCompile(`held (?:by|in) (.+?) \(PID (\d+)\)`)

// lockHolderWords is who holds the file, from the lock error's words.
func lockHolderWords(msg string) string {
	if m := duckHolderRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("held by PID %s (%s)", m[2], m[1])
	}
	return msg
}
