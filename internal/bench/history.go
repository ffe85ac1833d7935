package bench

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
)

// historyMerge measures history's cost: from a file at the
// dataset's version, a 1% merge with --history on against the same merge
// from a file without history (each file read back whole first, untimed,
// as the engine's previous sync leaves it), the whole read apart, and how
// much each version grows the file.
// The file with history is bootstrapped here, so its history starts at
// the version it loads (a copy of the whole table).
func (r *run) historyMerge(ctx context.Context, b *bigDataset) error {
	heo := r.eo
	heo.History = []string{replica.HistoryAll}
	// The dataset is at b.version, which earlier sections (the merges) may
	// have moved past the first: its rows are those of b.engine's table,
	// not b.n.
	held, err := tableRows(ctx, b.engine, b.table)
	if err != nil {
		return err
	}
	base := r.path("history-base")
	r.logf("history: bootstrapping %s with --history all", b.id)
	boot, err := engineSync(ctx, b.em, b.sub, base, heo)
	if err != nil {
		return err
	}
	if err := checkHistory(ctx, base, b.table, held, 0); err != nil {
		return err
	}
	r.rep.note("history: a bootstrap of %s rows with --history all took %s (the history starts as a copy of the table); the file %s against %s without",
		rows(held), secs(boot.Engine().Wall), mib(float64(fileSize(base))), mib(float64(fileSize(b.engine))))
	st, err := r.nextVersion(ctx, b, 0.01)
	if err != nil {
		return err
	}
	var c historyCosts
	var nextOn, nextOff string
	for i := range r.cfg.Repeat {
		wp, np, err := r.historyRun(ctx, b, st, heo, base, i, &c)
		if err != nil {
			return err
		}
		if i < r.cfg.Repeat-1 {
			removeDB(wp)
			removeDB(np)
		} else {
			nextOn, nextOff = wp, np
		}
	}
	for _, p := range []string{nextOn, nextOff} {
		if err := checkRows(ctx, p, b.table, st.rel.RowCount); err != nil {
			return err
		}
	}
	if err := checkHistory(ctx, nextOn, b.table, held+st.rel.Added+st.rel.Changed, st.rel.Changed+st.rel.Removed); err != nil {
		return err
	}
	removeDB(base)
	removeDB(nextOn)
	removeDB(b.engine)
	b.engine, b.version = nextOff, st.rel.Version
	r.reportHistory(fmt.Sprintf("1%% of %s rows: +%d ~%d −%d", rows(b.n), st.rel.Added, st.rel.Changed, st.rel.Removed), held, &c)
	return nil
}

// historyCosts are the history section's measures over the repeats: the
// engine with history and without, DuckDB alone keeping the same history
// and without, the whole reads, the files' growth.
type historyCosts struct {
	on, off, rawOn, rawOff, readOn, readOff Costs
	growOn, growOff                         []float64
}

// historyRun is run i: copies of the file with history (base) and of the
// one without (b.engine), each read whole, then merged; it returns the
// two files after the merge.
func (r *run) historyRun(ctx context.Context, b *bigDataset, st *mergeStep, heo engineOpts, base string, i int, c *historyCosts) (wp, np string, err error) {
	wp, np = r.path("history-on"), r.path("history-off")
	for _, cp := range [][2]string{{base, wp}, {b.engine, np}} {
		if err := copyDB(cp[0], cp[1]); err != nil {
			return "", "", err
		}
	}
	steps := []struct {
		path string
		eo   engineOpts
		into *Costs
		grow *[]float64
		from string
		read *Costs
	}{{wp, heo, &c.on, &c.growOn, base, &c.readOn}, {np, r.eo, &c.off, &c.growOff, b.engine, &c.readOff}}
	if i%2 == 1 {
		slices.Reverse(steps)
	}
	for _, s := range steps {
		// The open reads a file it has not seen whole, once per state
		// of the file (decision 31); the engine's own close records
		// the state it leaves, so a sync after a sync skips it. The
		// copy is read here, apart: the history doubles that read.
		settle()
		stop := startWatch()
		if err := readOnce(ctx, s.path); err != nil {
			return "", "", err
		}
		s.read.Add(stop())
		run, err := engineSync(ctx, b.em, b.sub, s.path, s.eo)
		if err == nil && (run.Result.ChangesMerged != 1 || run.Result.SnapshotsLoaded != 0) {
			err = fmt.Errorf("sync of version %d merged %d and loaded %d, want one merge: %w", st.rel.Version, run.Result.ChangesMerged, run.Result.SnapshotsLoaded, errMismatch)
		}
		if err != nil {
			return "", "", err
		}
		s.into.Add(run.Engine())
		*s.grow = append(*s.grow, float64(fileSize(s.path)-fileSize(s.from)))
		if err := r.rawHistoryRun(ctx, b, st, s.from, s.eo.History != nil, c); err != nil {
			return "", "", err
		}
	}
	r.logf("history: merge of 1%% of %s rows, run %d: history on %s, off %s (DuckDB alone %s and %s); the file grew %s and %s",
		rows(b.n), i+1, secs(c.on.Wall.Runs[i]), secs(c.off.Wall.Runs[i]), secs(c.rawOn.Wall.Runs[i]), secs(c.rawOff.Wall.Runs[i]), mib(c.growOn[i]), mib(c.growOff[i]))
	return wp, np, nil
}

// rawHistoryRun is DuckDB alone's merge of the version into a copy of
// from (the file with history when on, else the one without), each right
// after the engine's on the same kind of file: with on, it keeps the
// history as the engine does, in the merge's transaction.
func (r *run) rawHistoryRun(ctx context.Context, b *bigDataset, st *mergeStep, from string, on bool, c *historyCosts) error {
	path := r.path("history-raw")
	defer removeDB(path)
	if err := copyDB(from, path); err != nil {
		return err
	}
	stmts, into := rawMergeSQL(b.table, st.changes), &c.rawOff
	if on {
		stmts, into = rawHistoryMergeSQL(b.id, b.table, st.changes, st.rel.Version), &c.rawOn
	}
	cost, err := timedPlain(ctx, path, r.eo, nil, func(exec func(string) error) error {
		for _, q := range stmts {
			if err := exec(q); err != nil {
				return fmt.Errorf("DuckDB alone's merge of %s: %w", st.changes, err)
			}
		}
		return nil
	})
	into.Add(cost)
	return err
}

// rawHistoryMergeSQL is DuckDB alone keeping a history as the engine's
// (docs/decisions.md 45) while it merges a changes file: the merge's two
// statements, the changed and removed ids' ends, the added and changed
// rows appended to the history's rows, in one transaction.
func rawHistoryMergeSQL(datasetID, table, file string, version int) []string {
	f := fileList([]string{file})
	merge := rawMergeSQL(table, file)
	return append(merge[:len(merge)-1:len(merge)-1],
		fmt.Sprintf(`INSERT INTO _ploti.history_ends (dataset_id, record_id, valid_to, valid_to_at)
			SELECT %s, _ploti_record_id, %d, now() FROM read_parquet(%s) WHERE _ploti_change IN ('changed', 'removed')`, storage.Literal(datasetID), version, f),
		fmt.Sprintf(`INSERT INTO _ploti_history.%s BY NAME SELECT *, %d AS %s, now() AS %s FROM read_parquet(%s) WHERE _ploti_change IN ('added', 'changed')`,
			storage.Ident(table), version, storage.Ident(storage.ColValidFrom), storage.Ident(storage.ColValidFromAt), f),
		"COMMIT")
}

// reportHistory adds the history section's lines.
func (r *run) reportHistory(size string, held int64, c *historyCosts) {
	ratio, cpu := ratios(c.on, c.off)
	r.rep.target(Line{What: "7a. changes merge with --history all vs without", Size: size, Engine: c.on.String(),
		Versus: "history off: " + c.off.String(), Ratio: ratio, CPURatio: cpu}, 1.5, true)
	r.rep.Summary["history_merge"] = ratio
	raw, rawCPU := ratios(c.rawOn, c.rawOff)
	r.rep.add(Line{What: "7a. DuckDB alone merging with the same history (the merge, then the ends and rows appended, one transaction) vs without: what the history costs DuckDB itself, the ceiling of the line above", Size: size,
		Engine: c.rawOn.String(), Versus: "DuckDB alone without history: " + c.rawOff.String(), Ratio: raw, CPURatio: rawCPU})
	r.rep.Summary["history_raw_ratio"] = raw
	vsRaw, vsRawCPU := ratios(c.on, c.rawOn)
	r.rep.add(Line{What: "7a. changes merge with --history all vs DuckDB alone keeping the same history", Size: size,
		Engine: c.on.String(), Versus: "DuckDB alone with history: " + c.rawOn.String(), Ratio: vsRaw, CPURatio: vsRawCPU})
	ratio, cpu = ratios(c.readOn, c.readOff)
	r.rep.add(Line{What: "7a. the whole read of a file an open has not seen (decision 31; not after the engine's own sync), which the history doubles", Size: fmt.Sprintf("%s rows, and as many in the history", rows(held)),
		Engine: c.readOn.String(), Versus: "history off: " + c.readOff.String(), Ratio: ratio, CPURatio: cpu})
	slices.Sort(c.growOn)
	slices.Sort(c.growOff)
	mOn, mOff := c.growOn[len(c.growOn)/2], c.growOff[len(c.growOff)/2]
	r.rep.add(Line{What: "7b. file growth per 1% version (median), history on vs off", Size: size,
		Engine: fmt.Sprintf("%s (%s–%s)", mib(mOn), mib(c.growOn[0]), mib(c.growOn[len(c.growOn)-1])),
		Versus: fmt.Sprintf("history off: %s (%s–%s)", mib(mOff), mib(c.growOff[0]), mib(c.growOff[len(c.growOff)-1])), Ratio: ratioOf(mOn, mOff)})
	r.rep.Summary["history_growth_mib"] = mOn / (1 << 20)
}

// checkHistory makes sure the file at path holds a history of the table
// with rows rows and ends ends: the measure measured what it says.
func checkHistory(ctx context.Context, path, table string, rows, ends int64) error {
	var r, e int64
	err := withPlain(ctx, path, engineOpts{}, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM _ploti_history."+storage.Ident(table)+"), (SELECT count(*) FROM _ploti.history_ends)").Scan(&r, &e)
	})
	if err != nil {
		return fmt.Errorf("read the history of %s in %s: %w", table, path, err)
	}
	if r != rows || e != ends {
		return fmt.Errorf("the history of %s in %s has %d rows and %d ends, want %d and %d: %w", table, path, r, e, rows, ends, errMismatch)
	}
	return nil
}

func ratioOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}
