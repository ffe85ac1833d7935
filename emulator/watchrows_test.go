package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

const dsTypes = "ds_types"

// typeColumns has every column type, lists of several.
func typeColumns() []Column {
	dec := &Precision{Precision: 14, Scale: 2}
	return []Column{
		{Name: "k", Type: "string"}, {Name: "s", Type: "string"}, {Name: "i", Type: "integer"}, {Name: "n", Type: "number"},
		{Name: "d", Type: "decimal", Precision: dec}, {Name: "b", Type: "boolean"}, {Name: "day", Type: "date"},
		{Name: "ts", Type: "timestamp"}, {Name: "g", Type: "geometry"},
		{Name: "ls", Type: "list", Items: &Column{Type: "string"}},
		{Name: "ld", Type: "list", Items: &Column{Type: "decimal", Precision: dec}},
		{Name: "lli", Type: "list", Items: &Column{Type: "list", Items: &Column{Type: "integer"}}},
		{Name: "lts", Type: "list", Items: &Column{Type: "timestamp"}},
		{Name: "j", Type: "json"},
		{Name: "with \"quote\"", Type: "string"},
	}
}

// docs/wire.md 9, "Row values in JSON": each type's rendering, row by row, the
// same in a whole read, an ids read and a changes entry.
func TestWatchRows_Values(t *testing.T) {
	em := mustEmulator(t)
	if err := em.AddDataset(DatasetSpec{ID: dsTypes, PlaceID: "fl-orange", KeyColumns: []string{"k"}, Columns: typeColumns()}); err != nil {
		t.Fatal(err)
	}
	est := time.FixedZone("EST", -5*3600)
	rows := []Row{
		{"k": "a", "s": "é \"q\"\n\\", "i": int64(42), "n": 0.1, "d": "1234.50", "b": true,
			"day": time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), "ts": time.Date(2026, 11, 20, 5, 6, 7, 0, est),
			"g": "POINT (-81.12345678901235 28.5)", "ls": []any{"x", nil}, "ld": []any{"1.5", "-0.05"},
			"lli": []any{[]any{1, 2}, []any{}}, "lts": []any{time.Date(2026, 1, 2, 3, 4, 5, 250000000, time.UTC)},
			"j": `{"z": [1, "two", null]}`, "with \"quote\"": "v"},
		{"k": "b", "i": int64(9007199254740993), "n": math.NaN(), "d": "-0.05", "b": false,
			"ts": time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC),
			"g":  "POLYGON ((0 0, 4 0, 4 4, 0 0), (1 1, 2 1, 1 1))", "j": `"text"`},
		{"k": "c", "i": int64(-9007199254740993), "n": math.Inf(1), "g": "MULTIPOINT ((1 2), (3 4))", "j": `3`},
		{"k": "d", "i": int64(9007199254740992), "n": math.Inf(-1), "g": "GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (0 0, 1 1))"},
		{"k": "e", "i": int64(math.MinInt64), "n": 1e300, "g": "POINT Z (1 2 3)", "ts": time.Date(1969, 12, 31, 23, 59, 59, 500000000, time.UTC),
			"lts": []any{nil}, "lli": []any{nil, []any{nil}}},
		{"k": "f", "g": "POINT EMPTY"},
		{"k": "g", "g": "MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5)))"},
		{"k": "h"},
	}
	want := map[string]map[string]string{
		"a": {"s": `"é \"q\"\n\\"`, "i": `42`, "n": `0.1`, "d": `"1234.50"`, "b": `true`, "day": `"2026-11-20"`,
			"ts": `"2026-11-20T10:06:07Z"`, "g": `{"type":"Point","coordinates":[-81.12345678901235,28.5]}`,
			"ls": `["x",null]`, "ld": `["1.50","-0.05"]`, "lli": `[[1,2],[]]`, "lts": `["2026-01-02T03:04:05.25Z"]`,
			"j": `{"z":[1,"two",null]}`, "with \"quote\"": `"v"`},
		"b": {"i": `"9007199254740993"`, "n": `"NaN"`, "d": `"-0.05"`, "b": `false`, "ts": `"2026-01-02T03:04:05.12Z"`,
			"g": `{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,0]],[[1,1],[2,1],[1,1]]]}`, "j": `"text"`},
		"c": {"i": `"-9007199254740993"`, "n": `"Infinity"`, "g": `{"type":"MultiPoint","coordinates":[[1,2],[3,4]]}`, "j": `3`},
		"d": {"i": `9007199254740992`, "n": `"-Infinity"`,
			"g": `{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]},{"type":"LineString","coordinates":[[0,0],[1,1]]}]}`},
		"e": {"i": `"-9223372036854775808"`, "n": `1e300`, "g": `{"type":"Point","coordinates":[1,2,3]}`,
			"ts": `"1969-12-31T23:59:59.5Z"`, "lts": `[null]`, "lli": `[null,[null]]`},
		"f": {"g": `{"type":"Point","coordinates":[]}`},
		"g": {"g": `{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]]}`},
		"h": {},
	}
	rel, err := em.Publish(t.Context(), dsTypes, rows, WithChangeLog("recorded"))
	if err != nil {
		t.Fatal(err)
	}
	_, whole := allRows(t, em, dsTypes, "limit=3")
	var ids []string
	for _, r := range whole {
		ids = append(ids, str(t, r["_ploti_record_id"]))
	}
	_, byID := allRows(t, em, dsTypes, "ids="+strings.Join(ids, ","))
	_, ch := getChanges(t, em, dsTypes, rel.PlotiVersion, "")
	if len(whole) != len(rows) || len(byID) != len(rows) || len(ch.Changes) != len(rows) {
		t.Fatalf("rows: %d whole, %d by id, %d changes", len(whole), len(byID), len(ch.Changes))
	}
	for i, r := range whole {
		var fromChanges map[string]json.RawMessage
		if err := json.Unmarshal(ch.Changes[i].Row, &fromChanges); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r, byID[i]) || !reflect.DeepEqual(r, fromChanges) {
			t.Fatalf("row %d differs:\nwhole   %v\nby id   %v\nchanges %v", i, r, byID[i], fromChanges)
		}
		k := str(t, r["k"])
		if str(t, r["_ploti_place_id"]) != "fl-orange" || len(r) != len(typeColumns())+2 {
			t.Fatalf("row %s: %v", k, r)
		}
		for _, c := range typeColumns()[1:] {
			exp, ok := want[k][c.Name]
			if !ok {
				exp = "null"
			}
			if got := string(r[c.Name]); got != exp {
				t.Errorf("row %s column %s: %s, want %s", k, c.Name, got, exp)
			}
		}
	}
}

// docs/wire.md 9: "A read that pages stays on the version its first page had;
// its cursor answers 410 expired once that version has been superseded for
// an hour."
func TestWatchRows_PagingPinned(t *testing.T) {
	em := mustEmulator(t)
	var rows []Row
	for i := range 1205 {
		rows = append(rows, permit(fmt.Sprintf("P-%04d", i), "1.00", -81))
	}
	r1 := mustPublish(t, em, rows)
	st, p1 := getRows(t, em, dsPermits, "")
	if st != 200 || len(p1.Rows) != 500 || p1.NextCursor == nil || *p1.Version != r1.PlotiVersion || len(p1.Columns) != len(permitColumns()) {
		t.Fatalf("first page: %d, %d rows, next %v", st, len(p1.Rows), p1.NextCursor)
	}
	if _, p := getRows(t, em, dsPermits, "limit=1000"); len(p.Rows) != 1000 {
		t.Fatalf("limit 1000: %d rows", len(p.Rows))
	}
	r2 := mustPublish(t, em, rows[:1000], SkipReview())
	st, p2 := getRows(t, em, dsPermits, "cursor="+url.QueryEscape(*p1.NextCursor)+"&limit=1000")
	if st != 200 || *p2.Version != r1.PlotiVersion || len(p2.Rows) != 705 || p2.NextCursor != nil {
		t.Fatalf("second page after a new version: %d v%v %d rows next %v", st, p2.Version, len(p2.Rows), p2.NextCursor)
	}
	if got := str(t, p2.Rows[704]["permit_number"]); got != "P-1204" {
		t.Fatalf("last row of the pinned version: %s", got)
	}
	if _, p := getRows(t, em, dsPermits, ""); *p.Version != r2.PlotiVersion {
		t.Fatalf("a new read starts on the latest: v%d", *p.Version)
	}
	em.Advance(RowsCursorLife - time.Second)
	if st, _ := getRows(t, em, dsPermits, "cursor="+url.QueryEscape(*p1.NextCursor)); st != 200 {
		t.Fatalf("cursor just inside the hour: %d", st)
	}
	em.Advance(time.Second)
	var eb errorBody
	if st := apiGet(t, em, "/v1/datasets/"+dsPermits+"/rows?cursor="+url.QueryEscape(*p1.NextCursor), &eb); st != 410 || eb.Error.Code != "expired" {
		t.Fatalf("cursor of a version superseded an hour ago: %d %q", st, eb.Error.Code)
	}
	// the latest version's cursors never expire
	em.Advance(48 * time.Hour)
	_, p3 := getRows(t, em, dsPermits, "limit=10")
	if st, _ := getRows(t, em, dsPermits, "cursor="+url.QueryEscape(*p3.NextCursor)); st != 200 {
		t.Fatalf("cursor of the latest version: %d", st)
	}
}

// docs/wire.md 9: with ids, "the rows of those ids that exist now (an id absent
// from the answer no longer exists)"; ids at most 500; reading 3: an ids=
// read pages, sending the same ids.
func TestWatchRows_IDs(t *testing.T) {
	em := mustEmulator(t)
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-2", "2.00", -81), permit("P-3", "3.00", -81)})
	mustPublish(t, em, []Row{permit("P-1", "1.00", -81), permit("P-3", "3.50", -81)}, SkipReview())
	_, rows := allRows(t, em, dsPermits, "ids=rec_d1_3,rec_d1_2,rec_nope,rec_d1_3,rec_d1_1&limit=2")
	var got []string
	for _, r := range rows {
		got = append(got, str(t, r["_ploti_record_id"])+"="+str(t, r["valuation"]))
	}
	if strings.Join(got, " ") != "rec_d1_3=3.50 rec_d1_1=1.00" {
		t.Fatalf("ids read: %v", got)
	}
	_, p := getRows(t, em, dsPermits, "ids=rec_d1_3,rec_d1_1&limit=1")
	many := strings.TrimSuffix(strings.Repeat("rec_x,", MaxRowIDs+1), ",")
	for _, tc := range []struct{ name, query string }{
		{"501 ids", "ids=" + many},
		{"empty id", "ids=rec_d1_1,,rec_d1_2"},
		{"empty ids", "ids="},
		{"cursor with other ids", "ids=rec_d1_1&cursor=" + url.QueryEscape(*p.NextCursor)},
		{"ids cursor without ids", "cursor=" + url.QueryEscape(*p.NextCursor)},
		{"limit 1001", "limit=1001"},
		{"garbage cursor", "cursor=abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var eb errorBody
			if st := apiGet(t, em, "/v1/datasets/"+dsPermits+"/rows?"+tc.query, &eb); st != 400 || eb.Error.Code != "invalid_input" {
				t.Fatalf("%d %q, want 400 invalid_input", st, eb.Error.Code)
			}
		})
	}
	if st, p := getRows(t, em, dsPermits, "ids="+strings.TrimSuffix(strings.Repeat("rec_d1_1,", MaxRowIDs), ",")); st != 200 || len(p.Rows) != 1 {
		t.Fatalf("500 ids: %d, %d rows", st, len(p.Rows))
	}
}

// docs/wire.md 9 reading 4: "Before its first version a dataset answers rows
// with "version": null and no rows."
func TestWatchRows_BeforeFirstVersion(t *testing.T) {
	em := mustEmulator(t)
	st, p := getRows(t, em, dsPermits, "")
	if st != 200 || p.Version != nil || p.Rows == nil || len(p.Rows) != 0 || p.NextCursor != nil || len(p.Columns) != len(permitColumns()) {
		t.Fatalf("rows before the first version: %d %+v", st, p)
	}
	if st, p := getRows(t, em, dsPermits, "ids=rec_d1_1"); st != 200 || p.Version != nil || len(p.Rows) != 0 {
		t.Fatalf("ids before the first version: %d %+v", st, p)
	}
}

// A version's rows file is evicted once newer ones were read, and written
// again, byte for byte, when its read goes on: its cursors stay valid.
func TestWatchRows_EvictedFileWrittenAgain(t *testing.T) {
	em := mustEmulator(t)
	var rows []Row
	for i := range 30 {
		rows = append(rows, permit(fmt.Sprintf("P-%02d", i), fmt.Sprintf("%d.25", i), -81-float64(i)/7))
	}
	r1 := mustPublish(t, em, rows)
	_, first := getRows(t, em, dsPermits, "limit=7")
	path := em.abs(fmt.Sprintf("watch/d1/p%d-rows.jsonl", r1.PlotiVersion))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rowsCacheKeep {
		mustPublish(t, em, rows[:29-i], SkipReview())
		getRows(t, em, dsPermits, "limit=1")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("rows file of the oldest version still there: %v", err)
	}
	var rest []map[string]json.RawMessage
	for next := first.NextCursor; next != nil; {
		st, p := getRows(t, em, dsPermits, "limit=7&cursor="+url.QueryEscape(*next))
		if st != 200 {
			t.Fatalf("rows: %d", st)
		}
		rest, next = append(rest, p.Rows...), p.NextCursor
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("rows file written again differs (%v)", err)
	}
	if len(first.Rows)+len(rest) != 30 || str(t, rest[0]["permit_number"]) != "P-07" {
		t.Fatalf("read across the eviction: %d + %d rows", len(first.Rows), len(rest))
	}
}

// A release of a watched dataset writes its rows file at once (a held one
// when released); an unwatched one waits for its first whole read.
func TestWatchRows_preparedForWatched(t *testing.T) {
	em := mustEmulator(t)
	file := func(n int) bool {
		_, err := os.Stat(em.abs(fmt.Sprintf("watch/d1/p%d-rows.jsonl", n)))
		return err == nil
	}
	r1 := mustPublish(t, em, []Row{permit("P-1", "1.00", -81)})
	if file(r1.PlotiVersion) {
		t.Fatal("rows file of an unwatched dataset written before any read")
	}
	em.Watch(dsPermits)
	r2 := mustPublish(t, em, []Row{permit("P-1", "2.00", -81)})
	mustPublish(t, em, []Row{permit("P-1", "2.00", -81)}, Hold("row_drop"))
	r3, err := em.ReleaseHeld(dsPermits)
	if err != nil {
		t.Fatal(err)
	}
	if !file(r2.PlotiVersion) || !file(r3.PlotiVersion) {
		t.Fatalf("rows files of a watched dataset: %v %v", file(r2.PlotiVersion), file(r3.PlotiVersion))
	}
}
