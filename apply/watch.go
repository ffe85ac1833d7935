package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// WatchSource is what the executor needs from Ploti's watch API (the
// replica's API client): a dataset's columns now, a version's changes and
// rows read now, spooled to local files.
type WatchSource interface {
	// Info is the dataset now: its version, title, place, topic, key
	// and columns.
	Info(ctx context.Context, datasetID string) (*ploti.DatasetInfo, error)
	// Changes reads every page of a version's changes. A version past
	// retention is ErrVersionGone.
	Changes(ctx context.Context, datasetID string, version int) (*VersionChanges, error)
	// Rows reads the dataset's rows now: all of them (ids nil) or those of
	// ids that exist, every row of one version.
	Rows(ctx context.Context, datasetID string, ids []string) (*RowSet, error)
	// Discard removes spooled files once read.
	Discard(paths []string)
}

// Log messages of the DuckDB work of a watched dataset, logged (debug)
// when it starts; the crash harness tells by them where a kill landed.
const (
	logMergeWatched  = "merge watched versions"
	logReloadWatched = "swap in a watched dataset read whole"
)

// Bounds of a watched dataset's catch-up.
const (
	// MaxWatchWalk is how many versions back the walk follows
	// previousVersion before it reads the dataset whole instead.
	MaxWatchWalk = 100
	// maxWatchTries is how often a catch-up starts over when the dataset
	// moved on while its rows were read, before it reads it whole.
	maxWatchTries = 3
)

// WatchKind is what a sync did to a watched dataset.
type WatchKind int

// Watch actions.
const (
	// WatchSkip: the table holds the latest version (or the dataset is
	// kept from the feed).
	WatchSkip WatchKind = iota
	// WatchPending: the dataset has no version yet.
	WatchPending
	// WatchMerge: recorded versions merged, their rows only.
	WatchMerge
	// WatchReload: the dataset read whole from rows and swapped in.
	WatchReload
)

var watchKindNames = [...]string{"skip", "pending", "merge", "reload"}

func (k WatchKind) String() string {
	if int(k) < len(watchKindNames) {
		return watchKindNames[k]
	}
	return fmt.Sprintf("watch kind(%d)", int(k))
}

// WatchResult says what SyncWatched did.
type WatchResult struct {
	Kind     WatchKind
	Why      string
	Version  int   // the version held after
	Versions int   // versions merged
	Rows     int64 // the table's rows after
	// Added, Changed, Removed, Renamed count the merged versions' changes.
	Added, Changed, Removed, Renamed int64
}

// SyncWatched brings a watched dataset's table to the version latest (the
// watches list's; nil before the dataset's first version):
//
//	no version yet                              → pending
//	not held, failed, or left by the feed       → read whole from rows
//	held at latest                              → nothing
//	recorded versions back to the held one      → merge the ids they touched
//	counts_only, ids_changed, full_refresh,
//	first, a 410 or a gap in previousVersion   → read whole from rows
//	a column removed or retyped (reading 5)     → read whole from rows
//
// d is the registry row (a new one with ID and Status pending when there
// is none); a dataset the feed keeps is not the caller's to pass. A failure is recorded on the dataset (its
// last good version stays; the next sync reads it whole) and returned as
// an *Error naming the dataset, the version and the problem.
func (x *Executor) SyncWatched(ctx context.Context, d *storage.Dataset, latest *int) (WatchResult, error) {
	if d == nil {
		return WatchResult{}, errors.New("sync watched: no registry row given")
	}
	// The feed's version numbers are not Ploti's: a dataset the feed held
	// (and left) is read whole.
	fromFeed := d.Source != storage.SourceWatch && d.Version > 0
	before := *d
	d.Source = storage.SourceWatch
	if fromFeed {
		d.TakenFrom = d.Version
	}
	res, err := x.syncWatched(ctx, d, latest, fromFeed)
	if err == nil {
		return res, nil
	}
	version := 0
	if latest != nil {
		version = *latest
	}
	// What the failed attempt set on d (a version, a table name) did not
	// commit: the failure is recorded on the row as it was.
	*d = before
	d.Source = storage.SourceWatch
	if reason := closedReason(err); reason != "" && ctx.Err() == nil {
		if fromFeed {
			// Its version is still the feed's: kept as the feed's, the
			// next try reads it whole again rather than walking Ploti's
			// versions from a number that is not one of them.
			d.Source = before.Source
		}
		return x.closedWatched(ctx, d, version, reason, err)
	}
	return res, x.failWatched(ctx, d, res.Kind, version, err)
}

func (x *Executor) syncWatched(ctx context.Context, d *storage.Dataset, latest *int, fromFeed bool) (WatchResult, error) {
	switch {
	case latest == nil:
		return x.pendingWatched(ctx, d)
	case fromFeed:
		return x.reloadWatched(ctx, d, "held from the feed, whose version numbers are not Ploti's")
	case d.Version == 0 || d.Status == storage.StatusFailed || d.Table == "" || d.Version > *latest:
		return x.reloadWatched(ctx, d, "no version held, a failed one, or one past the latest")
	case d.Version == *latest && d.Status == storage.StatusCurrent:
		return WatchResult{Kind: WatchSkip, Why: "holds the latest version", Version: d.Version, Rows: d.RowCount}, nil
	case d.Version == *latest:
		return x.commitWatchedState(ctx, d, "holds the latest version again")
	}
	target := *latest
	for try := 1; ; try++ {
		res, moved, err := x.catchUp(ctx, d, target)
		if err != nil || moved == 0 {
			return res, err
		}
		if try >= maxWatchTries {
			return x.reloadWatched(ctx, d, fmt.Sprintf("the dataset moved on %d times while its rows were read", try))
		}
		x.log().Debug("watched dataset moved on during its catch-up",
			slog.String("dataset", d.ID), slog.Int("from", target), slog.Int("to", moved))
		target = moved
	}
}

// catchUp walks back from target to the held version and merges; moved is
// the newer version the rows came at when the dataset moved on meanwhile
// (nothing was written then).
func (x *Executor) catchUp(ctx context.Context, d *storage.Dataset, target int) (res WatchResult, moved int, err error) {
	info, err := x.Watch.Info(ctx, d.ID)
	if err != nil {
		return res, 0, err
	}
	if info.Version != nil && *info.Version > target {
		target = *info.Version
	}
	add, ok := columnsNow(d.Columns, info.Columns)
	if !ok {
		res, err = x.reloadWatched(ctx, d, "a column was removed or changed type (docs/wire.md 9, reading 5)")
		return res, 0, err
	}
	versions, why, err := x.walkBack(ctx, d, target)
	defer x.discardVersions(versions)
	if err != nil {
		return res, 0, err
	}
	if why != "" {
		res, err = x.reloadWatched(ctx, d, why)
		return res, 0, err
	}
	p, err := planWatch(versions)
	if err != nil {
		return res, 0, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	cols := append(slices.Clone(d.Columns), add...)
	if len(p.read) > 0 {
		rs, err := x.Watch.Rows(ctx, d.ID, p.read)
		if errors.Is(err, ErrReadWhole) {
			res, err = x.reloadWatched(ctx, d, err.Error())
			return res, 0, err
		}
		if err != nil {
			return res, 0, err
		}
		defer x.Watch.Discard([]string{rs.Path})
		if rs.Version == nil || *rs.Version != target {
			if rs.Version != nil && *rs.Version > target {
				return res, *rs.Version, nil
			}
			return res, 0, fmt.Errorf("%w: rows of the ids version %d touched came at version %s", ErrBadInput, target, versionText(rs.Version))
		}
		p.merge.Rows = append(p.merge.Rows, storage.RowSource{Path: rs.Path, IDs: p.read})
	}
	describeWatched(d, info)
	res, err = x.mergeWatched(ctx, d, versions, p, cols, add)
	return res, 0, err
}

func versionText(v *int) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

// walkBack reads the changes of target, then of each previousVersion, back
// to the held version (docs/wire.md 9, reading 1), and returns them oldest
// first; why, when set, says why the dataset must be read whole instead.
func (x *Executor) walkBack(ctx context.Context, d *storage.Dataset, target int) (versions []*VersionChanges, why string, err error) {
	for v := target; ; {
		vc, err := x.Watch.Changes(ctx, d.ID, v)
		if errors.Is(err, ErrVersionGone) {
			return versions, fmt.Sprintf("version %d's changes are past retention", v), nil
		}
		if err != nil {
			return versions, "", err
		}
		versions = append([]*VersionChanges{vc}, versions...)
		switch vc.ChangeLog {
		case ploti.ChangeLogRecorded:
		case ploti.ChangeLogCountsOnly, ploti.ChangeLogIDsChanged, ploti.ChangeLogFullRefresh, ploti.ChangeLogFirst:
			return versions, fmt.Sprintf("version %d's changeLog is %s", v, vc.ChangeLog), nil
		default:
			return versions, "", fmt.Errorf("%w: version %d has changeLog %q, none the docs name", ErrBadInput, v, vc.ChangeLog)
		}
		switch prev := vc.PreviousVersion; {
		case prev == nil:
			return versions, fmt.Sprintf("version %d has no previousVersion: a gap back to the held version %d", v, d.Version), nil
		case *prev == d.Version:
			return versions, "", nil
		case *prev < d.Version || *prev >= v:
			return versions, fmt.Sprintf("version %d's previousVersion %d passes the held version %d: a gap", v, *prev, d.Version), nil
		case len(versions) >= MaxWatchWalk:
			return versions, fmt.Sprintf("more than %d versions behind", MaxWatchWalk), nil
		default:
			v = *prev
		}
	}
}

func (x *Executor) discardVersions(versions []*VersionChanges) {
	for _, vc := range versions {
		if vc.Path != "" {
			x.Watch.Discard([]string{vc.Path})
		}
	}
}

// columnsNow compares the table's columns with the dataset's columns now
// (docs/wire.md 9, reading 5): the ones to add, or ok false when a column
// was removed or changed type (the dataset is then read whole).
func columnsNow(table, now []ploti.Column) (add []ploti.Column, ok bool) {
	have := map[string]string{}
	for _, c := range table {
		t, _ := duckread.DuckType(c.Type)
		have[c.Name] = t
	}
	seen := map[string]bool{}
	for _, c := range now {
		t, err := duckread.DuckType(c.Type)
		if err != nil {
			return nil, false
		}
		seen[c.Name] = true
		switch old, held := have[c.Name]; {
		case !held:
			add = append(add, c)
		case old != t:
			return nil, false
		}
	}
	for name := range have {
		if !seen[name] {
			return nil, false
		}
	}
	return add, true
}

// describeWatched fills a registry row's title, place, topic and key from
// the dataset now.
func describeWatched(d *storage.Dataset, info *ploti.DatasetInfo) {
	if info == nil {
		return
	}
	if d.ID == "" {
		d.ID = info.ID
	}
	if info.Title != "" {
		d.Title = info.Title
	}
	if info.Place != nil && info.Place.ID != nil {
		d.PlaceID = *info.Place.ID
	}
	if info.Topic != nil {
		d.Topic = *info.Topic
	}
	if info.KeyColumns != nil {
		d.KeyColumns = info.KeyColumns
	}
}

// mergeWatched commits the plan: the columns added, the touched rows
// replaced, the log, the id map, and the registry row, in one transaction.
func (x *Executor) mergeWatched(ctx context.Context, d *storage.Dataset, versions []*VersionChanges, p *watchPlan, cols, add []ploti.Column) (WatchResult, error) {
	last := versions[len(versions)-1]
	res := WatchResult{Kind: WatchMerge, Why: fmt.Sprintf("%d recorded version(s) after the held version %d", len(versions), d.Version),
		Version: last.Version, Versions: len(versions), Added: p.added, Changed: p.changed, Removed: p.removed, Renamed: p.renamed}
	p.merge.DatasetID, p.merge.Table, p.merge.Columns, p.merge.IDRefs = d.ID, d.Table, cols, x.IDRefs
	p.merge.RowsBefore = d.RowCount
	if d.RowCount <= 0 {
		p.merge.RowsBefore = -1
	}
	x.log().Debug(logMergeWatched,
		slog.String("dataset", d.ID), slog.Int("version", last.Version), slog.Int("versions", len(versions)))
	err := x.DB.Update(ctx, func(tx *storage.Tx) error {
		if err := tx.Tables().AddColumns(ctx, d.Table, add); err != nil {
			return err
		}
		st, err := tx.Tables().MergeWatch(ctx, p.merge)
		if err != nil {
			return err
		}
		if err := x.afterWatchMerge(ctx, tx, d, versions, p.merge); err != nil {
			return err
		}
		res.Rows = st.Rows
		watchedVersion(d, last.Version, last.PreviousVersion, cols, st.Rows)
		return tx.PutDataset(ctx, d)
	})
	return res, err
}

// reloadWatched reads the dataset whole from rows, at one version, and
// swaps it in like a snapshot, with its registry row.
func (x *Executor) reloadWatched(ctx context.Context, d *storage.Dataset, why string) (WatchResult, error) {
	res := WatchResult{Kind: WatchReload, Why: why}
	rs, err := x.Watch.Rows(ctx, d.ID, nil)
	if err != nil {
		return res, err
	}
	if rs.Path != "" {
		defer x.Watch.Discard([]string{rs.Path})
	}
	if rs.Version == nil {
		return x.pendingWatched(ctx, d)
	}
	res.Version = *rs.Version
	cols, at, err := x.describeRead(ctx, d, rs)
	if err != nil {
		return res, err
	}
	var files []string
	if rs.Path != "" {
		files = []string{rs.Path}
	}
	x.log().Debug(logReloadWatched, slog.String("dataset", d.ID), slog.Int("version", *rs.Version), slog.Int64("rows", rs.Rows))
	err = x.DB.Update(ctx, func(tx *storage.Tx) error {
		if err := x.tableFor(ctx, tx, d); err != nil {
			return err
		}
		// The history and a mark's log see the read whole as a reload.
		rl, err := x.beforeReload(ctx, tx, d, *rs.Version, cols, false)
		if err != nil {
			return err
		}
		n, err := tx.Tables().LoadRows(ctx, d.Table, cols, files)
		if err != nil {
			return err
		}
		if err := x.afterReload(ctx, tx, rl, d, storage.SourceWatch, *rs.Version, at, cols, nil); err != nil {
			return err
		}
		res.Rows = n
		watchedVersion(d, *rs.Version, nil, cols, n)
		return tx.PutDataset(ctx, d)
	})
	if err == nil {
		tookOver(d)
		if cerr := x.checkpoint(ctx); cerr != nil {
			x.log().Debug("checkpoint after a watched dataset's reload", slog.String("dataset", d.ID), logs.Err(cerr))
		}
	}
	return res, err
}

// describeRead asks for the dataset now, for a read whole: its place,
// topic and key for the registry row (the watches list gives only a
// title), the columns when the rows gave none, and the version's
// promotedAt for a history (a rows answer has none). Needed when the row
// has no title or the rows no columns; else best effort: unknown, the
// history counts the version's rows as always there (decision 47).
func (x *Executor) describeRead(ctx context.Context, d *storage.Dataset, rs *RowSet) ([]ploti.Column, *time.Time, error) {
	cols := rs.Columns
	info, err := x.Watch.Info(ctx, d.ID)
	switch {
	case err != nil && (d.Title == "" || len(cols) == 0):
		return nil, nil, err
	case err != nil:
		x.log().Debug("describe a watched dataset read whole", slog.String("dataset", d.ID), logs.Err(err))
		return cols, nil, nil
	}
	describeWatched(d, info)
	if len(cols) == 0 {
		cols = info.Columns
	}
	return cols, promotedAt(info, *rs.Version), nil
}

// promotedAt is the dataset's promotedAt when info describes version v.
func promotedAt(info *ploti.DatasetInfo, v int) *time.Time {
	if info == nil || info.Version == nil || *info.Version != v {
		return nil
	}
	return info.PromotedAt
}

// tableFor gives a new registry row its table name.
func (x *Executor) tableFor(ctx context.Context, tx *storage.Tx, d *storage.Dataset) error {
	if d.Table != "" {
		return nil
	}
	if err := tx.PutDataset(ctx, d); err != nil {
		return err
	}
	fresh, err := tx.Dataset(ctx, d.ID)
	if err != nil {
		return err
	}
	d.Table = fresh.Table
	return nil
}

// watchedVersion sets a registry row to hold a watched version.
func watchedVersion(d *storage.Dataset, version int, previous *int, cols []ploti.Column, rows int64) {
	d.Version, d.PreviousVersion = version, 0
	if previous != nil {
		d.PreviousVersion = *previous
	}
	d.SchemaVersion, d.Columns, d.RowCount = "", cols, rows
	d.Status, d.StatusReason, d.LastError, d.FailedAt, d.SkipUntilRemoved = storage.StatusCurrent, "", "", nil, false
	d.StaleLastCheckedAt, d.StaleNextCheckBy = nil, nil
	d.Source = storage.SourceWatch
}

// pendingWatched registers a watched dataset that has no version yet.
func (x *Executor) pendingWatched(ctx context.Context, d *storage.Dataset) (WatchResult, error) {
	res := WatchResult{Kind: WatchPending, Why: "no version yet"}
	if d.Version > 0 && d.Status == storage.StatusCurrent {
		return WatchResult{Kind: WatchSkip, Why: "no version listed; the held one stays", Version: d.Version, Rows: d.RowCount}, nil
	}
	if d.Table == "" || d.Title == "" { // new: the watches list gives only a title
		if info, err := x.Watch.Info(ctx, d.ID); err == nil {
			describeWatched(d, info)
		}
	}
	d.Status, d.StatusReason = storage.StatusPending, storage.ReasonAwaitingFirstVersion
	return res, x.DB.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) })
}

// commitWatchedState writes a registry row that holds the latest version
// but was not current (watched again after it was unwatched).
func (x *Executor) commitWatchedState(ctx context.Context, d *storage.Dataset, why string) (WatchResult, error) {
	d.Status, d.StatusReason = storage.StatusCurrent, ""
	err := x.DB.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) })
	return WatchResult{Kind: WatchSkip, Why: why, Version: d.Version, Rows: d.RowCount}, err
}

// closedReason is the removed reason of an error saying the workspace no
// longer opens a dataset, "" for any other.
func closedReason(err error) string {
	switch {
	case errors.Is(err, ErrLeftCoverage):
		return storage.ReasonLeftCoverage
	case errors.Is(err, ErrPlanClosed):
		return storage.ReasonPlanChanged
	}
	return ""
}

// closedWatched records that the workspace no longer opens a watched
// dataset: its rows and version stay (none when it was never loaded),
// marked removed with the reason, and the sync goes on without a failure
// (the watch is the member's to keep or drop; Ploti's answer is not the
// replica's fault). Each sync the watches list shows a version past the
// held one tries again (one call), so the dataset catches up once
// coverage or plan opens it again.
func (x *Executor) closedWatched(ctx context.Context, d *storage.Dataset, version int, reason string, cause error) (WatchResult, error) {
	if d.Status != storage.StatusRemoved || d.StatusReason != reason {
		x.log().Warn("the workspace no longer opens this watched dataset; its rows stay and stop updating",
			slog.String("dataset", d.ID), slog.Int("version", version), logs.Err(cause))
	}
	d.Status, d.StatusReason = storage.StatusRemoved, reason
	err := x.DB.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) })
	return WatchResult{Kind: WatchSkip, Why: reason, Version: d.Version, Rows: d.RowCount}, err
}

// failWatched records a watched dataset's failure: it keeps its last good
// version, its status says why, and the next sync reads it whole. A
// stopped sync is returned as it is.
func (x *Executor) failWatched(ctx context.Context, d *storage.Dataset, kind WatchKind, version int, cause error) error {
	if ctx.Err() != nil || errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	op := "sync watched"
	switch kind {
	case WatchMerge:
		op = "merge watched"
	case WatchReload:
		op = "reload watched"
	}
	err := &Error{Op: op, DatasetID: d.ID, Version: version, Err: cause}
	now := x.DB.Now()
	d.Status, d.StatusReason, d.LastError, d.FailedAt = storage.StatusFailed, err.Error(), err.Error(), &now
	if werr := x.DB.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, d) }); werr != nil {
		return errors.Join(err, werr)
	}
	x.log().Warn("watched dataset failed; its last good version stays",
		slog.String("dataset", d.ID), slog.Int("version", version), logs.Err(err))
	return err
}
