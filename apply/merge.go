package apply

import (
	"context"
	"fmt"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// sharedMergeBytes bounds the changes files a merge may bring into the
// batch's transaction: larger merges commit on their own, so that a
// failure sends little work to be done again.
const sharedMergeBytes = 16 << 20

// shareable is the version's schema in the table's order (tableOrder)
// when the merge can join the batch's transaction, else nil: the same
// columns (no DDL, which fails a transaction on error), no MAJOR change to
// review, and small changes files of known size.
func shareable(d *storage.Dataset, a Action, v *ploti.Version, schema *ploti.Schema) *ploti.Schema {
	if a.CheckMajor && schema.ChangeFromPrevious.IsMajor() || len(v.Files.Changes) == 0 ||
		len(schema.Columns) != len(d.Columns) || d.Table == "" {
		return nil
	}
	var n int64
	for _, f := range v.Files.Changes {
		if f.Bytes == nil {
			return nil
		}
		n += *f.Bytes
	}
	if n > sharedMergeBytes {
		return nil
	}
	return tableOrder(d.Columns, schema)
}

// sharedMerge merges a small changes file in the batch's transaction, so
// that a run of updates shares the page's commit and bookkeeping instead of
// paying a commit each (about a sixth of a 100-row update). The
// version, its registry row and its event id still commit together, with
// the page's cursor. Errors from the API and downloads leave the batch as
// it was; an error in the transaction returns ErrRetryPage. schema is in
// the table's order (shareable's answer).
func (x *Executor) sharedMerge(ctx context.Context, b *Batch, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, eventID string, noHolds bool) (storage.MergeStats, error) {
	var total storage.MergeStats
	paths, ok, err := b.ahead.files(ctx, d.ID, v)
	if !ok {
		paths, err = x.Source.Download(ctx, v, "changes")
	}
	if err != nil {
		return total, err
	}
	// The files stay until the batch commits: its Flush checks and logs
	// them all at once (storage.Tables' FinishMerged).
	b.keep(x.Source, paths)
	for _, f := range v.Files.Changes {
		if f.Bytes != nil { // shareable knew them all
			b.bytes += *f.Bytes
		}
	}
	tx, err := b.Tx(ctx)
	if err != nil {
		return total, err
	}
	retry := func(err error) error {
		if cerr := ctx.Err(); cerr != nil { // a stopped sync: no retry, and say so
			return fmt.Errorf("%w: %w", cerr, err)
		}
		return fmt.Errorf("%w: %s v%d: %w", ErrRetryPage, d.ID, v.Version, err)
	}
	if err := checkChangesIDs(ctx, tx, paths); err != nil {
		return total, retry(err)
	}
	rows := d.RowCount
	if rows <= 0 {
		rows = -1
	}
	for _, p := range paths {
		m, err := tx.Tables().MergeDeferred(ctx, d.ID, v.Version, d.Table, schema.Columns, p, rows)
		if err != nil {
			return total, retry(err)
		}
		b.merged(m)
		rows = m.Rows
	}
	total.Rows = rows
	if err := x.afterMerge(ctx, tx, d, v, schema, paths); err != nil {
		return total, retry(err)
	}
	// The registry row, the end of its holds and the event id are written
	// at the batch's Flush, with the other rows of the page (a
	// statement each cost 2 ms an update in a catch-up of small updates).
	heldVersion(d, v, schema, total.Rows)
	if !noHolds {
		b.deleteHolds(d.ID, "")
	}
	b.putDataset(d)
	return total, b.markApplied(ctx, eventID)
}

// tableOrder is schema with its columns in the table's order, or nil when
// a changes file cannot be merged into the table: the schema drops or
// retypes a column the table has. The columns the table has come first, as
// it has them, then the schema's new ones in the schema's order: a MINOR
// change may add a column anywhere ("A MINOR change comes with a version
// that has changes to apply, compared over the columns both versions
// have"), but ALTER TABLE adds it at the table's end (decision 60).
func tableOrder(held []ploti.Column, schema *ploti.Schema) *ploti.Schema {
	byName := make(map[string]ploti.Column, len(schema.Columns))
	for _, c := range schema.Columns {
		byName[c.Name] = c
	}
	cols := make([]ploti.Column, 0, len(schema.Columns))
	have := make(map[string]bool, len(held))
	for _, c := range held {
		nc, ok := byName[c.Name]
		if !ok {
			return nil
		}
		a, _ := duckread.DuckType(c.Type)
		b, _ := duckread.DuckType(nc.Type)
		if a != b {
			return nil
		}
		cols, have[c.Name] = append(cols, nc), true
	}
	for _, c := range schema.Columns {
		if !have[c.Name] {
			cols = append(cols, c)
		}
	}
	out := *schema
	out.Columns = cols
	return &out
}

// merge merges a version's changes files in a transaction of its own;
// schema is in the table's order (tableOrder), its new columns last.
func (x *Executor) merge(ctx context.Context, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, eventID string, noHolds bool) (storage.MergeStats, error) {
	paths, err := x.Source.Download(ctx, v, "changes")
	if err != nil {
		return storage.MergeStats{}, err
	}
	defer x.Source.Discard(paths)
	var total storage.MergeStats
	err = x.DB.Update(ctx, func(tx *storage.Tx) error {
		if len(schema.Columns) > len(d.Columns) {
			if err := tx.Tables().AddColumns(ctx, d.Table, schema.Columns[len(d.Columns):]); err != nil {
				return err
			}
		}
		var err error
		if total, err = mergeFiles(ctx, tx, d, v, schema, paths); err != nil {
			return err
		}
		if err := x.afterMerge(ctx, tx, d, v, schema, paths); err != nil {
			return err
		}
		return x.commitVersion(ctx, tx, d, v, schema, total.Rows, eventID, !noHolds)
	})
	return total, err
}

// mergeFiles merges a version's changes files into the dataset's table.
func mergeFiles(ctx context.Context, tx *storage.Tx, d *storage.Dataset, v *ploti.Version, schema *ploti.Schema, paths []string) (storage.MergeStats, error) {
	var total storage.MergeStats
	if err := checkChangesIDs(ctx, tx, paths); err != nil {
		return total, err
	}
	// The registry's row count is the table's (every version it records
	// was committed with its count); unknown or zero, the merge counts.
	rows := d.RowCount
	if rows <= 0 {
		rows = -1
	}
	for _, p := range paths {
		st, err := tx.Tables().MergeChanges(ctx, d.ID, v.Version, d.Table, schema.Columns, p, rows)
		if err != nil {
			return total, err
		}
		total.Added += st.Added
		total.Changed += st.Changed
		total.Removed += st.Removed
		total.Rows, rows = st.Rows, st.Rows
	}
	return total, nil
}

// checkChangesIDs refuses a version's changes files that list a record id
// in more than one of them (storage.ChangesIDChecker), where the engine
// can tell: each merge checks only its own file.
func checkChangesIDs(ctx context.Context, tx *storage.Tx, paths []string) error {
	if c, ok := tx.Tables().(storage.ChangesIDChecker); ok {
		return c.CheckChangesIDs(ctx, paths)
	}
	return nil
}
