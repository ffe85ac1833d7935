package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Run is a row of _ploti.sync_runs.
type Run struct {
	ID              int64      `json:"id"`
	StartedAt       time.Time  `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt,omitempty"`
	Result          string     `json:"result,omitempty"` // ok, failed, partial (some datasets failed), stopped
	Error           string     `json:"error,omitempty"`
	CursorFrom      string     `json:"cursorFrom,omitempty"`
	CursorTo        string     `json:"cursorTo,omitempty"`
	EventsSeen      int64      `json:"eventsSeen"`
	EventsApplied   int64      `json:"eventsApplied"`
	EventsSkipped   int64      `json:"eventsSkipped"`
	SnapshotsLoaded int64      `json:"snapshotsLoaded"`
	ChangesMerged   int64      `json:"changesMerged"`
}

// A sync's run row is written by the sync's first transaction, not by a
// commit of its own: StartRun only notes the start and marks the sync's
// context; the first transaction begun with that context inserts the row
// before its own statements, and the end updates the row, or inserts the
// whole row when no transaction of the sync wrote it. The start's own
// commit was a sync of the write-ahead log on every sync (3–7 ms on a
// DuckDB file, a round trip and a WAL flush on PostgreSQL). A sync that
// ends before its first commit (a crash) leaves no row; it had written
// nothing either. Nothing reads a run before it has ended (LastRun reads
// finished runs).
//
// Only the sync's own transactions write the row (its context carries
// the run): a caller's transaction while a sync runs (Advance,
// RecordInbox) does not. A generation tells a run from the one before, so
// that a transaction of an earlier sync committing late cannot lend its
// row to the next. One transaction at a time writes the row (pending):
// another begun meanwhile leaves it to the next.

// openRun is the current sync's run, whose row its first transaction writes.
type openRun struct {
	mu         sync.Mutex
	gen        uint64 // moved by every StartRun
	startedAt  time.Time
	cursorFrom string
	pending    bool  // a transaction begun holds the row, not yet committed
	id         int64 // the row's run_id once a commit wrote it; 0 before
}

// runKey marks a sync's context with its run's generation.
type runKey struct{ db *DB }

// runOf is the generation of the run ctx carries on db, if any; current
// tells whether it is the run started last. Call it with db.run.mu held.
func (db *DB) runOf(ctx context.Context) (gen uint64, current bool) {
	gen, ok := ctx.Value(runKey{db}).(uint64)
	return gen, ok && gen == db.run.gen
}

// StartRun notes the start of a sync and returns its context, whose
// transactions write the run's row (see openRun).
func (db *DB) StartRun(ctx context.Context, cursorFrom string) context.Context {
	db.run.mu.Lock()
	defer db.run.mu.Unlock()
	db.run.gen++
	db.run.startedAt, db.run.cursorFrom, db.run.pending, db.run.id = db.Now(), cursorFrom, false, 0
	return context.WithValue(ctx, runKey{db}, db.run.gen)
}

// writeRun inserts the sync's run row in a transaction of the sync that
// has just begun, when no commit wrote it and no other transaction holds
// it; its id is the run's once tx commits (endRun).
func (tx *Tx) writeRun(ctx context.Context) error {
	db := tx.db
	db.run.mu.Lock()
	gen, current := db.runOf(ctx)
	if !current || db.run.id != 0 || db.run.pending {
		db.run.mu.Unlock()
		return nil
	}
	db.run.pending = true
	at, from := db.run.startedAt, db.run.cursorFrom
	db.run.mu.Unlock()
	var id int64
	err := tx.tx.QueryRowContext(ctx, `INSERT INTO _ploti.sync_runs (started_at, cursor_from) VALUES (?, ?) RETURNING run_id`,
		at, nullStr(from)).Scan(&id)
	if err != nil {
		db.run.mu.Lock()
		if gen == db.run.gen {
			db.run.pending = false
		}
		db.run.mu.Unlock()
		return fmt.Errorf("record sync start: %w", err)
	}
	tx.runID, tx.runGen = id, gen
	return nil
}

// endRun ends tx's hold on the run's row: a commit keeps its id, a
// rollback (or a failed commit) leaves the row to the sync's next
// transaction or its end. A commit that failed after PostgreSQL committed
// would leave that row unfinished and the end would insert another: the
// rare case is not worth a read.
func (tx *Tx) endRun(committed bool) {
	if tx.runID == 0 {
		return // tx did not write the row
	}
	db := tx.db
	db.run.mu.Lock()
	defer db.run.mu.Unlock()
	if tx.runGen != db.run.gen {
		return // an earlier sync's transaction: its row is not this run's
	}
	db.run.pending = false
	if committed && db.run.id == 0 {
		db.run.id = tx.runID
	}
}

// FinishRun records how the sync of ctx (StartRun's) ended: it updates the
// run's row, or inserts the whole row when no transaction wrote it. r.ID
// is not read.
func (db *DB) FinishRun(ctx context.Context, r Run) error {
	db.run.mu.Lock()
	defer db.run.mu.Unlock()
	if _, current := db.runOf(ctx); !current {
		return errors.New("record sync end: not the sync started last")
	}
	if db.run.id != 0 {
		r.ID = db.run.id
		return finishRun(ctx, db.sql, db.Now(), r)
	}
	err := db.sql.QueryRowContext(ctx, `INSERT INTO _ploti.sync_runs (started_at, cursor_from, finished_at, result, error, cursor_to,
		events_seen, events_applied, events_skipped, snapshots_loaded, changes_merged) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING run_id`,
		db.run.startedAt, nullStr(db.run.cursorFrom), db.Now(), r.Result, nullStr(r.Error), nullStr(r.CursorTo),
		r.EventsSeen, r.EventsApplied, r.EventsSkipped, r.SnapshotsLoaded, r.ChangesMerged).Scan(&db.run.id)
	if err != nil {
		return fmt.Errorf("record sync end: %w", err)
	}
	return nil
}

// FinishRun records how the sync ended, in its transaction (begun with the
// sync's context), which wrote the run's row if no commit had. r.ID is not
// read.
func (tx *Tx) FinishRun(ctx context.Context, r Run) error {
	r.ID = tx.runID
	if r.ID == 0 {
		tx.db.run.mu.Lock()
		if _, current := tx.db.runOf(ctx); current {
			r.ID = tx.db.run.id
		}
		tx.db.run.mu.Unlock()
	}
	if r.ID == 0 {
		return errors.New("record sync end: the transaction is not the sync's, or the sync's row is held by another")
	}
	return finishRun(ctx, tx.tx, tx.db.Now(), r)
}

func finishRun(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, now time.Time, r Run) error {
	_, err := db.ExecContext(ctx, `UPDATE _ploti.sync_runs SET finished_at = ?, result = ?, error = ?, cursor_to = ?,
		events_seen = ?, events_applied = ?, events_skipped = ?, snapshots_loaded = ?, changes_merged = ? WHERE run_id = ?`,
		now, r.Result, nullStr(r.Error), nullStr(r.CursorTo), r.EventsSeen, r.EventsApplied, r.EventsSkipped,
		r.SnapshotsLoaded, r.ChangesMerged, r.ID)
	if err != nil {
		return fmt.Errorf("record sync end: %w", err)
	}
	return nil
}

// LastRun returns the newest finished sync run, or nil.
func (db *DB) LastRun(ctx context.Context) (*Run, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT run_id, started_at, finished_at, coalesce(result, ''), coalesce(error, ''),
		coalesce(cursor_from, ''), coalesce(cursor_to, ''), coalesce(events_seen, 0), coalesce(events_applied, 0),
		coalesce(events_skipped, 0), coalesce(snapshots_loaded, 0), coalesce(changes_merged, 0)
		FROM _ploti.sync_runs WHERE finished_at IS NOT NULL ORDER BY run_id DESC LIMIT 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var r Run
	err = rows.Scan(&r.ID, &r.StartedAt, &r.FinishedAt, &r.Result, &r.Error, &r.CursorFrom, &r.CursorTo, &r.EventsSeen,
		&r.EventsApplied, &r.EventsSkipped, &r.SnapshotsLoaded, &r.ChangesMerged)
	return &r, err
}

// LastSuccess is when the last sync that ended ok or partial finished; nil
// when none did.
func (db *DB) LastSuccess(ctx context.Context) (*time.Time, error) {
	var at sql.NullTime
	if err := db.sql.QueryRowContext(ctx, `SELECT max(finished_at) FROM _ploti.sync_runs WHERE result IN ('ok', 'partial')`).Scan(&at); err != nil {
		return nil, fmt.Errorf("last successful sync: %w", err)
	}
	if !at.Valid {
		return nil, nil
	}
	t := at.Time.UTC()
	return &t, nil
}
