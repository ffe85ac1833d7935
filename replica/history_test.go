package replica

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// heldVersions follows which versions a replica held of each dataset, a
// sync after another: the versions the history must answer for.
type heldVersions map[string][]int

func (h heldVersions) note(tb testing.TB, r *Replica) {
	tb.Helper()
	ds, err := r.db.Datasets(context.Background())
	must(tb, err)
	for _, d := range ds {
		if d.Version > 0 && !slices.Contains(h[d.ID], d.Version) {
			h[d.ID] = append(h[d.ID], d.Version)
		}
	}
}

// truthColumns lists the columns of a version's truth.
func truthColumns(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID string, version int) []string {
	tb.Helper()
	path, err := em.Truth(context.Background(), datasetID, version)
	must(tb, err)
	rows, err := r.DB().QueryContext(context.Background(), "SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet("+storage.Literal(path)+"))")
	must(tb, err)
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		must(tb, rows.Scan(&c))
		cols = append(cols, c)
	}
	return cols
}

// assertHistoryMatchesTruth reads a dataset's history as of each version
// the replica held and compares it, row by row and column by column, with
// the emulator's truth of that version; columns the history has beyond the
// version's (added later, or removed since) must be NULL where the
// version had none. Then, for every two versions, the diff against the
// truths' difference.
func assertHistoryMatchesTruth(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID string, versions []int) {
	tb.Helper()
	d := datasetRow(tb, r, datasetID)
	asOf := map[int]map[string]map[string]string{}
	truths := map[int]map[string]map[string]string{}
	at := publishedTimes(tb, r, datasetID)
	for i, v := range versions {
		want := truthRows(tb, r.DB(), em, datasetID, v)
		cols := truthColumns(tb, r, em, datasetID, v)
		asOf[v], truths[v] = textRows(tb, r.DB(), asOfQuery(r, d, v)), want
		sameAsTruth(tb, fmt.Sprintf("%s as of v%d", datasetID, v), asOf[v], want, cols)
		// The view: the rows whose span holds v.
		view := fmt.Sprintf("SELECT * EXCLUDE (%s, %s, %s, %s, %s, %s) FROM history.%s WHERE %[1]s <= %[8]d AND (%[2]s IS NULL OR %[2]s > %[8]d)",
			storage.ColValidFrom, storage.ColValidTo, storage.ColValidFromAt, storage.ColValidToAt, storage.ColHistChange, storage.ColOriginID,
			storage.Ident(d.Table), v)
		sameAsTruth(tb, fmt.Sprintf("history.%s at v%d", d.Table, v), textRows(tb, r.DB(), withGeometry(r, d, view)), want, cols)
		// As of a time: the version's publishedAt, when no later version
		// held was published at the same instant.
		if t, ok := at[v]; ok && (i == len(versions)-1 || !at[versions[i+1]].Equal(t)) {
			q := fmt.Sprintf("SELECT * FROM history.%s(%s)", storage.Ident(d.Table+"_at"), storage.Literal(t.UTC().Format(time.RFC3339Nano)))
			sameAsTruth(tb, fmt.Sprintf("%s at %s (v%d)", datasetID, t.UTC().Format(time.RFC3339), v), textRows(tb, r.DB(), withGeometry(r, d, q)), want, cols)
		}
	}
	for i, from := range versions {
		for _, to := range versions[i+1:] {
			df, err := r.Diff(context.Background(), datasetID, from, to)
			if err != nil {
				tb.Fatalf("diff %s v%d v%d: %v", datasetID, from, to, err)
			}
			want := truthChanges(truths[from], truths[to], true)
			var got kindList
			for _, c := range df.Changes {
				// Truths know no renames: a renamed record is its old id
				// removed and its new one added.
				if c.Change == storage.ChangeRenamed {
					got = append(got, "removed "+c.PreviousRecordID, "added "+c.RecordID)
					continue
				}
				got = append(got, c.Change+" "+c.RecordID)
				if c.Change != storage.ChangeChanged {
					continue
				}
				// Each changed column's old and new value is the truths'.
				for _, cc := range c.Columns {
					old, nw := truths[from][c.RecordID][cc.Name], truths[to][c.RecordID][cc.Name]
					if text(cc.Old) != old || text(cc.New) != nw {
						tb.Fatalf("diff %s v%d v%d, %s.%s: %q → %q, truths %q → %q", datasetID, from, to, c.RecordID, cc.Name, text(cc.Old), text(cc.New), old, nw)
					}
				}
				if len(c.Columns) == 0 {
					tb.Fatalf("diff %s v%d v%d: %s changed, no column named", datasetID, from, to, c.RecordID)
				}
			}
			sort.Strings(got)
			if !sameKinds(got, want) {
				tb.Fatalf("diff %s v%d v%d differs from the truths': %s", datasetID, from, to, kindsDiff(got, want))
			}
		}
	}
}

// Done when: "after merges, reloads, id replacements, MINOR and
// MAJOR schema changes and a removal, every dataset's history equals what
// the emulator's truth says each version held (as-of queries compared row
// by row for every version), and diff between any two versions equals the
// truth's difference".
func TestHistory_EveryVersionMatchesTheTruth(t *testing.T) {
	onlyInAFile(t, "history")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.History = []string{HistoryAll}; o.OnMajor = apply.OnMajorReload })
	held := heldVersions{}
	step := func(what string) {
		t.Helper()
		mustSync(t, r)
		held.note(t, r)
		for id, vs := range held {
			t.Run(fmt.Sprintf("%s/%s", what, id), func(t *testing.T) { assertHistoryMatchesTruth(t, r, em, id, vs) })
		}
	}
	step("bootstrap")

	publish := func(id string, rows []emulator.Row, opts ...emulator.PublishOption) emulator.Release {
		t.Helper()
		rel, err := em.Publish(ctx, id, rows, opts...)
		must(t, err)
		return rel
	}
	publish("ds_permits", permits(1))
	publish("ds_parcels", parcels(1))
	step("merges")

	// MINOR: a column added; the rows no change touched keep NULL in it.
	withUnits := append(slices.Clone(permitCols), emulator.Column{Name: "units", Type: "integer"})
	if rel := publish("ds_permits", withUnits2(permits(2), 3), emulator.WithSchema(withUnits, []string{"permit"})); rel.SchemaBump != "minor" {
		t.Fatalf("emulator: want MINOR, got %+v", rel)
	}
	step("minor")

	// Id replacements: renames (the same records under new ids) and a
	// share of ids replaced.
	if rel := publish("ds_parcels", parcels(2), emulator.WithRenames(renameIDs(t, r, "ds_parcels", 3)...)); rel.ResyncReason != "record_ids_changed" {
		t.Fatalf("emulator: want record_ids_changed, got %+v", rel)
	}
	step("renames")
	publish("ds_permits", withUnits2(permits(3), 2), emulator.WithReplacedIDs(0.2))
	step("replaced ids")

	// MAJOR, reloaded: a column removed and one retyped.
	majorCols := []emulator.Column{{Name: "parcel", Type: "string"}, {Name: "acres", Type: "string"},
		{Name: "units", Type: "integer"}, {Name: "geometry", Type: "geometry"}}
	rows := parcels(3)
	for _, row := range rows {
		delete(row, "uses")
		row["acres"] = fmt.Sprint(row["acres"])
	}
	if rel := publish("ds_parcels", rows, emulator.WithSchema(majorCols, []string{"parcel"}), emulator.SkipReview()); rel.SchemaBump != "major" {
		t.Fatalf("emulator: want MAJOR, got %+v", rel)
	}
	step("major")
	rows = parcels(4)
	for _, row := range rows {
		delete(row, "uses")
		row["acres"] = fmt.Sprint(row["acres"])
	}
	publish("ds_parcels", rows)
	step("merge after major")

	// A removal: the history keeps what was held; added back, the dataset
	// is reloaded at its current version and the history records what
	// differs.
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange"}}))
	publish("ds_permits", withUnits2(permits(4), 2))
	rows = parcels(5)
	for _, row := range rows {
		delete(row, "uses")
		row["acres"] = fmt.Sprint(row["acres"])
	}
	publish("ds_parcels", rows) // while removed: the replica never holds it
	step("removal")
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-orange", "fl-seminole"}}))
	step("added again")
}

// withUnits2 fills the units column of every nth row.
func withUnits2(rows []emulator.Row, every int) []emulator.Row {
	for i, row := range rows {
		if i%every == 0 {
			row["units"] = int64(i * 7)
		}
	}
	return rows
}

func text(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sameAsTruth compares rows read from the history with a version's truth,
// row by row and column by column; columns the history has beyond the
// version's (added later, or removed since) must be NULL.
func sameAsTruth(tb testing.TB, what string, got, want map[string]map[string]string, cols []string) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d rows, truth has %d", what, len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			tb.Fatalf("%s lacks record %s", what, id)
		}
		for _, c := range cols {
			if g[c] != w[c] {
				tb.Fatalf("%s, record %s, column %s: %q, truth %q", what, id, c, g[c], w[c])
			}
		}
		for c := range g {
			if !slices.Contains(cols, c) {
				tb.Fatalf("%s, record %s: column %s (not the version's) is %q", what, id, c, g[c])
			}
		}
	}
}

// publishedTimes reads when each version a dataset's history recorded was
// published, where known.
func publishedTimes(tb testing.TB, r *Replica, datasetID string) map[int]time.Time {
	tb.Helper()
	rows, err := r.DB().QueryContext(context.Background(), "SELECT version, published_at FROM _ploti.history_versions WHERE dataset_id = ? AND published_at IS NOT NULL", datasetID)
	must(tb, err)
	defer rows.Close()
	out := map[int]time.Time{}
	for rows.Next() {
		var v int
		var t time.Time
		must(tb, rows.Scan(&v, &t))
		out[v] = t
	}
	must(tb, rows.Err())
	return out
}

// asOfQuery is the SQL of a dataset's history as of version v, geometry as
// GEOMETRY whichever way the file stores it.
func asOfQuery(r *Replica, d *storage.Dataset, v int) string {
	return withGeometry(r, d, fmt.Sprintf("SELECT * FROM history.%s(%d)", storage.Ident(d.Table+"_as_of"), v))
}

// withGeometry reads q's geometry columns as GEOMETRY whichever way the
// file stores them.
func withGeometry(r *Replica, d *storage.Dataset, q string) string {
	if r.db.Geometry() != storage.GeometryWKB {
		return q
	}
	var repl []string
	for _, c := range d.Columns {
		if c.Type.Type == "geometry" {
			repl = append(repl, fmt.Sprintf("ST_GeomFromWKB(%[1]s) AS %[1]s", storage.Ident(c.Name)))
		}
	}
	if len(repl) == 0 {
		return q
	}
	return fmt.Sprintf("SELECT * REPLACE (%s) FROM (%s)", strings.Join(repl, ", "), q)
}
