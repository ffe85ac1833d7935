package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Verdicts of Verify.
const (
	VerdictVerified     = "verified"
	VerdictDiffers      = "differs"
	VerdictUnverifiable = "unverifiable"
	VerdictRepaired     = "repaired"
)

// VerifyOptions choose what Verify checks.
type VerifyOptions struct {
	// Datasets limits the check to these dataset ids; empty: every dataset
	// that holds a version.
	Datasets []string
	// Repair reloads each dataset that differs at the version it holds,
	// then checks it again.
	Repair bool
}

// DatasetCheck is what Verify found for one dataset.
type DatasetCheck struct {
	DatasetID string `json:"datasetId"`
	Table     string `json:"table"`
	Version   int    `json:"version"`
	Verdict   string `json:"verdict"`
	// Rows is the table's row count; SnapshotRows the version's.
	Rows         int64 `json:"rows"`
	SnapshotRows int64 `json:"snapshotRows"`
	// Differences say in words what differs (before a repair).
	Differences []string `json:"differences,omitempty"`
	// Notes say what legitimately differs (a MINOR change's new column).
	Notes []string `json:"notes,omitempty"`
	// Reason says why an unverifiable dataset cannot be checked, or why
	// a repair failed.
	Reason string `json:"reason,omitempty"`
	// fault marks an unverifiable dataset that a failure kept from being
	// checked (Ploti not answering, a download failing, a full spool),
	// not a lasting reason (watched, past retention).
	fault bool
}

// VerifyReport is a Verify run.
type VerifyReport struct {
	Datasets     []DatasetCheck `json:"datasets"`
	Verified     int            `json:"verified"`
	Differ       int            `json:"differ"`
	Unverifiable int            `json:"unverifiable"`
	Repaired     int            `json:"repaired"`
	At           time.Time      `json:"at"`
	Duration     time.Duration  `json:"-"`
}

// MarshalJSON adds durationSeconds (README: every --json output gives
// durations in seconds).
func (r VerifyReport) MarshalJSON() ([]byte, error) {
	type plain VerifyReport
	out := struct {
		plain
		DurationSeconds float64 `json:"durationSeconds"`
	}{plain(r), r.Duration.Seconds()}
	if out.Datasets == nil {
		out.Datasets = []DatasetCheck{}
	}
	return json.Marshal(out)
}

// OK is true when nothing differs (after repairs).
func (r VerifyReport) OK() bool { return r.Differ == 0 }

// NothingVerified is the reason a run compared no dataset with its
// version although it could have: every dataset it tried was
// unverifiable, and some for a failure (Ploti not answering, a download
// failing, the spool's disk full) rather than for a lasting reason
// (watched, past retention). Such a run is no success: the reason is the
// first failure's. "" when something was compared, or nothing could be.
func (r VerifyReport) NothingVerified() string {
	if r.Verified+r.Repaired+r.Differ > 0 {
		return ""
	}
	for _, c := range r.Datasets {
		if c.fault {
			return fmt.Sprintf("%s v%d: %s", c.DatasetID, c.Version, c.Reason)
		}
	}
	return ""
}

// Verify compares each dataset's table with the version the registry says
// it holds, as Ploti publishes it: the version's snapshot, downloaded and
// verified like a sync's, is loaded into a scratch table in a transaction
// that is rolled back, and the two are compared inside DuckDB by row
// count and an order-independent hash of every column; only when those
// differ are the rows matched by record id to say which differ. It also
// checks the registry against the table: row count, and columns and types
// against a fresh load of the version's schema. A version Ploti no longer
// serves (past retention) is unverifiable, not a difference. A watched
// dataset is unverifiable too (docs/decisions.md: it has no snapshot).
func (r *Replica) Verify(ctx context.Context, opts VerifyOptions) (VerifyReport, error) {
	start := time.Now()
	rep := VerifyReport{At: r.opts.Now().UTC()}
	done, err := r.exclusive(ctx)
	if err != nil {
		return rep, err
	}
	defer done()
	all, err := r.db.Datasets(ctx)
	if err != nil {
		return rep, err
	}
	for _, id := range opts.Datasets {
		if !slices.ContainsFunc(all, func(d *storage.Dataset) bool { return d.ID == id }) {
			return rep, fmt.Errorf("verify %s: %w", id, ErrUnknownDataset)
		}
	}
	for _, d := range all {
		if len(opts.Datasets) > 0 && !slices.Contains(opts.Datasets, d.ID) {
			continue
		}
		if d.Version == 0 || d.Status == storage.StatusRemoved {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		c, v, err := r.verifyOne(ctx, d)
		if err != nil {
			return rep, err
		}
		if c.Verdict == VerdictDiffers && opts.Repair && v != nil {
			c = r.repair1(ctx, d, v, c)
		}
		switch c.Verdict {
		case VerdictVerified:
			rep.Verified++
		case VerdictRepaired:
			rep.Repaired++
		case VerdictDiffers:
			rep.Differ++
		case VerdictUnverifiable:
			rep.Unverifiable++
		}
		rep.Datasets = append(rep.Datasets, c)
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// repair1 reloads the version d holds and checks again.
func (r *Replica) repair1(ctx context.Context, d *storage.Dataset, v *ploti.Version, before DatasetCheck) DatasetCheck {
	r.log.Info("verify: reloading the version held",
		slog.String("dataset", d.ID), slog.Int("version", d.Version), slog.Any("differences", before.Differences))
	if _, err := r.exec.LoadVersion(ctx, d, v, false); err != nil {
		before.Reason = "repair failed: " + err.Error()
		return before
	}
	fresh, err := r.db.Dataset(ctx, d.ID)
	if err != nil {
		before.Reason = "repair: " + err.Error()
		return before
	}
	after, _, err := r.verifyOne(ctx, fresh)
	if err != nil || after.Verdict != VerdictVerified {
		before.Reason = "still differs after the reload"
		if err != nil {
			before.Reason += ": " + err.Error()
		}
		return before
	}
	after.Verdict, after.Differences = VerdictRepaired, before.Differences
	return after
}

// verifyOne checks one dataset; an error is one that stops the whole
// verify (the file, a cancelled context).
func (r *Replica) verifyOne(ctx context.Context, d *storage.Dataset) (DatasetCheck, *ploti.Version, error) {
	c := DatasetCheck{DatasetID: d.ID, Table: d.Table, Version: d.Version}
	if d.Source == storage.SourceWatch {
		c.Verdict, c.Reason = VerdictUnverifiable, "a watched dataset: Ploti publishes no snapshot of its versions to compare with"
		return c, nil, nil
	}
	src := &source{api: r.api}
	v, err := src.Version(ctx, d.ID, d.Version, "")
	var schema *ploti.Schema
	var paths []string
	if err == nil {
		schema, err = src.Schema(ctx, v)
	}
	if err == nil {
		paths, err = src.Download(ctx, v, "snapshot")
		defer src.Discard(paths)
	}
	if err != nil {
		if ctx.Err() != nil {
			return c, nil, ctx.Err()
		}
		c.Verdict, c.fault = VerdictUnverifiable, true
		c.Reason = fmt.Sprintf("version %d cannot be read from Ploti: %v", d.Version, err)
		if df := storage.AsDiskFull(err, r.spool); df != nil {
			c.Reason = fmt.Sprintf("version %d could not be downloaded: %v", d.Version, df)
		} else if errors.Is(err, fetch.ErrExpired) || errors.Is(err, fetch.ErrNotFound) {
			c.fault = false
			c.Reason = fmt.Sprintf("version %d is no longer served (past retention): a sync to the current version, then verify", d.Version)
		}
		return r.countsWithoutSnapshot(ctx, d, v, c)
	}
	cmp, err := r.db.CompareSnapshot(ctx, d.Table, schema.Columns, paths)
	if err != nil {
		if ctx.Err() != nil {
			return c, nil, ctx.Err()
		}
		if errors.Is(err, storage.ErrBadData) {
			c.Verdict, c.Differences = VerdictDiffers, []string{err.Error()}
			if v.RowCount != nil {
				c.SnapshotRows = *v.RowCount // the table's side could not be read
			}
			return c, v, nil
		}
		return c, nil, fmt.Errorf("verify %s v%d: %w", d.ID, d.Version, err)
	}
	defer cmp.Close()
	if err := r.judge(ctx, src, d, v, schema, cmp, &c); err != nil {
		return c, nil, err
	}
	return c, v, nil
}

// judge gives a check its verdict from the comparison of the table with
// the version's snapshot: the registry's differences, and where the
// table differs from the snapshot when their sums do not match.
func (r *Replica) judge(ctx context.Context, src *source, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, cmp *storage.SnapshotComparison, c *DatasetCheck) error {
	c.Rows, c.SnapshotRows = cmp.TableRows, cmp.SnapshotRows
	c.Differences = registryDifferences(d, schema, cmp.TableRows)
	if !cmp.Same {
		diffs, notes, err := r.tableDifferences(ctx, src, d, v, cmp)
		if err != nil {
			return err
		}
		c.Differences = append(c.Differences, diffs...)
		c.Notes = notes
		c.Differences = append(c.Differences, versionRows(cmp.TableRows, d.Version, cmp.SnapshotRows)...)
		if len(c.Differences) == 0 && len(notes) == 0 {
			// The sums of the cells' hashes differ and nothing above
			// says where (nor is it a MINOR column's NULLs): still not
			// the version.
			c.Differences = append(c.Differences, fmt.Sprintf("the table's cells do not add up to version %d's (a row differs in a way not shown here)", d.Version))
		}
	}
	c.Verdict = VerdictVerified
	if len(c.Differences) > 0 {
		c.Verdict = VerdictDiffers
	}
	return nil
}

// countsWithoutSnapshot is what an unverifiable check can still say: the
// table's row count against the registry's and, when Ploti answered for
// the version (v) but its snapshot could not be read, against the
// version's rowCount. A count that differs makes the check differ.
func (r *Replica) countsWithoutSnapshot(ctx context.Context, d *storage.Dataset, v *ploti.Version, c DatasetCheck) (DatasetCheck, *ploti.Version, error) {
	rows, err := r.db.TableRows(ctx, d.Table)
	if err != nil {
		if ctx.Err() != nil {
			return c, nil, ctx.Err()
		}
		return c, nil, nil // the table itself is another check's (status, the next sync)
	}
	c.Rows = rows
	c.Differences = registryRows(d, rows)
	if v != nil && v.RowCount != nil {
		c.SnapshotRows = *v.RowCount
		c.Differences = append(c.Differences, versionRows(rows, d.Version, *v.RowCount)...)
	}
	if len(c.Differences) > 0 {
		c.Verdict = VerdictDiffers
		c.Notes = append(c.Notes, c.Reason)
		c.Reason = ""
	}
	return c, nil, nil
}

// registryDifferences compares the registry row with the table and the
// version's schema.
func registryDifferences(d *storage.Dataset, schema *ploti.Schema, rows int64) []string {
	out := registryRows(d, rows)
	// By name: a MINOR change's column sits at the table's end, wherever
	// the schema puts it (decision 60).
	if got, want := columnList(d.Columns), columnList(schema.Columns); got != want {
		out = append(out, fmt.Sprintf("the registry's columns (%s) are not version %d's schema (%s)", got, d.Version, want))
	}
	return out
}

// registryRows is the difference, if any, between the registry's row
// count and the table's, rows.
func registryRows(d *storage.Dataset, rows int64) []string {
	if d.RowCount == rows {
		return nil
	}
	return []string{fmt.Sprintf("the registry says %d rows, the table has %d", d.RowCount, rows)}
}

// versionRows is the difference, if any, between the table's row count
// and version's, want.
func versionRows(rows int64, version int, want int64) []string {
	if rows == want {
		return nil
	}
	return []string{fmt.Sprintf("the table has %d rows, version %d has %d", rows, version, want)}
}

func columnList(cols []ploti.Column) string {
	var s []string
	for _, c := range cols {
		s = append(s, c.Name+" "+c.Type.Type)
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}

// tableDifferences says how the table differs from the snapshot.
func (r *Replica) tableDifferences(ctx context.Context, src *source, d *storage.Dataset, v *ploti.Version, cmp *storage.SnapshotComparison) (diffs, notes []string, err error) {
	var nullOnly []string
	for _, col := range cmp.Columns {
		switch {
		case col.TableType == "":
			diffs = append(diffs, fmt.Sprintf("column %s is missing from the table (version %d has it as %s)", col.Name, d.Version, col.SnapshotType))
		case col.SnapshotType == "":
			diffs = append(diffs, fmt.Sprintf("column %s (%s) is in the table but not in version %d", col.Name, col.TableType, d.Version))
		case col.TableType != col.SnapshotType:
			diffs = append(diffs, fmt.Sprintf("column %s is %s in the table, %s in version %d", col.Name, col.TableType, col.SnapshotType, d.Version))
		case col.Cells == col.Unfilled:
			nullOnly = append(nullOnly, col.Name)
		}
	}
	var unfilled []string
	if len(nullOnly) > 0 {
		added := r.minorAdded(ctx, src, d.ID, v)
		for _, n := range nullOnly {
			if added[n] {
				unfilled = append(unfilled, n)
			}
		}
	}
	rd, err := cmp.Rows(ctx, unfilled)
	if err != nil {
		return nil, nil, fmt.Errorf("verify %s v%d: %w", d.ID, d.Version, err)
	}
	if rd.Added > 0 {
		diffs = append(diffs, fmt.Sprintf("%d row(s) in the table are not in version %d (e.g. %s)", rd.Added, d.Version, strings.Join(rd.AddedIDs, ", ")))
	}
	if rd.Missing > 0 {
		diffs = append(diffs, fmt.Sprintf("%d row(s) of version %d are missing from the table (e.g. %s)", rd.Missing, d.Version, strings.Join(rd.MissingIDs, ", ")))
	}
	if rd.Repeated > 0 {
		diffs = append(diffs, fmt.Sprintf("%d record id(s) are held by more than one row of the table (e.g. %s)", rd.Repeated, strings.Join(rd.RepeatedIDs, ", ")))
	}
	if rd.Changed > 0 {
		var cols []string
		for _, col := range cmp.Columns {
			if col.Cells > 0 && !slices.Contains(unfilled, col.Name) {
				cols = append(cols, col.Name)
			}
		}
		diffs = append(diffs, fmt.Sprintf("%d row(s) differ from version %d in %s (e.g. %s)", rd.Changed, d.Version, strings.Join(cols, ", "), strings.Join(rd.ChangedIDs, ", ")))
	}
	for _, col := range cmp.Columns {
		if slices.Contains(unfilled, col.Name) {
			notes = append(notes, fmt.Sprintf("column %s, added by a MINOR change, is NULL in %d row(s) that have not changed since (filled at the next reload)", col.Name, col.Unfilled))
		}
	}
	return diffs, notes, nil
}

// minorAdded are the columns MINOR changes added, from the schema history
// of v and the versions before it that Ploti still serves (at most 50).
func (r *Replica) minorAdded(ctx context.Context, src *source, id string, v *ploti.Version) map[string]bool {
	out := map[string]bool{}
	for range 50 {
		sc, err := src.Schema(ctx, v)
		if err != nil {
			break
		}
		if ch := sc.ChangeFromPrevious; ch != nil && !ch.IsMajor() {
			for _, c := range ch.Added {
				out[c.Name] = true
			}
		}
		if v.PreviousVersion == nil || *v.PreviousVersion < 1 {
			break
		}
		if v, err = src.Version(ctx, id, *v.PreviousVersion, ""); err != nil {
			break
		}
	}
	return out
}
