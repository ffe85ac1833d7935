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

// historyCosts are the history section's measures over the repeats.
type historyCosts struct {
	on, off, readOn, readOff Costs
	growOn, growOff          []float64
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
	}
	r.logf("history: merge of 1%% of %s rows, run %d: history on %s, off %s; the file grew %s and %s",
		rows(b.n), i+1, secs(c.on.Wall.Runs[i]), secs(c.off.Wall.Runs[i]), mib(c.growOn[i]), mib(c.growOff[i]))
	return wp, np, nil
}

// reportHistory adds the history section's lines.
func (r *run) reportHistory(size string, held int64, c *historyCosts) {
	ratio, cpu := ratios(c.on, c.off)
	r.rep.target(Line{What: "7a. changes merge with --history all vs without", Size: size, Engine: c.on.String(),
		Versus: "history off: " + c.off.String(), Ratio: ratio, CPURatio: cpu}, 1.5, true)
	r.rep.Summary["history_merge"] = ratio
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
