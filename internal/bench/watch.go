package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckdb"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// DefaultWatchRows is the size of the watched dataset (a 1M-row
// table).
const DefaultWatchRows = 1000000

// watchBenchID is the watched dataset of the watch section.
const watchBenchID = "ds_watched_permits"

// watchFixture is a watched permits dataset, a replica file that holds
// its first version, and its second: a recorded version of about 100 rows.
type watchFixture struct {
	em      *emulator.Emulator
	n       int64
	base    string // a closed replica file at the first version
	table   string
	changed int64    // rows the second version added, changed or removed
	rows    string   // the second version's rows as the engine spools them (NDJSON)
	ids     []string // the ids of the rows it added and changed
	gone    []string // the held ids it changed or removed
}

// watches measures a watched dataset's whole read through rows (rows a
// second, end to end on loopback) and a recorded version of about 100 rows
// merged into a 1M-row table against DuckDB alone applying the same rows.
func (r *run) watches(ctx context.Context) error {
	if !r.want("watch") {
		return nil
	}
	em, err := r.newEmulator("emulator-watch", emulator.Options{})
	if err != nil {
		return err
	}
	defer closeEmulator(em)
	f := &watchFixture{em: em, n: r.cfg.WatchRows}
	if err := em.AddDataset(emulator.DatasetSpec{ID: watchBenchID, Title: "Watched permits", PlaceID: "fl-orange",
		KeyColumns: permitKey, Columns: permitColumns}); err != nil {
		return err
	}
	if _, err := em.PublishQuery(ctx, watchBenchID, permitsSQL(f.n, nil)); err != nil {
		return err
	}
	if _, err := em.Watch(watchBenchID); err != nil {
		return err
	}
	if err := r.wholeReads(ctx, f); err != nil {
		return err
	}
	defer removeDB(f.base)
	if err := r.publishWatchUpdate(ctx, f); err != nil {
		return err
	}
	return r.watchMerges(ctx, f)
}

// wholeReads reads the dataset whole into fresh files, Config.Repeat times;
// the last file is the fixture's base.
func (r *run) wholeReads(ctx context.Context, f *watchFixture) error {
	var total, api, duck Costs
	var rate Quantity
	for i := range r.cfg.Repeat {
		p := r.path("watch-read")
		run, err := watchSync(ctx, f.em, p, r.eo)
		if err != nil {
			return err
		}
		if run.Result.WatchReloads != 1 {
			return fmt.Errorf("whole read: %+v: %w", run.Result, errMismatch)
		}
		total.Add(run.Total)
		api.Add(run.API)
		duck.Add(run.Engine())
		rate.Add(float64(f.n) / run.Total.Wall.Seconds())
		r.logf("watch whole read, run %d: %s rows in %s (rows pages %s, DuckDB %s)", i+1, rows(f.n), secs(run.Total.Wall), secs(run.API.Wall), secs(run.Engine().Wall))
		if i < r.cfg.Repeat-1 {
			removeDB(p)
		} else {
			f.base = p
		}
	}
	perSec := rate.Median()
	r.rep.target(Line{What: "4a. watched dataset read whole through rows (1,000 rows a page, JSON to DuckDB by read_json)", Size: rows(f.n) + " rows",
		Engine: total.String(), Versus: "rows a second, end to end on loopback: " + rate.Format(func(v float64) string { return fmt.Sprintf("%.0f", v) }),
		Ratio: perSec}, 100000, false)
	r.rep.add(Line{What: "4a. of which the rows pages (HTTP, the emulator, JSON decoding, spooling)", Size: rows(f.n) + " rows", Engine: api.String(), Ratio: math.NaN()})
	r.rep.add(Line{What: "4a. of which DuckDB (read_json, casts, GeoJSON to GEOMETRY, id checks, commit)", Size: rows(f.n) + " rows", Engine: duck.String(), Ratio: math.NaN()})
	r.rep.Summary["watch_rows_per_s"] = perSec
	var err error
	f.table, err = baseTable(ctx, f.base)
	return err
}

// baseTable is the watched dataset's table name in a replica file.
func baseTable(ctx context.Context, path string) (string, error) {
	db, err := duckdb.Open(ctx, path, storage.Options{ReadOnly: true})
	if err != nil {
		return "", err
	}
	defer db.Close()
	d, err := db.Dataset(ctx, watchBenchID)
	if err != nil {
		return "", err
	}
	return d.Table, nil
}

// publishWatchUpdate releases a version of about 100 changed rows (a half
// changed, a quarter added, a quarter removed), checks that the watch side
// recorded it, and spools its changes as the engine does, for DuckDB alone.
func (r *run) publishWatchUpdate(ctx context.Context, f *watchFixture) error {
	rel, err := f.em.PublishQuery(ctx, watchBenchID, permitsSQL(f.n, []churn{{100 / float64(f.n)}}))
	if err != nil {
		return err
	}
	pvs := f.em.PlotiVersions(watchBenchID)
	last := pvs[len(pvs)-1]
	if rel.ResyncRequired || rel.Held || last.ChangeLog != emulator.ChangeLogRecorded {
		return fmt.Errorf("the update is %s (feed: resync %v, held %v): %w", last.ChangeLog, rel.ResyncRequired, rel.Held, errMismatch)
	}
	f.changed = last.Added + last.Changed + last.Removed
	client, err := fetch.New(fetch.Options{BaseURL: f.em.URL(), APIKey: f.em.APIKey(), SpoolDir: filepath.Join(r.dir, "watch-raw-spool"), DisableRateLimit: true})
	if err != nil {
		return err
	}
	cs, err := client.SpoolChanges(ctx, watchBenchID, last.Version, "raw-changes.ndjson")
	if err != nil {
		return err
	}
	f.rows = cs.Path
	for _, ch := range cs.Changes {
		switch ch.Change {
		case ploti.ChangeAdded:
			f.ids = append(f.ids, ch.RecordID)
		case ploti.ChangeChanged:
			f.ids = append(f.ids, ch.RecordID)
			f.gone = append(f.gone, ch.RecordID)
		case ploti.ChangeRemoved:
			f.gone = append(f.gone, ch.RecordID)
		default:
			return fmt.Errorf("the update lists a %s: %w", ch.Change, errMismatch)
		}
	}
	r.logf("watch update: Ploti version %d, %d rows (%d added or changed, %d deleted)", last.Version, f.changed, len(f.ids), len(f.gone))
	return nil
}

// watchMerges merges the update into copies of the base file: "engine" by
// a watch sync (its time without the API calls, which come back apart),
// "duckdb" by DuckDB alone's DELETE and INSERT of the same rows, from the
// same NDJSON file, in one transaction.
func (r *run) watchMerges(ctx context.Context, f *watchFixture) error {
	cols := make([]ploti.Column, len(permitColumns))
	for i, c := range permitColumns {
		cols[i] = ploti.Column{Name: c.Name, Type: ploti.Type{Type: c.Type}}
		if c.Precision != nil {
			cols[i].Precision = &ploti.Precision{Precision: c.Precision.Precision, Scale: c.Precision.Scale}
		}
	}
	insert, err := duckread.RawJSONRows([]string{f.rows}, cols, "")
	if err != nil {
		return err
	}
	var eng, raw, api Costs
	for i := range r.cfg.Repeat {
		kinds := []string{"engine", "duckdb"}
		if i%2 == 1 {
			slices.Reverse(kinds)
		}
		for _, kind := range kinds {
			p := r.path("watch-merge-" + kind)
			if err := copyDB(f.base, p); err != nil {
				return err
			}
			if kind == "engine" {
				// The file is read back whole once per process before its
				// first write (the read-back check, decision 31): that is not
				// the merge's, and this process reads it here, untimed.
				if err := readOnce(ctx, p); err != nil {
					return err
				}
				run, err := watchSync(ctx, f.em, p, r.eo)
				if err != nil {
					return err
				}
				if run.Result.WatchMerges != 1 {
					return fmt.Errorf("watch merge: %+v: %w", run.Result, errMismatch)
				}
				eng.Add(run.Engine())
				api.Add(run.API)
			} else {
				d, err := rawWatchMerge(ctx, p, f.table, f.gone, insert, r.eo)
				if err != nil {
					return err
				}
				raw.Add(d)
			}
			removeDB(p)
		}
		r.logf("watch merge, run %d: engine %s (+ API calls %s), DuckDB alone %s", i+1, secs(eng.Wall.Runs[i]), secs(api.Wall.Runs[i]), secs(raw.Wall.Runs[i]))
	}
	ratio, cpu := ratios(eng, raw)
	size := fmt.Sprintf("%d rows on a %s-row table", f.changed, rows(f.n))
	r.rep.target(Line{What: "4b. recorded watch version merged (its changes' rows, by id)", Size: size, Engine: eng.String(),
		Versus: "DuckDB alone, DELETE and INSERT from the same NDJSON: " + raw.String(), Ratio: ratio, CPURatio: cpu}, 1.5, true)
	r.rep.add(Line{What: "4b. API calls of that merge (watches, dataset, changes; reported apart)", Size: "3 calls", Engine: api.Wall.String(), Ratio: math.NaN()})
	r.rep.Summary["watch_merge_vs_raw"] = ratio
	return nil
}

// rawWatchMerge is DuckDB alone applying a version's rows: the held ids it
// changed or removed deleted, its rows inserted, one transaction, then the
// file closed (a checkpoint, as the engine's sync closes its file).
func rawWatchMerge(ctx context.Context, path, table string, gone []string, insert string, eo engineOpts) (cost, error) {
	settle()
	stop := startWatch()
	err := withPlain(ctx, path, eo, func(db *sql.DB) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		t := "main." + storage.Ident(table)
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+t+" WHERE _ploti_record_id IN (SELECT unnest(?::VARCHAR[]))", gone); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+t+" "+insert); err != nil {
			return err
		}
		return tx.Commit()
	})
	return stop(), err
}

// readOnce opens and closes a replica file, which reads it back whole
// once in this process (duckdb.Open's check of a file it has not seen).
func readOnce(ctx context.Context, path string) error {
	db, err := duckdb.Open(ctx, path, storage.Options{})
	if err != nil {
		return err
	}
	return db.Close()
}
