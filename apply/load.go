package apply

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"

	"github.com/ploti-replica/ploti-replica/logs"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Prepared is a snapshot load made ready outside DuckDB: a version, its
// schema and its verified local files. Prepare makes one with API calls
// and downloads only, so that several can be made at once while DuckDB
// loads others; LoadPrepared loads them.
type Prepared struct {
	// Dataset is the registry row the load starts from; the load updates it.
	Dataset *storage.Dataset
	// Version is the version to load.
	Version *ploti.Version
	// NewTable says that no registry row names Dataset.Table yet: it was
	// chosen ahead (storage.DB.FreeTableNames), so a shared load creates the
	// table with CreateSnapshot, and a load alone chooses its name again.
	NewTable bool
	// LogDiff asks the load to record in _ploti.changes how the snapshot
	// differs from the table it replaces (storage.ReloadLogger's LogSnapshotDiff): a
	// dataset caught up from a later snapshot, past versions whose changes
	// files it does not read.
	LogDiff bool
	// Err is why the preparation failed; nothing is then loaded.
	Err error
	// Bytes are the snapshot's bytes in the spool.
	Bytes int64

	schema *ploti.Schema
	paths  []string    // the snapshot's parts
	stream Stream      // or the snapshot still downloading (Streamer), loaded as it arrives
	maps   []idMapFile // id maps to apply, oldest first
	hold   bool        // a MAJOR schema change over the held version: hold for review instead
	reason string      // the event's resync reason, if any
	// noMapsBetween: no version after the held one, up to and including
	// this one, replaced ids (PrepareOptions.NoIDMapsBetween).
	noMapsBetween bool
}

// duckBlock is DuckDB's block size: a table takes at least one.
const duckBlock = 256 << 10

// Footprint is about the bytes the prepared table takes in the file: its
// snapshot's, and at least one of DuckDB's 256 KiB blocks (a
// table of 1,000 rows took 280 KiB, DuckDB alone's too).
func (p *Prepared) Footprint() int64 { return max(p.Bytes, duckBlock) }

// PrepareOptions say how Prepare readies a load.
type PrepareOptions struct {
	// Review holds a version that brings a MAJOR schema change over the
	// held one for review, downloading nothing (the hold policy, as
	// LoadVersion).
	Review bool
	// NoIDMapsBetween says that no version after the held one, up to and
	// including the one loaded, replaced record ids: the caller saw each
	// of them in the log as an updated event, chained by previousVersion
	// from the held version ("feed.dataset.resync_required carries one reason. When
	// several apply, the first of these wins: 1. record_ids_changed": a
	// version that replaces ids never comes as an updated). The load then
	// follows no version back for an id map (skippedIDMaps), which costs a
	// version call each.
	NoIDMapsBetween bool
}

// Prepare gets what loading version v of d needs: the dataset's title,
// place and topic when d has none, the version's schema, and the
// snapshot's files (and id maps) in the spool. It touches no DuckDB state
// and may run for several datasets at once.
func (x *Executor) Prepare(ctx context.Context, d *storage.Dataset, v *ploti.Version, opts PrepareOptions) *Prepared {
	p := &Prepared{Dataset: d, Version: v, noMapsBetween: opts.NoIDMapsBetween}
	if p.schema, p.Err = x.Source.Schema(ctx, v); p.Err != nil {
		return p
	}
	if opts.Review && x.review(d, p.schema) {
		p.hold = true
		return p
	}
	x.fetch(ctx, p)
	return p
}

// fetch downloads a prepared load's snapshot and id maps, describing the
// dataset first when its row has no title.
func (x *Executor) fetch(ctx context.Context, p *Prepared) {
	d, v := p.Dataset, p.Version
	x.describe(ctx, d)
	if !x.stream(ctx, p) {
		if p.paths, p.Err = x.Source.Download(ctx, v, "snapshot"); p.Err != nil {
			return
		}
		for _, path := range p.paths {
			if st, err := os.Stat(path); err == nil {
				p.Bytes += st.Size()
			}
		}
	}
	resync := p.reason == ploti.ReasonRecordIDsChanged || v.ResyncReason != nil && *v.ResyncReason == ploti.ReasonRecordIDsChanged
	if v.Files.IDMap != nil && resync {
		m, err := x.Source.Download(ctx, v, "idMap")
		if err != nil {
			p.Err = err
			return
		}
		p.maps = append(p.maps, idMapFile{v.Version, m})
	}
	if p.noMapsBetween {
		return
	}
	skipped, err := x.skippedIDMaps(ctx, d, v)
	p.maps = append(skipped, p.maps...)
	p.Err = err
}

// Discard removes a prepared load's files.
func (x *Executor) Discard(p *Prepared) {
	x.closeStream(p)
	x.Source.Discard(p.paths)
	p.paths = nil
	for _, m := range p.maps {
		x.Source.Discard(m.paths)
	}
	p.maps = nil
}

// load loads a version's snapshot in a transaction of its own, with its
// registry row and the event id.
func (x *Executor) load(ctx context.Context, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, eventID, reason string) (int64, error) {
	p := &Prepared{Dataset: d, Version: v, schema: schema, reason: reason}
	x.fetch(ctx, p)
	if p.Err != nil {
		x.Discard(p)
		return 0, p.Err
	}
	return x.loadOne(ctx, p, eventID)
}

// loadOne loads a prepared snapshot in a transaction of its own and
// removes its files. A snapshot still downloading is loaded as it
// arrives; when that fails (the transfer, the file's sha256, or its rows),
// the transaction is rolled back and the snapshot is downloaded whole and
// loaded again, which refuses a bad file in the whole-file load's words.
func (x *Executor) loadOne(ctx context.Context, p *Prepared, eventID string) (int64, error) {
	defer x.Discard(p)
	if p.stream != nil && p.LogDiff {
		if err := x.whole(ctx, p); err != nil {
			return 0, err
		}
	}
	table := p.Dataset.Table
	rows, streamErr, err := x.loadOnce(ctx, p, eventID)
	if streamErr == nil || ctx.Err() != nil {
		return rows, err
	}
	x.log().Info("streamed load rolled back: downloading the snapshot whole",
		slog.String("dataset", p.Dataset.ID), slog.Int("version", p.Version.Version), logs.Err(streamErr))
	x.closeStream(p)
	p.Dataset.Table = table
	if p.paths, err = x.Source.Download(ctx, p.Version, "snapshot"); err != nil {
		return 0, err
	}
	rows, _, err = x.loadOnce(ctx, p, eventID)
	return rows, err
}

// loadOnce is loadOne's transaction; streamErr is the streamed load's
// own failure, when that is what failed.
func (x *Executor) loadOnce(ctx context.Context, p *Prepared, eventID string) (rows int64, streamErr, err error) {
	d, v, schema := p.Dataset, p.Version, p.schema
	// Once the table holds the snapshot, its files are removed while the
	// commit writes (unlinking a 484 MiB file took 0.15 s of a
	// 10M-row load when it came after).
	var discard sync.WaitGroup
	defer discard.Wait()
	if p.NewTable {
		d.Table = "" // chosen ahead: choose again, in this transaction
	}
	replaced := d.Version > 0
	err = x.DB.Update(ctx, func(tx *storage.Tx) error {
		if d.Table == "" {
			if err := tx.PutDataset(ctx, d); err != nil { // assigns the table name
				return err
			}
			fresh, err := tx.Dataset(ctx, d.ID)
			if err != nil {
				return err
			}
			d.Table = fresh.Table
		}
		rl, err := x.beforeReload(ctx, tx, d, v.Version, schema.Columns, p.LogDiff)
		if err != nil {
			return err
		}
		if err := x.logDiff(ctx, tx, p, d); err != nil {
			return err
		}
		if rows, err = x.loadTable(ctx, tx, p, d.Table, true); err != nil {
			if p.stream != nil {
				streamErr = err
			}
			return err
		}
		if paths := p.paths; paths != nil {
			p.paths = nil
			discard.Go(func() { x.Source.Discard(paths) })
		}
		if s := p.stream; s != nil {
			p.stream = nil
			discard.Go(s.Close)
		}
		if err := x.applyIDMaps(ctx, tx, d.ID, p.maps); err != nil {
			return err
		}
		if err := x.afterReload(ctx, tx, rl, d, storage.SourceFeed, v.Version, &v.PublishedAt, schema.Columns, p.maps); err != nil {
			return err
		}
		return x.commitVersion(ctx, tx, d, v, schema, rows, eventID, true)
	})
	if err == nil && replaced {
		x.swapped(ctx, d.ID, p.Footprint())
	}
	if err == nil {
		tookOver(d)
	}
	return rows, streamErr, err
}

// loadTable loads a prepared snapshot into table, replacing it or
// creating it: as it downloads when it is a stream, else from its files.
func (x *Executor) loadTable(ctx context.Context, tx *storage.Tx, p *Prepared, table string, replace bool) (int64, error) {
	if p.stream != nil {
		if sl, ok := tx.Tables().(storage.StreamLoader); ok {
			return sl.LoadSnapshotStream(ctx, table, p.schema.Columns, p.stream, replace)
		}
		if err := x.whole(ctx, p); err != nil {
			return 0, err
		}
	}
	if replace {
		return tx.Tables().LoadSnapshot(ctx, table, p.schema.Columns, p.paths)
	}
	return tx.Tables().CreateSnapshot(ctx, table, p.schema.Columns, p.paths)
}

func (x *Executor) applyIDMaps(ctx context.Context, tx *storage.Tx, id string, maps []idMapFile) error {
	for _, m := range maps {
		for _, path := range m.paths {
			if _, err := tx.Tables().ApplyIDMap(ctx, id, m.version, path, x.IDRefs); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkpointFreedMin is the least a snapshot swap must free before the
// executor checkpoints.
const checkpointFreedMin = 4 << 20

// swapped notes that a snapshot swap replaced a table of about bytes, and
// checkpoints once swaps since the last checkpoint have freed at least
// checkpointFreedMin or an eighth of the file. A replaced table's blocks
// are free for reuse only after a checkpoint: a large swap checkpoints at
// once, so that the next reuses them and the file stays near twice the
// table while a replica stays open (without it, each reload in a
// session added the table's size). A checkpoint costs time in the number
// of tables (0.1–0.3 s at 5,000), so small swaps wait until
// they add up: the file then grows by at most an eighth between
// checkpoints. Best effort: DuckDB refuses while another transaction runs.
func (x *Executor) swapped(ctx context.Context, id string, bytes int64) {
	cp, ok := x.DB.Engine().(storage.Checkpointer)
	if !ok {
		return // nothing kept aside to write back
	}
	x.freed += bytes
	limit := int64(checkpointFreedMin)
	if f, ok := cp.(storage.File); ok {
		if st, err := os.Stat(f.Path()); err == nil {
			limit = max(limit, st.Size()/8)
		}
	}
	if x.freed < limit {
		return
	}
	if err := cp.Checkpoint(ctx); err != nil {
		x.log().Debug("checkpoint after a snapshot swap", slog.String("dataset", id), logs.Err(err))
		return
	}
	x.freed = 0
}

// LoadPrepared loads prepared snapshots, all in one transaction when
// there are several (a commit each cost more than loading a
// small table), each with its registry row and the end of its holds; a
// version to review is held instead. If the shared transaction fails, each
// is loaded again in a transaction of its own, so that a bad file costs
// only its dataset. A snapshot still downloading (a Stream) is loaded on
// its own, as it arrives. It returns one error per load (nil: loaded or
// held), and removes the files.
func (x *Executor) LoadPrepared(ctx context.Context, ps []*Prepared) []error {
	errs := make([]error, len(ps))
	var shared, alone []int
	for i, p := range ps {
		switch {
		case p.Err != nil:
			errs[i] = p.Err
			x.Discard(p)
		case p.hold:
			errs[i] = x.holdFromSchema(ctx, p.Dataset, p.Version, p.schema, "")
		case p.stream != nil:
			alone = append(alone, i) // loaded as it arrives, in a transaction of its own
		default:
			shared = append(shared, i)
		}
	}
	x.loadShares(ctx, ps, shared, errs)
	for _, i := range alone {
		_, errs[i] = x.loadOne(ctx, ps[i], "")
	}
	return errs
}

// loadShares loads ps[i] for each i of shared in one transaction when
// there are several, and each in a transaction of its own when that
// fails (or there is one), setting errs[i].
func (x *Executor) loadShares(ctx context.Context, ps []*Prepared, shared []int, errs []error) {
	if len(shared) > 1 {
		err := x.loadShared(ctx, ps, shared)
		if err == nil || ctx.Err() != nil {
			for _, i := range shared {
				errs[i] = err
				x.Discard(ps[i])
			}
			return
		}
		x.log().Info("loading again, each dataset in a transaction of its own", logs.Err(err), slog.Int("datasets", len(shared)))
	}
	for _, i := range shared {
		_, errs[i] = x.loadOne(ctx, ps[i], "")
	}
}

// checkSharedIDs counts the record ids of the one-file snapshots of a
// shared load with one read of them all, where the engine can
// (storage.SnapshotIDChecker): each load then refuses on its counts
// instead of reading its ids again.
func checkSharedIDs(ctx context.Context, tx *storage.Tx, ps []*Prepared, idx []int) error {
	c, ok := tx.Tables().(storage.SnapshotIDChecker)
	if !ok {
		return nil
	}
	var files []string
	for _, i := range idx {
		if len(ps[i].paths) == 1 {
			files = append(files, ps[i].paths[0])
		}
	}
	if len(files) < 2 {
		return nil
	}
	return c.CheckSnapshotIDs(ctx, files)
}

// loadShared loads ps[i] for each i of idx in one transaction. The
// registry rows change only once it commits.
func (x *Executor) loadShared(ctx context.Context, ps []*Prepared, idx []int) error {
	rows := make([]*storage.Dataset, len(idx))
	loaded := map[string]int{} // the version each dataset loads, for the holds it ends
	var freed int64
	err := x.DB.Update(ctx, func(tx *storage.Tx) error {
		if err := checkSharedIDs(ctx, tx, ps, idx); err != nil {
			return err
		}
		for k, i := range idx {
			d, n, err := x.loadOneShared(ctx, tx, ps[i])
			if err != nil {
				return err
			}
			if d.Version > 0 {
				freed += ps[i].Footprint()
			}
			// As commitVersion: a version loaded again does not end Ploti's
			// hold on the next one.
			loaded[d.ID] = ps[i].Version.Version
			heldVersion(d, ps[i].Version, ps[i].schema, n)
			rows[k] = d
		}
		stay, err := tx.EndHolds(ctx, loaded)
		if err != nil {
			return err
		}
		for _, d := range rows {
			d.StatusReason = stay[d.ID]
		}
		return tx.PutDatasets(ctx, rows)
	})
	if err != nil {
		return err
	}
	for k, i := range idx {
		*ps[i].Dataset = *rows[k]
		ps[i].NewTable = false
		tookOver(ps[i].Dataset)
	}
	if freed > 0 {
		x.swapped(ctx, rows[0].ID, freed)
	}
	return nil
}

// loadOneShared loads p in a shared load's transaction, with its id maps
// and what its reload logs, and returns its registry row (a copy, as it
// was) and the rows loaded.
func (x *Executor) loadOneShared(ctx context.Context, tx *storage.Tx, p *Prepared) (*storage.Dataset, int64, error) {
	d := cloneDataset(p.Dataset)
	if d.Table == "" {
		return nil, 0, errors.New("shared load: " + d.ID + " has no table name")
	}
	fail := func(err error) (*storage.Dataset, int64, error) {
		return nil, 0, &Error{Op: "load", DatasetID: d.ID, Version: p.Version.Version, Err: err}
	}
	rl, err := x.beforeReload(ctx, tx, d, p.Version.Version, p.schema.Columns, p.LogDiff)
	if err != nil {
		return fail(err)
	}
	if err := x.logDiff(ctx, tx, p, d); err != nil {
		return fail(err)
	}
	load := tx.Tables().LoadSnapshot
	if p.NewTable {
		load = tx.Tables().CreateSnapshot
	}
	n, err := load(ctx, d.Table, p.schema.Columns, p.paths)
	if err != nil {
		return fail(err)
	}
	if err := x.applyIDMaps(ctx, tx, d.ID, p.maps); err != nil {
		return fail(err)
	}
	if err := x.afterReload(ctx, tx, rl, d, storage.SourceFeed, p.Version.Version, &p.Version.PublishedAt, p.schema.Columns, p.maps); err != nil {
		return fail(err)
	}
	return d, n, nil
}

// logDiff records how a prepared snapshot differs from the table it
// replaces, when the load asks for it and a table is held.
func (x *Executor) logDiff(ctx context.Context, tx *storage.Tx, p *Prepared, d *storage.Dataset) error {
	if !p.LogDiff || d.Version == 0 || d.Table == "" || p.NewTable {
		return nil
	}
	rlog, err := tx.ReloadLog()
	if err != nil {
		return err
	}
	_, err = rlog.LogSnapshotDiff(ctx, d.ID, p.Version.Version, d.Table, p.schema.Columns, p.paths)
	return err
}

// checkpoint writes what the engine keeps aside (a DuckDB file's WAL) into
// it; an engine that keeps nothing aside has nothing to do.
func (x *Executor) checkpoint(ctx context.Context) error {
	if cp, ok := x.DB.Engine().(storage.Checkpointer); ok {
		return cp.Checkpoint(ctx)
	}
	return nil
}
