package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Subscription is the _ploti.subscription row.
type Subscription struct {
	ID         string
	APIURL     string
	Cursor     string
	LastSyncAt *time.Time
}

func getSubscription(ctx context.Context, q Querier) (*Subscription, error) {
	var s Subscription
	var cursor sql.NullString
	err := q.QueryRowContext(ctx, "SELECT subscription_id, api_url, cursor, last_sync_at FROM _ploti.subscription LIMIT 1").
		Scan(&s.ID, &s.APIURL, &cursor, &s.LastSyncAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read subscription: %w", err)
	}
	s.Cursor = cursor.String
	return &s, nil
}

// Subscription reads the file's subscription row, or nil before the first sync.
func (db *DB) Subscription(ctx context.Context) (*Subscription, error) {
	return getSubscription(ctx, db.sql)
}

// Subscription reads the subscription row in the transaction.
func (tx *Tx) Subscription(ctx context.Context) (*Subscription, error) {
	return getSubscription(ctx, tx.tx)
}

// PutSubscription writes the file's one subscription row.
func (tx *Tx) PutSubscription(ctx context.Context, s *Subscription) error {
	if _, err := tx.tx.ExecContext(ctx, "DELETE FROM _ploti.subscription"); err != nil {
		return err
	}
	_, err := tx.tx.ExecContext(ctx, "INSERT INTO _ploti.subscription (subscription_id, api_url, cursor, last_sync_at) VALUES (?, ?, ?, ?)",
		s.ID, s.APIURL, nullStr(s.Cursor), s.LastSyncAt)
	if err != nil {
		return fmt.Errorf("write subscription %s: %w", s.ID, err)
	}
	return nil
}

// SetCursor stores the event cursor.
func (tx *Tx) SetCursor(ctx context.Context, cursor string) error {
	if _, err := tx.tx.ExecContext(ctx, "UPDATE _ploti.subscription SET cursor = ?", nullStr(cursor)); err != nil {
		return fmt.Errorf("store cursor: %w", err)
	}
	return nil
}

// SetAPIURL stores the API base URL the last successful sync used.
func (tx *Tx) SetAPIURL(ctx context.Context, apiURL string) error {
	if _, err := tx.tx.ExecContext(ctx, "UPDATE _ploti.subscription SET api_url = ?", apiURL); err != nil {
		return fmt.Errorf("store api url: %w", err)
	}
	return nil
}

// SetLastSync records when a sync last finished successfully.
func (tx *Tx) SetLastSync(ctx context.Context, at time.Time) error {
	_, err := tx.tx.ExecContext(ctx, "UPDATE _ploti.subscription SET last_sync_at = ?", at)
	return err
}
