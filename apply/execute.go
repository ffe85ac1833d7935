package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Source is what the executor needs from the Ploti API: versions, the
// current version, schemas, and verified local copies of files.
type Source interface {
	// Version returns a version with signed links; link is the event's
	// links.version when it has one.
	Version(ctx context.Context, datasetID string, version int, link string) (*ploti.Version, error)
	// Current returns the dataset's current version number, or ErrNoCurrent.
	Current(ctx context.Context, datasetID string) (int, error)
	// Schema returns the version's schema.
	Schema(ctx context.Context, v *ploti.Version) (*ploti.Schema, error)
	// Download fetches a version's files of one kind ("snapshot",
	// "changes", "idMap") and returns verified local paths, in order.
	Download(ctx context.Context, v *ploti.Version, kind string) ([]string, error)
	// Discard removes downloaded files once they are read into the table
	// (possibly before the commit: a failed commit downloads them again).
	// Calls may overlap.
	Discard(paths []string)
}

// Describer is a Source that can also tell a dataset's title, place and
// topic, for the registry row of a dataset that arrives through the log.
type Describer interface {
	Describe(ctx context.Context, datasetID string) (*ploti.Dataset, error)
}

// describe fills a registry row's title, place, topic and key from the API
// (best effort: a failure leaves them as they are).
func (x *Executor) describe(ctx context.Context, d *storage.Dataset) {
	src, ok := x.Source.(Describer)
	if !ok || d.Title != "" {
		return
	}
	info, err := src.Describe(ctx, d.ID)
	if err != nil {
		x.log().Debug("describe dataset", slog.String("dataset", d.ID), logs.Err(err))
		return
	}
	Describe(d, info)
}

// Describe fills a registry row's title, place and topic from the API's
// dataset object, and its key columns when the row has none.
func Describe(d *storage.Dataset, info *ploti.Dataset) {
	d.Title = info.Title
	if info.Place != nil && info.Place.ID != nil {
		d.PlaceID = *info.Place.ID
	}
	if info.Topic != nil {
		d.Topic = *info.Topic
	}
	if len(d.KeyColumns) == 0 {
		d.KeyColumns = info.KeyColumns
	}
}

// Executor carries actions out.
type Executor struct {
	DB     *storage.DB
	Source Source
	// Watch is the watch API, for watched datasets (SyncWatched; watch.go).
	Watch WatchSource
	// OnMajor is OnMajorHold (default) or OnMajorReload.
	OnMajor string
	// IDRefs are user columns rewritten when a dataset's ids are replaced.
	IDRefs []storage.IDRef
	// Log takes the executor's log lines; nil: none.
	Log *slog.Logger
	// History tells which datasets keep history (storage's history.go):
	// their loads and merges record it in their transaction. Nil: none.
	History func(datasetID string) bool
	// LogReloads makes a reload log what it changed in _ploti.changes
	// (compared with the held rows by record id): the file has marks,
	// which read the log (the replica sets it before each sync).
	LogReloads bool
	// AheadBytes bounds the changes files the walk fetches ahead of the
	// merges that take them (Ahead): at most this many bytes' worth of
	// files of sharedMergeBytes wait in the spool (aheadSlots; one at
	// least, aheadFiles at most). The replica sets its SpoolLimit; 0:
	// aheadFiles.
	AheadBytes int64

	freed int64 // bytes of tables swapped out since the last checkpoint (see swapped)
}

// log is Log, or a logger that writes nothing when Log is nil.
func (x *Executor) log() *slog.Logger { return logs.OrDiscard(x.Log) }

// Result says what an applied event did.
type Result struct {
	Action  Action
	Applied bool // false when skipped
	Rows    int64
	Stats   storage.MergeStats
}

// State reads a dataset's state through the batch.
func (x *Executor) State(ctx context.Context, b *Batch, datasetID string) (*storage.Dataset, State, error) {
	d, holds, err := b.dataset(ctx, datasetID)
	if err != nil || d == nil {
		return nil, State{}, err
	}
	return d, StateOf(d, holds), nil
}

// Apply decides and carries out one event. A heavy action commits in a
// transaction of its own (after flushing the batch), but for a small merge
// under Batch.Share; others join the batch. The event id is recorded in the
// same transaction as its effect.
// A dataset-level failure (bad input, a gone dataset) is recorded on the
// dataset and returned as an *Error; the caller goes on with other events.
func (x *Executor) Apply(ctx context.Context, b *Batch, ev ploti.Event) (Result, error) {
	d, holds, err := b.dataset(ctx, ev.Data.DatasetID)
	var st State
	if d != nil {
		st = StateOf(d, holds)
	}
	if err != nil {
		return Result{}, err
	}
	a := Decide(st, ev, x.onMajor())
	res := Result{Action: a}
	if a.Kind == Skip {
		return res, x.skip(ctx, b, d, ev)
	}
	if d == nil {
		d = &storage.Dataset{ID: ev.Data.DatasetID, Status: storage.StatusPending}
	} else if d.Source == storage.SourceWatch {
		// The feed takes a watched dataset over (see StateOf): the watch's
		// version is no Data Feeds version, its table is replaced.
		d.Source, d.TakenFrom, d.Version, d.PreviousVersion = storage.SourceFeed, d.Version, 0, 0
	}
	res.Applied = true
	if !a.Kind.Heavy() {
		return x.applyLight(ctx, b, d, a, ev, res)
	}
	return x.applyHeavy(ctx, b, d, a, ev, len(holds) == 0, res)
}

// skip marks an event that changes nothing applied.
func (x *Executor) skip(ctx context.Context, b *Batch, d *storage.Dataset, ev ploti.Event) error {
	if d != nil && bringsHeld(d, ev) && (d.StaleLastCheckedAt != nil || d.StaleNextCheckBy != nil) {
		// The version held came with this event (loaded ahead of the
		// walk, from a later snapshot, or applied before a replay): a
		// missed check recorded before it is over, as when the event
		// is applied (heldVersion).
		d.StaleLastCheckedAt, d.StaleNextCheckBy = nil, nil
		if d.StatusReason == storage.ReasonStale {
			d.StatusReason = ""
		}
		b.putDataset(d)
	}
	return b.markApplied(ctx, ev.ID)
}

// applyLight carries out an action that loads no file, in the batch's
// transaction.
func (x *Executor) applyLight(ctx context.Context, b *Batch, d *storage.Dataset, a Action, ev ploti.Event, res Result) (Result, error) {
	if a.Kind == AlterSchema {
		// DDL that fails aborts its transaction: give it one with
		// nothing else in it, so a failure costs only this dataset.
		if err := b.Flush(); err != nil {
			return res, err
		}
	}
	tx, err := b.Tx(ctx)
	if err != nil {
		return res, err
	}
	if err := x.light(ctx, b, tx, d, a, ev); err != nil {
		if a.Kind != AlterSchema {
			return res, err
		}
		b.Abort()
		res.Applied = false
		return res, x.fail(ctx, b, d, a, ev.ID, err)
	}
	return res, b.markApplied(ctx, ev.ID)
}

// applyHeavy carries out a load or a merge: a small merge shares the
// batch's transaction, anything else commits in its own.
func (x *Executor) applyHeavy(ctx context.Context, b *Batch, d *storage.Dataset, a Action, ev ploti.Event, noHolds bool, res Result) (Result, error) {
	link := ""
	if ev.Data.Links != nil {
		link = ev.Data.Links.Version
	}
	var v *ploti.Version
	var schema *ploti.Schema
	var err error
	if b.Share && a.Kind == Merge {
		if v, schema, err = x.versionAndSchema(ctx, b.ahead, true, d, a.Version, link); err != nil {
			res.Applied = false
			return res, x.fail(ctx, b, d, a, ev.ID, err)
		}
		if ts := shareable(d, a, v, schema); ts != nil {
			res.Stats, err = x.sharedMerge(ctx, b, d, v, ts, ev.ID, noHolds)
			res.Rows = res.Stats.Rows
			if err != nil && !errors.Is(err, ErrRetryPage) {
				res.Applied = false
				return res, x.fail(ctx, b, d, a, ev.ID, err)
			}
			return res, err
		}
	}
	if err := b.Flush(); err != nil {
		return res, err
	}
	var hd heavyDone
	if v != nil { // asked for above already
		hd, err = x.heavyWith(ctx, d, a, v, schema, ev.ID, ev.Data.Reason, noHolds)
	} else {
		hd, err = x.heavy(ctx, b.ahead, d, a, link, ev.ID, ev.Data.Reason, noHolds)
	}
	res.Rows, res.Stats = hd.rows, hd.stats
	if hd.loaded && a.Kind == Merge {
		// Its changes could not be merged (no changes files, a column
		// the table types otherwise): counted as what ran.
		res.Action.Kind = Load
	}
	if hd.committed {
		b.remember(d) // the row its transaction wrote, and no holds
	} else {
		b.forget(d.ID) // its own transaction may have written the row and holds
	}
	if err != nil {
		res.Applied = false
		return res, x.fail(ctx, b, d, a, ev.ID, err)
	}
	return res, nil
}

// bringsHeld reports whether an event brings the version the dataset
// holds.
func bringsHeld(d *storage.Dataset, ev ploti.Event) bool {
	return (ev.Type == ploti.EventUpdated || ev.Type == ploti.EventResyncRequired) && ev.Data.Version != nil &&
		*ev.Data.Version == d.Version && d.Version > 0 && d.Status == storage.StatusCurrent
}

func (x *Executor) onMajor() string {
	if x.OnMajor == "" {
		return OnMajorHold
	}
	return x.OnMajor
}

// light carries out a state-only action in the batch: DDL in tx at once,
// the registry row and holds when the batch flushes.
func (x *Executor) light(ctx context.Context, b *Batch, tx *storage.Tx, d *storage.Dataset, a Action, ev ploti.Event) error {
	switch a.Kind {
	case Pending:
		// No API call for a state-only event: the walk describes
		// the page's new datasets together (Batch.Undescribed).
		d.Status, d.StatusReason, d.SkipUntilRemoved = storage.StatusPending, storage.ReasonAwaitingFirstVersion, false
		d.Version, d.PreviousVersion = 0, 0
		if d.Title == "" && !slices.Contains(b.cache.undescribed, d.ID) {
			b.cache.undescribed = append(b.cache.undescribed, d.ID)
		}
	case AlterSchema:
		// Ploti released a version past the held one: its delay is over.
		b.deleteHolds(d.ID, storage.HoldServer)
		if err := x.addColumns(ctx, tx, d, ev); err != nil {
			return &Error{Op: "alter", DatasetID: d.ID, Version: a.Version, EventID: ev.ID, Err: err}
		}
	case HoldForReview:
		b.deleteHolds(d.ID, storage.HoldServer)
		detail, _ := json.Marshal(map[string]any{"pendingVersion": a.Version, "schemaVersion": ev.Data.SchemaVersion, "schemaChange": ev.Data.SchemaChange})
		since := ev.Timestamp
		b.putHold(storage.Hold{DatasetID: d.ID, Version: d.Version, Kind: storage.HoldLocal,
			Reason: "schema_review", Since: &since, Detail: detail})
		d.Status, d.StatusReason = storage.StatusHeld, storage.ReasonMajorSchemaChange
	case Removed:
		d.Status, d.StatusReason, d.SkipUntilRemoved = storage.StatusRemoved, ev.Data.Reason, false
		// Ploti checks a source only "while a subscription includes its
		// dataset": a missed check of one removed says nothing any more.
		d.StaleLastCheckedAt, d.StaleNextCheckBy = nil, nil
		b.deleteHolds(d.ID, "")
	case Stale:
		d.StaleLastCheckedAt, d.StaleNextCheckBy = ev.Data.LastCheckedAt, ev.Data.NextCheckBy
		if d.Status == storage.StatusCurrent || d.StatusReason == "" {
			d.StatusReason = storage.ReasonStale
		}
	case Delayed:
		since := ev.Data.Since
		if since == nil {
			since = &ev.Timestamp
		}
		b.putHold(storage.Hold{DatasetID: d.ID, Version: a.Version, Kind: storage.HoldServer,
			Reason: ev.Data.Reason, Since: since})
		// feed-events.txt: "version is the version you hold, which stays
		// current meanwhile": the status stays; the hold row and the reason
		// tell of the wait.
		if d.Version == 0 {
			d.Status, d.StatusReason = storage.StatusPending, ev.Data.Reason
		} else if d.Status == storage.StatusCurrent {
			d.StatusReason = ev.Data.Reason
		}
	}
	b.putDataset(d)
	return nil
}

// addColumns adds to d's table (and history) the columns a MINOR
// schema_changed adds that the table does not have yet.
func (x *Executor) addColumns(ctx context.Context, tx *storage.Tx, d *storage.Dataset, ev ploti.Event) error {
	have := map[string]bool{}
	for _, c := range d.Columns {
		have[c.Name] = true
	}
	var added, add []ploti.Column
	if ev.Data.SchemaChange != nil { // absent: the updated's schema brings the columns
		added = ev.Data.SchemaChange.Added
	}
	for _, c := range added {
		if !have[c.Name] {
			add = append(add, c)
		}
	}
	if err := tx.Tables().AddColumns(ctx, d.Table, add); err != nil {
		return err
	}
	if err := x.widenHistory(ctx, tx, d, append(slices.Clone(d.Columns), add...)); err != nil {
		return err
	}
	d.Columns = append(d.Columns, add...)
	return nil
}

// fail records a dataset-level failure in the batch and marks the event
// seen, so the walk goes on; the next sync repairs the dataset by reloading
// its current version. A cancelled sync is returned as it is and the event
// stays unrecorded.
func (x *Executor) fail(ctx context.Context, b *Batch, d *storage.Dataset, a Action, eventID string, cause error) error {
	if stop := x.stopsTheWalk(ctx, cause); stop != nil {
		return stop
	}
	gone := errors.Is(cause, ErrGone)
	err := &Error{Op: a.Kind.String(), DatasetID: d.ID, Version: a.Version, EventID: eventID, Err: cause}
	tx, terr := b.Tx(ctx)
	if terr != nil {
		return terr
	}
	fresh, _, ferr := b.dataset(ctx, d.ID)
	if ferr == nil && fresh != nil {
		d = fresh
	}
	now := tx.Now
	// docs/wire.md 8.6: an event for a dataset a manifest listed as
	// rebuilding "is applied through the versions API when its files can
	// be had; otherwise it stays pending and the next sync's manifest
	// loads it" (reloadRebuilt asks it while the reason is rebuilding).
	waits := eventID != "" && a.Kind.Heavy() && !gone && d.StatusReason == storage.ReasonRebuilding && d.Status != storage.StatusRemoved &&
		d.Status != storage.StatusFailed && !errors.Is(cause, ErrBadInput) && !errors.Is(cause, ErrNoCurrent)
	switch {
	case gone:
		d.SkipUntilRemoved = true
		d.StatusReason, d.LastError = storage.ReasonLeftSubscription, err.Error()
	case errors.Is(cause, ErrNoCurrent):
		d.Status, d.StatusReason = storage.StatusPending, storage.ReasonAwaitingFirstVersion
	case waits:
		d.LastError = err.Error() // status and reason stay: pending (or current) while rebuilding
	default:
		d.Status, d.StatusReason, d.LastError, d.FailedAt = storage.StatusFailed, err.Error(), err.Error(), &now
	}
	b.putDataset(d)
	if eventID != "" {
		if merr := b.markApplied(ctx, eventID); merr != nil {
			return merr
		}
	}
	if gone || waits || errors.Is(cause, ErrNoCurrent) {
		// Not a failure: the docs' own path (skip until removed; pending).
		x.log().Info("dataset not applied",
			slog.String("dataset", d.ID), slog.Int("version", a.Version), slog.String("why", d.StatusReason))
		return nil
	}
	x.log().Warn("dataset failed; its last good version stays",
		slog.String("dataset", d.ID), slog.Int("version", a.Version), logs.Err(err))
	return err
}

// stopsTheWalk is why cause stops the walk rather than fail one dataset,
// or nil: a stopped sync, or a full disk.
func (x *Executor) stopsTheWalk(ctx context.Context, cause error) error {
	// Only a stopped sync stops the walk. Anything else that went wrong with
	// this dataset (bad input, or the API failing for it after retries) is
	// the dataset's: it fails, keeps its last good version, the walk goes on
	// and the next sync repairs it. If the whole API is down, the next page
	// read stops the sync anyway.
	if cerr := ctx.Err(); cerr != nil && !errors.Is(cause, cerr) {
		// DuckDB's "Interrupted!" does not say why: say it.
		return fmt.Errorf("%w: %w", cerr, cause)
	}
	if ctx.Err() != nil || errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	// A full disk is the machine's, not the dataset's: every dataset after
	// it would fail the same way, and marking this one failed is a write
	// too. The walk stops; the event stays unapplied for the next sync.
	if df := storage.AsDiskFull(cause, x.DB.Path()); df != nil {
		return df
	}
	return nil
}

// heavyDone is what a load or merge did: the table's rows after it, a
// merge's counts, whether it committed d as the dataset's registry row
// with no holds, and whether it loaded a snapshot.
type heavyDone struct {
	rows              int64
	stats             storage.MergeStats
	committed, loaded bool
}

// heavy loads or merges in a transaction of its own. noHolds says the
// dataset has none to end.
func (x *Executor) heavy(ctx context.Context, ah *ahead, d *storage.Dataset, a Action, link, eventID, reason string, noHolds bool) (heavyDone, error) {
	version := a.Version
	if a.Kind == ReloadCurrent {
		cur, err := x.Source.Current(ctx, d.ID)
		if err != nil {
			return heavyDone{}, notGone(err)
		}
		version, link = cur, ""
		if d.Version == cur && d.Status == storage.StatusCurrent {
			return heavyDone{rows: d.RowCount}, x.DB.Update(ctx, func(tx *storage.Tx) error { return tx.MarkApplied(ctx, eventID) })
		}
	}
	v, schema, err := x.versionAndSchema(ctx, ah, version == a.Version, d, version, link)
	if err != nil {
		if a.Kind == ReloadCurrent && version != a.Version { // not the version the event named
			err = notGone(err)
		}
		return heavyDone{}, err
	}
	return x.heavyWith(ctx, d, a, v, schema, eventID, reason, noHolds)
}

// versionAndSchema is a version and its schema: the answer the page's
// fetch ahead (ah, Executor.Ahead) had for the version, if it asked (a
// fault it met is this event's; wait is ahead.version's), else the API's.
// A version of the schema version the dataset holds has the columns and
// key the registry keeps, so its schema file is not fetched (a
// request each, 40 ms over a good office link; schemas-and-holds.txt: "A
// new dataset version with the same columns keeps the same schema
// version", and "a number is never reused for a different shape").
func (x *Executor) versionAndSchema(ctx context.Context, ah *ahead, wait bool, d *storage.Dataset, version int, link string) (*ploti.Version, *ploti.Schema, error) {
	v, err := ah.version(ctx, d.ID, version, wait)
	if err != nil {
		return nil, nil, err
	}
	if v == nil {
		if v, err = x.Source.Version(ctx, d.ID, version, link); err != nil {
			return nil, nil, err
		}
	}
	if held := heldSchema(d, v); held != nil {
		return v, held, nil
	}
	schema, err := x.Source.Schema(ctx, v)
	if err != nil {
		return nil, nil, err
	}
	return v, schema, nil
}

// heldSchema is the schema of version v when it is the dataset's held
// schema version (with no change from it), or nil.
func heldSchema(d *storage.Dataset, v *ploti.Version) *ploti.Schema {
	if v.SchemaVersion == "" || v.SchemaVersion != d.SchemaVersion || d.Version == 0 || len(d.Columns) == 0 {
		return nil
	}
	return &ploti.Schema{DatasetID: d.ID, SchemaVersion: d.SchemaVersion, Columns: d.Columns, KeyColumns: d.KeyColumns}
}

// heavyWith is heavy once the version and its schema are known.
func (x *Executor) heavyWith(ctx context.Context, d *storage.Dataset, a Action, v *ploti.Version, schema *ploti.Schema, eventID, reason string, noHolds bool) (heavyDone, error) {
	if a.CheckMajor && schema.ChangeFromPrevious.IsMajor() || (a.Kind == ReloadCurrent || a.Review) && x.review(d, schema) {
		return heavyDone{}, x.holdFromSchema(ctx, d, v, schema, eventID)
	}
	if a.Kind == Merge && len(v.Files.Changes) > 0 {
		if ts := tableOrder(d.Columns, schema); ts != nil { // new columns last
			st, err := x.merge(ctx, d, v, ts, eventID, noHolds)
			return heavyDone{rows: st.Rows, stats: st, committed: err == nil}, err
		}
	}
	rows, err := x.load(ctx, d, v, schema, eventID, reason)
	return heavyDone{rows: rows, committed: err == nil, loaded: true}, err
}

// commitVersion writes the registry row for a newly held version, ends
// its holds (endHolds: the caller does not know it has none), and records
// the event, inside the data's transaction.
func (x *Executor) commitVersion(ctx context.Context, tx *storage.Tx, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, rows int64, eventID string, endHolds bool) error {
	// A version loaded again (a repair, a rebootstrap) does not end Ploti's
	// hold on the next one: only a later version does (storage.EndHolds).
	heldVersion(d, v, schema, rows)
	if endHolds {
		stay, err := tx.EndHolds(ctx, map[string]int{d.ID: v.Version})
		if err != nil {
			return err
		}
		d.StatusReason = stay[d.ID]
	}
	if err := tx.PutDataset(ctx, d); err != nil {
		return err
	}
	if eventID != "" {
		return tx.MarkApplied(ctx, eventID)
	}
	return nil
}

// heldVersion sets a dataset's registry row to hold version v of rows rows.
func heldVersion(d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, rows int64) {
	d.Version = v.Version
	d.PreviousVersion = 0
	if v.PreviousVersion != nil {
		d.PreviousVersion = *v.PreviousVersion
	}
	d.SchemaVersion = v.SchemaVersion
	if d.SchemaVersion == "" {
		d.SchemaVersion = schema.SchemaVersion
	}
	d.Columns = schema.Columns
	if schema.KeyColumns != nil {
		d.KeyColumns = schema.KeyColumns
	}
	d.RowCount = rows
	d.Status, d.StatusReason, d.LastError, d.FailedAt, d.SkipUntilRemoved = storage.StatusCurrent, "", "", nil, false
	d.StaleLastCheckedAt, d.StaleNextCheckBy = nil, nil
	d.Source = storage.SourceFeed
}

// holdFromSchema holds a dataset whose resync turned out to bring a MAJOR
// change (docs/wire.md 8.2: decided by the version's schema).
func (x *Executor) holdFromSchema(ctx context.Context, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, eventID string) error {
	if d.Version == 0 {
		// Nothing held to keep: the first table may as well be this one.
		_, err := x.load(ctx, d, v, schema, eventID, "")
		return err
	}
	return x.DB.Update(ctx, func(tx *storage.Tx) error {
		if err := tx.DeleteHolds(ctx, d.ID, storage.HoldServer); err != nil {
			return err
		}
		since := tx.Now
		detail, _ := json.Marshal(map[string]any{"pendingVersion": v.Version, "schemaVersion": schema.SchemaVersion, "schemaChange": schema.ChangeFromPrevious})
		if err := tx.PutHold(ctx, storage.Hold{DatasetID: d.ID, Version: d.Version, Kind: storage.HoldLocal, Reason: "schema_review", Since: &since, Detail: detail}); err != nil {
			return err
		}
		d.Status = storage.StatusHeld
		d.StatusReason = storage.ReasonMajorSchemaChange
		if err := tx.PutDataset(ctx, d); err != nil {
			return err
		}
		if eventID == "" {
			return nil
		}
		return tx.MarkApplied(ctx, eventID)
	})
}

// review reports whether loading schema over the held version would skip a
// MAJOR schema change the hold policy wants reviewed: a reload from the
// current version (after a failure, a 410, an updated out of order) must
// not slip one past the review.
func (x *Executor) review(d *storage.Dataset, schema *ploti.Schema) bool {
	return x.onMajor() == OnMajorHold && d.Version > 0 && majorChanged(d.SchemaVersion, schema.SchemaVersion)
}

// majorChanged compares the MAJOR parts of two MAJOR.MINOR schema versions.
func majorChanged(old, cur string) bool {
	major := func(v string) string { m, _, _ := strings.Cut(v, "."); return m }
	return old != "" && cur != "" && major(old) != major(cur)
}

// LoadVersion loads a version's snapshot outside the event walk (bootstrap,
// repair, release), ending any holds. Errors come back unclassified: pass
// them to Fail.
// With review set, a version that brings a MAJOR schema change over the
// held one is held for review instead (the hold policy); Release loads
// without review.
func (x *Executor) LoadVersion(ctx context.Context, d *storage.Dataset, v *ploti.Version, review bool) (int64, error) {
	schema, err := x.Source.Schema(ctx, v)
	if err != nil {
		return 0, err
	}
	if review && x.review(d, schema) {
		return 0, x.holdFromSchema(ctx, d, v, schema, "")
	}
	return x.load(ctx, d, v, schema, "", "")
}

// Fail records a dataset-level failure outside the event walk; errors that
// are not the dataset's are returned unchanged.
func (x *Executor) Fail(ctx context.Context, d *storage.Dataset, version int, cause error) error {
	b := NewBatch(x.DB)
	b.Scope([]string{d.ID})
	err := x.fail(ctx, b, d, Action{Kind: Load, Version: version}, "", cause)
	if ferr := b.Flush(); ferr != nil {
		return ferr
	}
	return err
}

// Unreadable records an event that cannot be applied as read (DecodeErr,
// a field missing) as its dataset's bad input: the dataset fails and keeps
// its last good version, the walk goes on, and the next sync repairs it by
// reloading the current version. An event with no dataset is only marked
// seen. Either way an *Error comes back, for the sync's count of failures.
func (x *Executor) Unreadable(ctx context.Context, b *Batch, ev ploti.Event, cause error) error {
	if ev.Data.DatasetID == "" {
		if err := b.markApplied(ctx, ev.ID); err != nil {
			return err
		}
		return &Error{Op: "read", EventID: ev.ID, Err: fmt.Errorf("%w: %w", ErrBadInput, cause)}
	}
	d, _, err := x.State(ctx, b, ev.Data.DatasetID)
	if err != nil {
		return err
	}
	if d == nil {
		d = &storage.Dataset{ID: ev.Data.DatasetID, Status: storage.StatusPending}
	}
	return x.fail(ctx, b, d, Action{Kind: Skip}, ev.ID, fmt.Errorf("%w: %w", ErrBadInput, cause))
}
