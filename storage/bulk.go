package storage

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// FreeTableNames chooses a table name for each dataset id, as PutDataset
// does for one (the id's TableName, or with _2, _3 … when a dataset or a
// user's table or view has it), with one read of the registry and of
// the engine's tables and views (Dialect.TakenNamesSQL) for all of them. DuckDB lists its
// tables in time that grows with their number (70–190 ms at 5,000 tables),
// and a check per new dataset made a bootstrap quadratic. The names are
// free when read: a caller that creates the tables later uses
// CreateSnapshot, which refuses a name taken since.
func (db *DB) FreeTableNames(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT table_name FROM _ploti.datasets UNION ALL `+db.takenNamesSQL())
	if err != nil {
		return nil, fmt.Errorf("choose table names: %w", err)
	}
	defer rows.Close()
	taken := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("choose table names: %w", err)
		}
		taken[name] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("choose table names: %w", err)
	}
	for _, id := range ids {
		base := db.tableBase(id)
		name := base
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		taken[name] = true
		out[id] = name
	}
	return out, nil
}

// DeleteHoldsOf removes the holds of one kind, or of every kind (""), of
// the given datasets, in one statement.
func (tx *Tx) DeleteHoldsOf(ctx context.Context, ids []string, kind string) error {
	if len(ids) == 0 {
		return nil
	}
	q := "DELETE FROM _ploti.holds WHERE dataset_id IN (" + strings.Join(quoteAll(ids), ", ") + ")"
	if kind != "" {
		q += " AND kind = " + Literal(kind)
	}
	if _, err := tx.tx.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("release holds of %d datasets: %w", len(ids), err)
	}
	return nil
}

// EndHolds removes the holds that loading each dataset's version (loaded:
// dataset id → version) ends: its local hold (the review is over) and
// Ploti's holds on a version below the one loaded. Ploti's hold on the
// loaded version or a later one stays (feed-events.txt on
// feed.dataset.delayed: "version is the version you hold, which stays
// current meanwhile"): a repair that loads that version again does not
// end the wait for the next. It returns the reasons of the server holds
// that stay, by dataset, for the registry's status_reason.
func (tx *Tx) EndHolds(ctx context.Context, loaded map[string]int) (map[string]string, error) {
	if len(loaded) == 0 {
		return nil, nil
	}
	var vals, ids []string
	for id, v := range loaded {
		vals = append(vals, fmt.Sprintf("(%s, %d)", Literal(id), v))
		ids = append(ids, Literal(id))
	}
	sort.Strings(vals)
	q := "DELETE FROM _ploti.holds AS h USING (VALUES " + strings.Join(vals, ", ") + ") AS l(id, v) " +
		"WHERE h.dataset_id = l.id AND (h.kind <> " + Literal(HoldServer) + " OR coalesce(h.version, 0) < l.v)"
	if _, err := tx.tx.ExecContext(ctx, q); err != nil {
		return nil, fmt.Errorf("end holds of %d datasets: %w", len(loaded), err)
	}
	rows, err := tx.tx.QueryContext(ctx, "SELECT dataset_id, reason FROM _ploti.holds WHERE kind = "+Literal(HoldServer)+
		" AND dataset_id IN ("+strings.Join(ids, ", ")+")")
	if err != nil {
		return nil, fmt.Errorf("read holds that stay: %w", err)
	}
	defer rows.Close()
	stay := map[string]string{}
	for rows.Next() {
		var id, reason string
		if err := rows.Scan(&id, &reason); err != nil {
			return nil, fmt.Errorf("read holds that stay: %w", err)
		}
		stay[id] = reason
	}
	return stay, rows.Err()
}
