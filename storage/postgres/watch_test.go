package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/storage"
)

// "Bad input", on PostgreSQL: rows that do not fit are refused
// in the DuckDB engine's words, naming the file, and the held table stays.
// (A string with a NUL fits: it loads with U+FFFD, TestTx_LoadRows_NUL.)
func TestTx_LoadRows_refusesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	good := mustNDJSON(t, `{"_ploti_record_id":"r1","i":1,"d":"1.00"}`)
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadRows(ctx, "w", jsonCols, []string{good}); return err }); err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	for _, tc := range []struct{ name, row, want string }{
		{"an integer with a fraction", `{"_ploti_record_id":"r1","i":1.5}`, "column i: not an integer: 1.5"},
		{"an integer past 64 bits", `{"_ploti_record_id":"r1","i":"99999999999999999999"}`, "INT64"},
		{"a decimal past its scale", `{"_ploti_record_id":"r1","d":"1.234"}`, "column d: not a DECIMAL(38,2) exactly: 1.234"},
		{"a date out of range", `{"_ploti_record_id":"r1","dt":"2026-13-01"}`, "date field value out of range"},
		{"a geometry of no GeoJSON type", `{"_ploti_record_id":"r1","g":{"type":"Circle","coordinates":[1,2]}}`, "column g: not a GeoJSON geometry: type Circle"},
		{"a repeated id", `{"_ploti_record_id":"r1"}` + "\n" + `{"_ploti_record_id":"r1"}`, "0 null and 1 repeated _ploti_record_id"},
		{"a null id", `{"_ploti_place_id":"p"}`, "1 null and 0 repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := mustNDJSON(t, tc.row)
			err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadRows(ctx, "w", jsonCols, []string{file}); return err })
			var de *storage.DataError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rows.ndjson") {
				t.Fatalf("err = %v, want a DataError naming the file and saying %q", err, tc.want)
			}
			if got := state(t, r, "SELECT count(*) || ' ' || min(d)::text FROM w"); got != "1 1.00" {
				t.Fatalf("held table after the refusal: %s", got)
			}
		})
	}
}

func TestTx_LoadRows_noFilesMakesAnEmptyTable(t *testing.T) {
	ctx := context.Background()
	db, u := mustOpen(t)
	if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.LoadRows(ctx, "w", jsonCols, nil); return err }); err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, u)
	if n := count(t, r, "SELECT count(*) FROM w"); n != 0 {
		t.Fatalf("%d rows", n)
	}
	if n := count(t, r, "SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.w'::regclass AND attnum > 0"); n != int64(len(jsonCols)+2) {
		t.Fatalf("%d columns", n)
	}
}

// mergeFixture loads r1..r5 into w (columns s, i) and a user table that
// references its ids.
func mergeFixture(t *testing.T) (*DB, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	db, u := mustOpen(t)
	var rows []string
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		rows = append(rows, `{"_ploti_record_id":"`+id+`","s":"old `+id+`","i":1}`)
	}
	file := mustNDJSON(t, rows...)
	err := db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.LoadRows(ctx, "w", jsonCols[:2], []string{file}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "CREATE TABLE public.notes (record text, note text); INSERT INTO public.notes VALUES ('r4', 'call back')")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return db, mustReader(t, u)
}

func TestTx_MergeWatch(t *testing.T) {
	ctx := context.Background()
	db, r := mergeFixture(t)
	rows := mustNDJSON(t,
		`{"_ploti_record_id":"r2","s":"new r2","i":2}`,
		`{"_ploti_record_id":"r9","s":"new r9","i":9}`,
		`{"_ploti_record_id":"r4b","s":"old r4","i":1}`,
		`{"_ploti_record_id":"rX","s":"not asked for","i":0}`)
	m := storage.WatchMerge{DatasetID: "ds_w", Table: "w", Columns: jsonCols[:2], RowsBefore: 5,
		Held:    []storage.Touch{{ID: "r2", Version: 13, Change: "changed"}, {ID: "r3", Version: 13, Change: "removed"}, {ID: "r4", Version: 13, Change: "renamed"}},
		New:     []storage.Touch{{ID: "r9", Version: 13, Change: "added"}, {ID: "r4b", Version: 13, Change: "renamed"}},
		Rows:    []storage.RowSource{{Path: rows, IDs: []string{"r2", "r9", "r4b"}}},
		Log:     []storage.Touch{{ID: "r9", Version: 13, Change: "added"}, {ID: "r2", Version: 13, Change: "changed"}, {ID: "r3", Version: 13, Change: "removed"}, {ID: "r4b", Version: 13, Change: "renamed"}},
		Renames: []storage.Rename{{Version: 13, From: "r4", To: "r4b"}}, IDRefs: []storage.IDRef{{Table: "notes", Column: "record", DatasetID: "ds_w"}}}
	var st storage.MergeStats
	if err := db.Update(ctx, func(tx *Tx) (err error) { st, err = tx.MergeWatch(ctx, m); return err }); err != nil {
		t.Fatal(err)
	}
	if st.Rows != 5 || st.Removed != 3 || st.Added != 3 {
		t.Fatalf("stats = %+v", st)
	}
	for _, c := range []struct{ q, want string }{
		{"SELECT string_agg(_ploti_record_id || '=' || s || '/' || i, ' ' ORDER BY _ploti_record_id) FROM w", "r1=old r1/1 r2=new r2/2 r4b=old r4/1 r5=old r5/1 r9=new r9/9"},
		{"SELECT string_agg(version || ':' || record_id || ':' || change, ' ' ORDER BY record_id) FROM _ploti.changes", "13:r2:changed 13:r3:removed 13:r4b:renamed 13:r9:added"},
		{"SELECT string_agg(version || ':' || from_id || '>' || to_id, ' ') FROM _ploti.id_map", "13:r4>r4b"},
		{"SELECT string_agg(record, ' ') FROM notes", "r4b"},
	} {
		if got := state(t, r, c.q); got != c.want {
			t.Fatalf("%s = %s, want %s", c.q, got, c.want)
		}
	}
}

// The DuckDB engine's refusals of a watch merge, in its words.
func TestTx_MergeWatch_refusesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	rows := `{"_ploti_record_id":"r9","s":"x","i":9}`
	touch := func(id string, v int, c string) storage.Touch { return storage.Touch{ID: id, Version: v, Change: c} }
	for _, tc := range []struct {
		name string
		m    storage.WatchMerge
		want string
	}{
		{"added id already held", storage.WatchMerge{New: []storage.Touch{touch("r9", 13, "added"), touch("r2", 14, "added")}}, "id r2 that version 14 added is already held"},
		{"renamed from an id not held", storage.WatchMerge{Held: []storage.Touch{touch("r1", 13, "changed"), touch("r7", 13, "renamed")}}, "id r7 that version 13 renamed is not held"},
		{"removed id not held", storage.WatchMerge{Held: []storage.Touch{touch("zz", 12, "removed")}}, "id zz that version 12 removed is not held"},
		{"a row missing from its file", storage.WatchMerge{New: []storage.Touch{touch("r9", 13, "added"), touch("r8", 13, "added")},
			Rows: []storage.RowSource{{IDs: []string{"r9", "r8"}}}}, "has 1 rows for the 2 ids"},
		{"a row that does not fit", storage.WatchMerge{New: []storage.Touch{touch("r8", 13, "added")},
			Rows: []storage.RowSource{{IDs: []string{"r8"}}}}, "column i: not an integer: 1.5"},
		{"a row repeated", storage.WatchMerge{New: []storage.Touch{touch("r9", 13, "added")},
			Rows: []storage.RowSource{{IDs: []string{"r9"}}}}, "a row missing or repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, r := mergeFixture(t)
			q := "SELECT string_agg(_ploti_record_id || s, ' ' ORDER BY _ploti_record_id) FROM w"
			before := state(t, r, q)
			tc.m.DatasetID, tc.m.Table, tc.m.Columns, tc.m.RowsBefore = "ds_w", "w", jsonCols[:2], 5
			for i := range tc.m.Rows {
				switch {
				case strings.Contains(tc.name, "does not fit"):
					tc.m.Rows[i].Path = mustNDJSON(t, `{"_ploti_record_id":"r8","i":1.5}`)
				case strings.Contains(tc.name, "repeated"):
					tc.m.Rows[i].Path = mustNDJSON(t, rows, rows)
				default:
					tc.m.Rows[i].Path = mustNDJSON(t, rows)
				}
			}
			err := db.Update(ctx, func(tx *Tx) error { _, err := tx.MergeWatch(ctx, tc.m); return err })
			if !errors.Is(err, storage.ErrBadData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a DataError saying %q", err, tc.want)
			}
			if after := state(t, r, q); after != before {
				t.Fatalf("table changed: %s, was %s", after, before)
			}
		})
	}
}
