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
// commit of its own: StartRun only notes the start, the first transaction
// that begins after it inserts the row before its own statements, and the
// sync's end updates that row, or inserts the whole row when no
// transaction ran. Each commit of its own was a sync of the write-ahead
// log (3–4 ms on a DuckDB file, a round trip and a WAL flush on
// PostgreSQL), paid by every sync. A sync that ends before its first
// commit (a crash) leaves no row; it had written nothing either. Nothing
// reads a run before it has ended (LastRun reads finished runs).

// openRun is the sync's run whose row is written by its first transaction.
type openRun struct {
	mu         sync.Mutex
	started    bool
	startedAt  time.Time
	cursorFrom string
	id         int64 // the row's run_id once a commit wrote it; 0 before
}

// StartRun notes the start of a sync: the next transaction to begin
// writes its row (see openRun).
func (db *DB) StartRun(cursorFrom string) {
	db.run.mu.Lock()
	defer db.run.mu.Unlock()
	db.run.started, db.run.startedAt, db.run.cursorFrom, db.run.id = true, db.Now(), cursorFrom, 0
}

// writeRun inserts the started run's row in a transaction that has just
// begun, when no commit wrote it yet; its id is the run's once tx commits
// (ranRun).
func (tx *Tx) writeRun(ctx context.Context) error {
	db := tx.db
	db.run.mu.Lock()
	started, id, at, from := db.run.started, db.run.id, db.run.startedAt, db.run.cursorFrom
	db.run.mu.Unlock()
	if !started || id != 0 {
		return nil
	}
	err := tx.tx.QueryRowContext(ctx, `INSERT INTO _ploti.sync_runs (started_at, cursor_from) VALUES (?, ?) RETURNING run_id`,
		at, nullStr(from)).Scan(&tx.runID)
	if err != nil {
		return fmt.Errorf("record sync start: %w", err)
	}
	return nil
}

// ranRun keeps the run's id after tx's commit wrote its row.
func (tx *Tx) ranRun() {
	if tx.runID == 0 {
		return
	}
	tx.db.run.mu.Lock()
	defer tx.db.run.mu.Unlock()
	if tx.db.run.started && tx.db.run.id == 0 {
		tx.db.run.id = tx.runID
	}
}

// FinishRun records how the started sync ended: it updates the run's row,
// or inserts the whole row when no transaction wrote it. r.ID is not read.
func (db *DB) FinishRun(ctx context.Context, r Run) error {
	db.run.mu.Lock()
	defer db.run.mu.Unlock()
	if !db.run.started {
		return errors.New("record sync end: no sync started")
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

// FinishRun records how the started sync ended, in the transaction, whose
// beginning wrote the run's row if no commit had. r.ID is not read.
func (tx *Tx) FinishRun(ctx context.Context, r Run) error {
	r.ID = tx.runID
	if r.ID == 0 {
		tx.db.run.mu.Lock()
		r.ID = tx.db.run.id
		tx.db.run.mu.Unlock()
	}
	if r.ID == 0 {
		return errors.New("record sync end: no sync started")
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
