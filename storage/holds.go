package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Hold is a row of _ploti.holds.
type Hold struct {
	DatasetID string
	Version   int // 0: none (a dataset with no version yet)
	Kind      string
	Reason    string
	Since     *time.Time
	Detail    json.RawMessage
}

func listHolds(ctx context.Context, q Querier, datasetID string) ([]Hold, error) {
	if datasetID != "" {
		return queryHolds(ctx, q, " WHERE dataset_id = ?", datasetID)
	}
	return queryHolds(ctx, q, "")
}

func queryHolds(ctx context.Context, q Querier, where string, args ...any) ([]Hold, error) {
	query := "SELECT dataset_id, coalesce(version, 0), kind, reason, since, coalesce(detail::VARCHAR, '') FROM _ploti.holds" + where
	rows, err := q.QueryContext(ctx, query+" ORDER BY dataset_id, kind", args...)
	if err != nil {
		return nil, fmt.Errorf("list holds: %w", err)
	}
	defer rows.Close()
	var out []Hold
	for rows.Next() {
		var h Hold
		var detail string
		if err := rows.Scan(&h.DatasetID, &h.Version, &h.Kind, &h.Reason, &h.Since, &detail); err != nil {
			return nil, err
		}
		if detail != "" {
			// Compact: PostgreSQL's jsonb gives its own spacing.
			var b bytes.Buffer
			if json.Compact(&b, []byte(detail)) == nil {
				detail = b.String()
			}
			h.Detail = json.RawMessage(detail)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// Holds lists holds, of one dataset or (datasetID "") all.
func (db *DB) Holds(ctx context.Context, datasetID string) ([]Hold, error) {
	return listHolds(ctx, db.sql, datasetID)
}

// Holds lists holds in the transaction.
func (tx *Tx) Holds(ctx context.Context, datasetID string) ([]Hold, error) {
	return listHolds(ctx, tx.tx, datasetID)
}

// PutHold replaces the dataset's hold of the same kind.
func (tx *Tx) PutHold(ctx context.Context, h Hold) error {
	if err := tx.DeleteHolds(ctx, h.DatasetID, h.Kind); err != nil {
		return err
	}
	return tx.InsertHold(ctx, h)
}

// InsertHold adds a hold; the dataset must have none of its kind (PutHold
// replaces one).
func (tx *Tx) InsertHold(ctx context.Context, h Hold) error {
	var detail any
	if len(h.Detail) > 0 {
		detail = string(h.Detail)
	}
	_, err := tx.tx.ExecContext(ctx, "INSERT INTO _ploti.holds (dataset_id, version, kind, reason, since, detail) VALUES (?, ?, ?, ?, ?, ?)",
		h.DatasetID, nullInt(h.Version), h.Kind, h.Reason, h.Since, detail)
	if err != nil {
		return fmt.Errorf("hold %s (%s): %w", h.DatasetID, h.Kind, err)
	}
	return nil
}

// DeleteHolds removes a dataset's holds of one kind, or of every kind ("").
func (tx *Tx) DeleteHolds(ctx context.Context, datasetID, kind string) error {
	q, args := "DELETE FROM _ploti.holds WHERE dataset_id = ?", []any{datasetID}
	if kind != "" {
		q += " AND kind = ?"
		args = append(args, kind)
	}
	if _, err := tx.tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("release holds of %s: %w", datasetID, err)
	}
	return nil
}
