package replica

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

const dsWatched = "ds_fl_orange_inspections"

// watchCols has every column type, lists of several.
func watchCols() []emulator.Column {
	dec := &emulator.Precision{Precision: 14, Scale: 2}
	return []emulator.Column{
		{Name: "k", Type: "string"}, {Name: "s", Type: "string"}, {Name: "i", Type: "integer"}, {Name: "n", Type: "number"},
		{Name: "d", Type: "decimal", Precision: dec}, {Name: "b", Type: "boolean"}, {Name: "day", Type: "date"},
		{Name: "ts", Type: "timestamp"}, {Name: "g", Type: "geometry"},
		{Name: "ls", Type: "list", Items: &emulator.Column{Type: "string"}},
		{Name: "ld", Type: "list", Items: &emulator.Column{Type: "decimal", Precision: dec}},
		{Name: "lli", Type: "list", Items: &emulator.Column{Type: "list", Items: &emulator.Column{Type: "integer"}}},
		{Name: "j", Type: "json"},
	}
}

// watchRows is round r of the watched dataset: n records, keyed k0000…,
// of which each round removes the first 3, adds 3 at the end and changes
// every seventh; values cover each type's corners (integers past 2^53,
// exact decimals, NaN and infinities, every GeoJSON type, nulls).
func watchRows(round, n int) []emulator.Row {
	geoms := []string{"POINT (-81.37924 28.538336)", "POINT Z (1 2 3)", "LINESTRING (0 0, 1 1.25)",
		"POLYGON ((0 0, 4 0, 4 4, 0 0), (1 1, 2 1, 1 1))", "MULTIPOINT ((1 2), (3 4))",
		"MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))", "POINT EMPTY",
		"GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (0 0, 1 1))", "MULTILINESTRING ((1 2, 3 4), (5 6, 7 8))"}
	var rows []emulator.Row
	for j := round * 3; j < n+round*3; j++ {
		v := j
		if j%7 == round%7 {
			v += 1000 * round // changed this round
		}
		row := emulator.Row{"k": fmt.Sprintf("k%04d", j), "s": fmt.Sprintf("permit \"%d\"\nnote", v),
			"i": int64(9007199254740993) + int64(v), "n": float64(v) / 3, "d": fmt.Sprintf("%d.%02d", v, v%100),
			"b": v%2 == 0, "day": emulator.DefaultStart.AddDate(0, 0, -v), "ts": emulator.DefaultStart.Add(-3600e9 * 1),
			"g": geoms[v%len(geoms)], "ls": []any{"a", fmt.Sprint(v)}, "ld": []any{"1.50", fmt.Sprintf("-%d.05", v%10)},
			"lli": []any{[]any{v, -v}, []any{}}, "j": fmt.Sprintf(`{"v": %d, "tags": ["x", null]}`, v)}
		switch v % 11 {
		case 1:
			row["n"] = math.NaN()
		case 2:
			row["n"], row["g"], row["s"] = math.Inf(1), nil, nil
		case 3:
			row["i"] = int64(math.MinInt64)
		}
		rows = append(rows, row)
	}
	return rows
}

// seedWatched adds the watched dataset, publishes its round 0 and watches
// it; it returns the dataset's Ploti version.
func seedWatched(tb testing.TB, em *emulator.Emulator, n int) int {
	tb.Helper()
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	em.AddTopic("development-activity", "Development activity")
	must(tb, em.AddDataset(emulator.DatasetSpec{ID: dsWatched, Title: "Orange County Inspections", PlaceID: "fl-orange",
		Topic: "development-activity", KeyColumns: []string{"k"}, Columns: watchCols()}))
	rel := mustPublishRows(tb, em, dsWatched, watchRows(0, n))
	if _, err := em.Watch(dsWatched); err != nil {
		tb.Fatal(err)
	}
	return rel.PlotiVersion
}

func mustPublishRows(tb testing.TB, em *emulator.Emulator, datasetID string, rows []emulator.Row, opts ...emulator.PublishOption) emulator.Release {
	tb.Helper()
	rel, err := em.Publish(context.Background(), datasetID, rows, opts...)
	if err != nil {
		tb.Fatalf("publish %s: %v", datasetID, err)
	}
	return rel
}

// mustOpenWatches opens a replica that keeps the member's watches and no
// subscription.
func mustOpenWatches(tb testing.TB, em *emulator.Emulator, path string, mod ...func(*Options)) *Replica {
	tb.Helper()
	if path == "" {
		path = freshReplica(tb)
	}
	opts := Options{APIURL: em.URL(), APIKey: em.APIKey(), Watch: true}
	for _, m := range mod {
		m(&opts)
	}
	r, err := Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// assertWatched checks a watched dataset's table against the emulator's
// truth for a watch client that synced at the Ploti versions synced (the
// first read whole, the last the one it must hold now): the registry holds
// the last as a watch, and every row and column equals WatchTruth's.
func assertWatched(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID string, synced ...int) {
	tb.Helper()
	assertWatchedAs(tb, r, em, datasetID, storage.StatusCurrent, synced...)
}

// assertWatchedAs is assertWatched for a dataset whose registry status is
// status (a watched dataset kept, removed, with its rows).
func assertWatchedAs(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID, status string, synced ...int) {
	tb.Helper()
	ctx := context.Background()
	want := synced[len(synced)-1]
	d, err := r.db.Dataset(ctx, datasetID)
	if err != nil {
		tb.Fatalf("registry row of %s: %v", datasetID, err)
	}
	if d.Source != storage.SourceWatch || d.Version != want || d.Status != status {
		tb.Fatalf("%s: source %s, version %d, status %s (%s); want watch, %d, %s", datasetID, d.Source, d.Version, d.Status, d.StatusReason, want, status)
	}
	truth, err := em.WatchTruth(ctx, datasetID, synced)
	if err != nil {
		tb.Fatalf("truth of %s %v: %v", datasetID, synced, err)
	}
	tdb, table := tableForDiff(tb, r, d)
	extra, missing := diffRows(tb, tdb, table, "read_parquet("+storage.Literal(truth)+")")
	var have int64
	if err := r.DB().QueryRowContext(ctx, "SELECT count(*) FROM "+storage.Ident(d.Table)).Scan(&have); err != nil {
		tb.Fatal(err)
	}
	if extra != 0 || missing != 0 {
		tb.Fatalf("%s v%d differs from the emulator's truth after syncs at %v: %d rows not in it, %d of it missing (%d rows)",
			datasetID, want, synced, extra, missing, have)
	}
	if d.RowCount != have {
		tb.Fatalf("%s registry row_count %d, table has %d", datasetID, d.RowCount, have)
	}
}

func latestPloti(tb testing.TB, em *emulator.Emulator, datasetID string) int {
	tb.Helper()
	pvs := em.PlotiVersions(datasetID)
	if len(pvs) == 0 {
		tb.Fatalf("%s has no Ploti version", datasetID)
	}
	return pvs[len(pvs)-1].Version
}

// diffRows compares two relations row by row (as multisets) over the
// second's columns: geometry by its WKT, timestamps as instants, JSON by
// its value (a JSON value that went through the wire comes back minified:
// its spacing is not data), everything else by its text. The emulator's
// Diff and DiffWatch compare JSON by its text, which a feed's Parquet
// keeps and a watch's JSON cannot: a row {"v": 1} comes over the wire as
// {"v":1}.
func diffRows(tb testing.TB, db *sql.DB, table, truth string) (extra, missing int64) {
	tb.Helper()
	sel := comparableColumns(tb, db, truth)
	if err := db.QueryRow(fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT %[1]s FROM %[2]s EXCEPT ALL SELECT %[1]s FROM %[3]s)),
		(SELECT count(*) FROM (SELECT %[1]s FROM %[3]s EXCEPT ALL SELECT %[1]s FROM %[2]s))`, sel, table, truth)).Scan(&extra, &missing); err != nil {
		tb.Fatal(err)
	}
	return extra, missing
}

// comparableColumns is the select list of truth's columns, each as text
// that compares equal across the types a table and a truth may give it
// (timestamps as TIMESTAMPTZ, geometry as WKT, JSON normalised).
func comparableColumns(tb testing.TB, db *sql.DB, truth string) string {
	tb.Helper()
	rows, err := db.Query("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM " + truth + ")")
	if err != nil {
		tb.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			tb.Fatal(err)
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
	return strings.Join(cols, ", ")
}
