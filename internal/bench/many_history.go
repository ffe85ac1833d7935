package bench

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
)

// The many-datasets section with --many-history: every dataset of the
// statewide subscription keeps history on the engine's side, so a user who
// turns it on sees what the bootstrap and the catch-up cost then. DuckDB
// alone keeps none, so no line of the section carries a target and only
// two summary keys are set, under names of their own.

// historyKeys are the summary keys a --many-history run sets, from the
// section's own keys.
var historyKeys = map[string]string{
	"many_events_per_s":    "many_history_events_per_s",
	"many_bootstrap_ratio": "many_history_bootstrap_ratio",
}

// historyLabel starts each line of a --many-history run.
const historyLabel = "(every dataset keeping history, `--history all`; DuckDB alone keeps none) "

// withManyHistory runs the section with the engine keeping history when
// the run asks for it, then marks the lines it added and moves its
// summary keys aside.
func (r *run) withManyHistory(section func() error) error {
	if !r.cfg.ManyHistory {
		return section()
	}
	saved, from, keys := r.eo, len(r.rep.Lines), r.rep.Summary
	r.eo.History = []string{replica.HistoryAll}
	r.rep.Summary = map[string]float64{}
	err := section()
	r.eo = saved
	for i := from; i < len(r.rep.Lines); i++ {
		l := &r.rep.Lines[i]
		l.What, l.Target, l.limit = historyLabel+l.What, "", 0
	}
	for k, v := range r.rep.Summary {
		if hk, ok := historyKeys[k]; ok {
			keys[hk] = v
		}
	}
	r.rep.Summary = keys
	return err
}

// checkHistoryRecorded checks, when the engine keeps history, that a
// catch-up into the file at path recorded the versions it brought: one a
// changes merge when exact (the log's every update merged), at least one
// otherwise (a catch-up under the rate limits reloads changed datasets
// from the manifest). The bootstrap records only each history's first.
func (r *run) checkHistoryRecorded(ctx context.Context, l *manyLogFixture, path string, exact bool) error {
	if len(r.eo.History) == 0 {
		return nil
	}
	var merges, reloads int
	err := withPlain(ctx, path, engineOpts{}, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE kind = ?), count(*) FILTER (WHERE kind = ?) FROM _ploti.history_versions`,
			storage.VersionMerge, storage.VersionReload).Scan(&merges, &reloads)
	})
	switch {
	case err != nil:
		return fmt.Errorf("read the history the catch-up recorded: %w", err)
	case exact && merges != l.updates:
		return fmt.Errorf("the catch-up recorded %d merges in the history, want %d: %w", merges, l.updates, errMismatch)
	case merges+reloads == 0:
		return fmt.Errorf("the catch-up recorded no version in the history: %w", errMismatch)
	}
	return nil
}
