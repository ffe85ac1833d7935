package duckdb

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// A reload (a resync, a repair, a 410, a watched dataset read whole)
// replaces a table and logs nothing by itself (docs/decisions.md 15). When
// something needs to know what it changed (a mark, or the dataset's
// history), the held table is digested before the swap: each record's id
// and a hash of its values, in a temporary table of the transaction. After
// the swap the new rows are hashed the same way and the two are compared
// by record id, inside DuckDB, through the version's id maps when it
// replaced ids.

var tempSeq atomic.Int64

// tempName is a fresh name for a temporary table of the transaction.
func tempName(kind string) string {
	return fmt.Sprintf("_ploti_%s_%d", kind, tempSeq.Add(1))
}

// DigestTable digests table (held, its columns) before a reload to next,
// the columns of the version to load. Columns next adds, or gives another
// type, are not hashed: a record counts as changed by them only when its
// new row has a value there.
func (tx *Tx) DigestTable(ctx context.Context, table string, held, next []ploti.Column) (storage.Digest, error) {
	dg := &digest{name: tempName("digest"), next: next}
	types := map[string]string{}
	for _, c := range held {
		if t, err := duckread.DuckType(c.Type); err == nil {
			types[c.Name] = t
		}
	}
	for _, c := range next {
		if t, err := duckread.DuckType(c.Type); err == nil && types[c.Name] == t {
			dg.cols = append(dg.cols, c)
		}
	}
	q := fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT %s AS id, %s AS h FROM main.%s",
		storage.Ident(dg.name), storage.Ident(storage.ColRecordID), rowHash(dg.cols), storage.Ident(table))
	if _, err := tx.tx.ExecContext(ctx, q); err != nil {
		return nil, fmt.Errorf("digest %s before its reload: %w", table, err)
	}
	return dg, nil
}

// rowHash is the SQL hash of a row's place id and the values of cols.
func rowHash(cols []ploti.Column) string {
	parts := []string{storage.Ident(storage.ColPlaceID)}
	for _, c := range cols {
		parts = append(parts, storage.Ident(c.Name))
	}
	return "hash(" + strings.Join(parts, ", ") + ")"
}

// Drop drops the digest's temporary table.
func (dg *digest) Drop(ctx context.Context, tx *Tx) {
	if dg != nil {
		tx.tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+storage.Ident(dg.name))
	}
}

// LogReload logs in _ploti.changes, as version's, what a reload of table
// changed against the digest of the held rows: ids added, removed, changed
// (another hash, or a value in a column the version added), and renamed
// (a held id the version's id maps, mapVersions oldest first, replaced;
// logged under its new id, as a watched version's renames are). It returns
// how many records it logged.
func (tx *Tx) LogReload(ctx context.Context, d storage.Digest, datasetID string, version int, table string, mapVersions []int) (int64, error) {
	tx.heavyWrite()
	dg := d.(*digest)
	defer dg.Drop(ctx, tx)
	held, drop, err := tx.heldIDs(ctx, "(SELECT id FROM "+storage.Ident(dg.name)+")", datasetID, mapVersions)
	if err != nil {
		return 0, err
	}
	defer drop()
	have := map[string]bool{}
	for _, c := range dg.cols {
		have[c.Name] = true
	}
	filled := []string{"false"}
	for _, c := range dg.next {
		if !have[c.Name] {
			filled = append(filled, storage.Ident(c.Name)+" IS NOT NULL")
		}
	}
	rows := fmt.Sprintf(`coalesce(n.id, o.held), CASE WHEN o.held IS NULL THEN 'added' WHEN n.id IS NULL THEN 'removed'
			WHEN o.held <> o.now THEN 'renamed' ELSE 'changed' END
		FROM (SELECT %[1]s AS id, %[2]s AS h, %[3]s AS filled FROM main.%[4]s) n
		FULL JOIN (SELECT h.held, h.now, d.h FROM %[5]s h JOIN %[6]s d ON d.id = h.held) o ON n.id = o.now
		WHERE o.held IS NULL OR n.id IS NULL OR o.held <> o.now OR n.h <> o.h OR n.filled`,
		storage.Ident(storage.ColRecordID), rowHash(dg.cols), strings.Join(filled, " OR "), storage.Ident(table), held, storage.Ident(dg.name))
	n, err := tx.logSet(ctx, datasetID, version, rows)
	if err != nil {
		return 0, fmt.Errorf("log the reload of %s v%d: %w", datasetID, version, err)
	}
	return n, nil
}

// heldIDs is a relation (held, now) of each id of rel (a relation with a
// column id, the held ids) and the id it carries after the id maps of
// mapVersions (NULL when a map left it out: it did not continue), and what
// drops it. Without maps the ids carry on.
func (tx *Tx) heldIDs(ctx context.Context, rel, datasetID string, mapVersions []int) (string, func(), error) {
	if len(mapVersions) == 0 {
		return fmt.Sprintf("(SELECT id AS held, id AS now FROM %s)", rel), func() {}, nil
	}
	name := tempName("held")
	drop := func() { tx.tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+storage.Ident(name)) }
	if _, err := tx.tx.ExecContext(ctx, fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT id AS held, id AS now FROM %s", storage.Ident(name), rel)); err != nil {
		return "", drop, fmt.Errorf("map held ids of %s: %w", datasetID, err)
	}
	for _, v := range mapVersions {
		q := fmt.Sprintf(`CREATE OR REPLACE TEMP TABLE %[1]s AS SELECT i.held, m.to_id AS now FROM %[1]s i
			LEFT JOIN _ploti.id_map m ON m.dataset_id = ? AND m.version = ? AND m.from_id = i.now`, storage.Ident(name))
		if _, err := tx.tx.ExecContext(ctx, q, datasetID, v); err != nil {
			return "", drop, fmt.Errorf("map held ids of %s through v%d's id map: %w", datasetID, v, err)
		}
	}
	return storage.Ident(name), drop, nil
}

// digest is a held table's ids and value hashes, kept for LogReload.
type digest struct {
	name string         // the temporary table
	cols []ploti.Column // the columns hashed: the held ones the next version keeps, same type
	next []ploti.Column // the next version's columns
}
