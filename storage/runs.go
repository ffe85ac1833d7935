package storage

import (
	"context"
	"database/sql"
	"fmt"
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

// StartRun records the start of a sync and returns its id.
func (db *DB) StartRun(ctx context.Context, cursorFrom string) (int64, error) {
	var id int64
	err := db.sql.QueryRowContext(ctx, `INSERT INTO _ploti.sync_runs (started_at, cursor_from) VALUES (?, ?) RETURNING run_id`,
		db.Now(), nullStr(cursorFrom)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record sync start: %w", err)
	}
	return id, nil
}

// FinishRun records how a sync ended.
func (db *DB) FinishRun(ctx context.Context, r Run) error {
	return finishRun(ctx, db.sql, db.Now(), r)
}

// FinishRun records how a sync ended, in the transaction.
func (tx *Tx) FinishRun(ctx context.Context, r Run) error {
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
