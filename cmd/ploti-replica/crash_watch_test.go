package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// The crash harness for watched datasets ("Done when"): the same
// binary, proxy and kills as TestCrash, on a file that keeps two watched
// datasets and no subscription. The catch-up merges one of them through
// three recorded versions (walked back by previousVersion, a renamed
// record, older versions' rows read by id) and reads the other whole
// (counts_only, then recorded); kills land while the watches list, the
// changes, the rows by id and the whole read are asked for or read, and
// while DuckDB merges or swaps after them. After each scenario's last sync
// the file must be the one a sync that never crashed wrote, and each table
// the emulator's WatchTruth.
//
//	go test ./cmd/ploti-replica/ -run 'TestCrashWatch$' -v

const (
	crashWatchPermits = "ds_w_permits"
	crashWatchParcels = "ds_w_parcels"
)

// newCrashWatchWorld seeds version 1 of two datasets, watched, in no
// subscription.
func newCrashWatchWorld(t *testing.T) *crashWorld {
	t.Helper()
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.StartOn("127.0.0.1:0", ""); err != nil {
		t.Fatal(err)
	}
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddPlace(emulator.Place{ID: "fl-seminole", Name: "Seminole County, FL", Kind: "county", State: "fl"})
	parcelCols := []emulator.Column{crashParcelCols[0], crashParcelCols[1], crashParcelCols[2], crashParcelCols[3], crashParcelCols[5]}
	for _, s := range []emulator.DatasetSpec{
		{ID: crashWatchPermits, Title: "Permits", PlaceID: "fl-orange", KeyColumns: []string{"permit_number"}, Columns: crashPermitCols},
		{ID: crashWatchParcels, Title: "Parcels", PlaceID: "fl-seminole", KeyColumns: []string{"parcel_id"}, Columns: parcelCols},
	} {
		if err := em.AddDataset(s); err != nil {
			t.Fatal(err)
		}
	}
	w := &crashWorld{em: em, dir: t.TempDir()}
	w.publish(t, crashWatchPermits, permitsAt(0))
	w.publish(t, crashWatchParcels, parcelsAt(0, false))
	for _, id := range []string{crashWatchPermits, crashWatchParcels} {
		if _, err := em.Watch(id); err != nil {
			t.Fatal(err)
		}
	}
	w.proxy = newCrashProxy(t, em.URL())
	return w
}

// moreWatchVersions publishes what the catch-up walks: three recorded
// versions of permits (the last renames records), and parcels counts_only
// then recorded.
func (w *crashWorld) moreWatchVersions(t *testing.T, renamed []string) {
	t.Helper()
	for round := 1; round <= 3; round++ {
		var opts []emulator.PublishOption
		if round == 3 {
			opts = append(opts, emulator.WithRenames(renamed...))
		}
		// permitsAt's rows, without the column it adds from round 2
		w.publish(t, crashWatchPermits, strings.Replace(permitsAt(round), ", 'inspector ' || (i % 13) AS inspector", "", 1), opts...)
	}
	w.publish(t, crashWatchParcels, parcelsAt(1, false), emulator.WithChangeLog("counts_only"))
	w.publish(t, crashWatchParcels, parcelsAt(2, false))
}

// plotiNow is each watched dataset's latest Ploti version.
func plotiNow(em *emulator.Emulator) map[string]int {
	out := map[string]int{}
	for _, id := range []string{crashWatchPermits, crashWatchParcels} {
		pvs := em.PlotiVersions(id)
		out[id] = pvs[len(pvs)-1].Version
	}
	return out
}

// watchTruthMismatches compares each watched table with WatchTruth for the
// sync history synced (by dataset), every column; JSON by value.
func watchTruthMismatches(t *testing.T, path string, em *emulator.Emulator, synced map[string][]int) []string {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return []string{"open: " + err.Error()}
	}
	defer db.Close()
	var out []string
	for id, hist := range synced {
		d, err := db.Dataset(ctx, id)
		if err != nil {
			out = append(out, id+": "+err.Error())
			continue
		}
		if want := hist[len(hist)-1]; d.Version != want || d.Source != storage.SourceWatch {
			out = append(out, fmt.Sprintf("%s: holds v%d from %s, want v%d from watch", id, d.Version, d.Source, want))
			continue
		}
		truth, err := em.WatchTruth(ctx, id, hist)
		if err != nil {
			out = append(out, id+": truth: "+err.Error())
			continue
		}
		extra, missing, err := diffJSONByValue(ctx, db, storage.AsGeometry(db.Geometry(), d.Table, d.Columns), truth)
		switch {
		case err != nil:
			out = append(out, id+": compare: "+err.Error())
		case extra != 0 || missing != 0:
			out = append(out, fmt.Sprintf("%s v%d: %d rows not in the truth, %d truth rows missing", id, d.Version, extra, missing))
		}
	}
	return out
}

// diffJSONByValue is the emulator's Diff with JSON compared by value: a
// JSON value that crossed the wire comes back minified.
func diffJSONByValue(ctx context.Context, db *storage.DB, table, truth string) (extra, missing int64, err error) {
	src := "read_parquet(" + storage.Literal(truth) + ")"
	rows, err := db.SQL().QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+src+")")
	if err != nil {
		return 0, 0, err
	}
	var cols []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return 0, 0, err
		}
		q := storage.Ident(name)
		switch {
		case strings.HasPrefix(typ, "TIMESTAMP"):
			q = "CAST(CAST(" + q + " AS TIMESTAMPTZ) AS VARCHAR)"
		case strings.HasPrefix(typ, "GEOMETRY"):
			q = "ST_AsText(" + q + ")"
		case typ == "JSON":
			q = "CAST(json(" + q + ") AS VARCHAR)"
		default:
			q = "CAST(" + q + " AS VARCHAR)"
		}
		cols = append(cols, q+" AS "+storage.Ident(name))
	}
	rows.Close()
	sel := strings.Join(cols, ", ")
	err = db.SQL().QueryRowContext(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT %[1]s FROM %[2]s EXCEPT ALL SELECT %[1]s FROM %[3]s)),
		(SELECT count(*) FROM (SELECT %[1]s FROM %[3]s EXCEPT ALL SELECT %[1]s FROM %[2]s))`, sel, table, src)).Scan(&extra, &missing)
	return extra, missing, err
}

// watchCrashKind says what a kill interrupted on the watch side.
func watchCrashKind(from string, p killPlan, run childRun) string {
	lines := strings.Split(strings.TrimSpace(run.stderr), "\n")
	last := lines[len(lines)-1]
	var what string
	switch {
	case p.mode == "after" && strings.Contains(last, `"message":"merge watched versions"`):
		what = "watch merge, in DuckDB before its commit"
	case p.mode == "after" && strings.Contains(last, `"message":"swap in a watched dataset read whole"`):
		what = "watch whole read's swap, in DuckDB before its commit"
	case p.mode == "before":
		what = "waiting for " + run.hit
	case p.mode == "mid":
		what = "reading " + run.hit
	case run.hit == "rows":
		what = "after rows: the next page or call"
	case run.hit == "watch-changes":
		what = "after changes: the next read, or the merge"
	default:
		what = "after " + run.hit
	}
	return from + ": " + what
}

func TestCrashWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness builds the binary and runs it many times")
	}
	w := newCrashWatchWorld(t)
	w.bin = harnessBinary(t)
	h := newHarness(t, w, "watch crash harness", watchCrashKind)
	first := plotiNow(w.em)
	clean := func(name, from string, synced map[string][]int) (map[string]string, []string) {
		t.Helper()
		path := filepath.Join(w.dir, name)
		if from != "" {
			copyFile(t, from, path)
		}
		run := h.clean(path)
		if bad := watchTruthMismatches(t, path, w.em, synced); len(bad) > 0 {
			t.Fatalf("clean sync %s differs from the emulator's truth:\n%s", name, strings.Join(bad, "\n"))
		}
		fp, err := fingerprint(t, path)
		if err != nil {
			t.Fatal(err)
		}
		return fp, run.seq
	}
	base := filepath.Join(w.dir, "base.duckdb")
	clean("base.duckdb", "", map[string][]int{crashWatchPermits: {first[crashWatchPermits]}, crashWatchParcels: {first[crashWatchParcels]}})
	renamed := w.heldIDs(t, base, crashWatchPermits, "permit_number IN ('BP-000500', 'BP-001500', 'BP-003000')")
	w.moreWatchVersions(t, renamed)
	last := plotiNow(w.em)
	synced := map[string]map[string][]int{
		"catch-up":  {crashWatchPermits: {first[crashWatchPermits], last[crashWatchPermits]}, crashWatchParcels: {first[crashWatchParcels], last[crashWatchParcels]}},
		"bootstrap": {crashWatchPermits: {last[crashWatchPermits]}, crashWatchParcels: {last[crashWatchParcels]}},
	}
	want := map[string]map[string]string{}
	seqs := map[string][]string{}
	want["catch-up"], seqs["catch-up"] = clean("clean-catch-up.duckdb", base, synced["catch-up"])
	want["bootstrap"], seqs["bootstrap"] = clean("clean-bootstrap.duckdb", "", synced["bootstrap"])
	for _, k := range []string{"watches", "watch-changes", "rows", "info"} {
		if countKinds(seqs["catch-up"], k) == 0 {
			t.Fatalf("the catch-up made no %s request: %v", k, seqs["catch-up"])
		}
	}

	scenarios := scenarioPlan{seed: 12, counts: map[string]int{"bootstrap": crashShare(10), "catch-up": crashShare(24)},
		delays:  []time.Duration{0, time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 60 * time.Millisecond},
		resumes: func(i int) int { return i % 3 }, maxAt: 8, // more kills in the runs that resume
	}.scenarios(seqs)
	for i, sc := range scenarios {
		path := filepath.Join(w.dir, fmt.Sprintf("w%03d.duckdb", i))
		if sc.from == "catch-up" {
			copyFile(t, base, path)
		}
		h.play(i, path, sc, func() []string {
			fp, err := fingerprint(t, path)
			if err != nil {
				return []string{"read the file: " + err.Error()}
			}
			bad := append(diff(fp, want[sc.from]), watchTruthMismatches(t, path, w.em, synced[sc.from])...)
			return append(bad, leftBeside(path)...)
		})
		os.Remove(path)
	}
	h.report(len(scenarios), crashKills(25, 34, len(scenarios)))
}

// heldIDs reads record ids a file's dataset table holds.
func (w *crashWorld) heldIDs(t *testing.T, path, datasetID, where string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d, err := db.Dataset(ctx, datasetID)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.SQL().QueryContext(ctx, "SELECT _ploti_record_id FROM main."+storage.Ident(d.Table)+" WHERE "+where+" ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		rows.Scan(&id)
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		t.Fatalf("no rows of %s where %s", datasetID, where)
	}
	return ids
}
