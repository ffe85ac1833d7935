package duckdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
)

// The fuzz targets feed MergeChanges and ApplyIDMap files that DuckDB
// writes from fuzzed rows, against a small held table, and check the
// outcome with a model in Go: a file that breaks a rule is refused with a
// DataError and changes nothing; any other is applied exactly. Their seed
// corpora are in testdata/fuzz/<FuzzName>/.
//
//	go test ./storage/ -run '^$' -fuzz '^FuzzMergeChanges$' -fuzztime 30s
//	go test ./storage/ -run '^$' -fuzz '^FuzzApplyIDMap$' -fuzztime 30s

var fuzzCols = []ploti.Column{
	{Name: "permit", Type: ploti.Type{Type: ploti.TypeString}},
	{Name: "valuation", Type: ploti.Type{Type: ploti.TypeDecimal, Precision: &ploti.Precision{Precision: 14, Scale: 2}}},
}

// fuzzBase is the held table: r0 … r4.
const fuzzBase = `SELECT 'r' || i AS _ploti_record_id, 'fl' AS _ploti_place_id, 'P' || i AS permit,
	(i * 1.5)::DECIMAL(14,2) AS valuation FROM range(5) t(i)`

// fuzzDB opens a file with the held table loaded and committed; each input
// then runs in a transaction that is rolled back.
func fuzzDB(f *testing.F) (*storage.DB, string) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(f.TempDir(), "fuzz.duckdb"), storage.Options{Threads: 1, Geometry: testGeometry})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	base := filepath.Join(f.TempDir(), "base.parquet")
	if _, err := db.SQL().Exec("COPY (" + fuzzBase + ") TO " + storage.Literal(base) + " (FORMAT parquet)"); err != nil {
		f.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error {
		_, err := tx.Tables().LoadSnapshot(ctx, "permits", fuzzCols, []string{base})
		return err
	}); err != nil {
		f.Fatal(err)
	}
	return db, filepath.Join(f.TempDir(), "in.parquet")
}

// tableRows reads the table as id → "permit|valuation", or an error for a
// null or repeated id.
func tableRows(ctx context.Context, tx *storage.Tx) (map[string]string, error) {
	rows, err := tx.Query(ctx, "SELECT _ploti_record_id, coalesce(permit, '∅') || '|' || coalesce(valuation::VARCHAR, '∅') FROM permits")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id *string
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			return nil, err
		}
		if id == nil {
			return nil, errors.New("a null record id in the table")
		}
		if _, dup := out[*id]; dup {
			return nil, fmt.Errorf("record id %s twice in the table", *id)
		}
		out[*id] = v
	}
	return out, rows.Err()
}

func sqlStr(s *string) string {
	if s == nil {
		return "NULL"
	}
	return storage.Literal(*s)
}

func strp(s string) *string { return &s }

// changeRow is one decoded row of a fuzzed changes file.
type changeRow struct {
	id, kind *string
	value    byte
}

// decodeChanges reads three bytes a row: the record id (r0 … r7 or null),
// the change (added, changed, removed, two bad kinds or null) and a value.
func decodeChanges(data []byte) []changeRow {
	kinds := []*string{strp("added"), strp("changed"), strp("removed"), strp("moved"), strp("Added"), nil}
	var out []changeRow
	for i := 0; i+2 < len(data) && len(out) < 24; i += 3 {
		r := changeRow{kind: kinds[int(data[i+1])%len(kinds)], value: data[i+2]}
		if n := data[i] % 9; n < 8 {
			r.id = strp(fmt.Sprintf("r%d", n))
		}
		out = append(out, r)
	}
	return out
}

func FuzzMergeChanges(f *testing.F) {
	ctx := context.Background()
	db, path := fuzzDB(f)
	f.Add([]byte{}, byte(0))
	f.Add([]byte{1, 1, 7, 2, 2, 0, 5, 0, 9}, byte(0)) // change r1, remove r2, add r5
	f.Add([]byte{1, 0, 7}, byte(0))                   // add r1, already held
	f.Add([]byte{6, 1, 7}, byte(0))                   // change r6, not held
	f.Add([]byte{5, 0, 1, 5, 0, 2}, byte(0))          // r5 added twice
	f.Add([]byte{8, 0, 1}, byte(0))                   // a null id
	f.Add([]byte{1, 3, 1}, byte(0))                   // a bad change kind
	f.Add([]byte{1, 1, 7}, byte(1))                   // lacks valuation
	f.Add([]byte{1, 1, 7}, byte(2))                   // an extra column
	f.Add([]byte{1, 1, 250}, byte(3))                 // valuation that does not cast
	f.Add([]byte{0, 2, 0, 0, 0, 9, 3, 1, 4}, byte(0)) // remove and add the same id in one file
	f.Fuzz(func(t *testing.T, data []byte, layout byte) {
		rows := decodeChanges(data)
		layout %= 4
		// the file's rows
		var vals []string
		for _, r := range rows {
			permit, val := "'P"+fmt.Sprint(r.value)+"x'", fmt.Sprintf("%d.25", r.value)
			switch {
			case r.kind != nil && *r.kind == "removed":
				permit, val = "NULL", "NULL"
			case layout == 3 && r.value > 200:
				val = "'not a number'"
			case layout == 3:
				val = "'" + val + "'"
			}
			vals = append(vals, fmt.Sprintf("(%s, %s, 'fl', %s, %s)", sqlStr(r.id), sqlStr(r.kind), permit, val))
		}
		typ := "DECIMAL(14,2)"
		if layout == 3 {
			typ = "VARCHAR"
		}
		src := fmt.Sprintf("SELECT NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::VARCHAR, NULL::%s WHERE false", typ)
		if len(vals) > 0 {
			src = "VALUES " + strings.Join(vals, ", ")
		}
		sel := fmt.Sprintf("SELECT _ploti_record_id::VARCHAR AS _ploti_record_id, _ploti_change::VARCHAR AS _ploti_change, "+
			"_ploti_place_id::VARCHAR AS _ploti_place_id, permit::VARCHAR AS permit, valuation::%s AS valuation FROM (%s) v(_ploti_record_id, _ploti_change, _ploti_place_id, permit, valuation)", typ, src)
		switch layout {
		case 1:
			sel = "SELECT * EXCLUDE (valuation) FROM (" + sel + ")"
		case 2:
			sel = "SELECT *, 1 AS surprise FROM (" + sel + ")"
		}
		if _, err := db.SQL().Exec("COPY (" + sel + ") TO " + storage.Literal(path) + " (FORMAT parquet)"); err != nil {
			t.Fatalf("write the changes file: %v", err)
		}

		// the model
		base := map[string]string{}
		for i := range 5 {
			base[fmt.Sprintf("r%d", i)] = fmt.Sprintf("P%d|%.2f", i, float64(i)*1.5)
		}
		want := map[string]string{}
		for k, v := range base {
			want[k] = v
		}
		refuse := layout == 1 || layout == 2
		seen := map[string]bool{}
		for _, r := range rows {
			switch {
			case r.id == nil || seen[*r.id] || r.kind == nil:
				refuse = true
				continue
			}
			seen[*r.id] = true
			_, held := base[*r.id]
			switch *r.kind {
			case "added":
				refuse = refuse || held
				want[*r.id] = fmt.Sprintf("P%dx|%d.25", r.value, r.value)
			case "changed":
				refuse = refuse || !held
				want[*r.id] = fmt.Sprintf("P%dx|%d.25", r.value, r.value)
			case "removed":
				refuse = refuse || !held
				delete(want, *r.id)
			default:
				refuse = true
			}
			if layout == 3 && r.value > 200 && *r.kind != "removed" {
				refuse = true
			}
		}
		if refuse {
			want = base
		}

		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		st, err := tx.Tables().MergeChanges(ctx, "ds", 2, "permits", fuzzCols, path, -1)
		var de *storage.DataError
		switch {
		case err != nil && !errors.As(err, &de):
			t.Fatalf("MergeChanges: %v, want a DataError or success", err)
		case err != nil && !refuse:
			t.Fatalf("MergeChanges refused a file that fits: %v (rows %+v)", err, rows)
		case err == nil && refuse:
			t.Fatalf("MergeChanges took a file that breaks a rule (layout %d, rows %s)", layout, show(rows))
		case err != nil:
			// Update rolls back a refused merge; what the transaction holds
			// at this point does not matter, the committed table does.
			tx.Rollback()
			var berr error
			if tx, berr = db.Begin(ctx); berr != nil {
				t.Fatal(berr)
			}
			defer tx.Rollback()
		}
		got, rerr := tableRows(ctx, tx)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !equalRows(got, want) {
			t.Fatalf("after MergeChanges (err %v, layout %d, rows %s):\n got %v\nwant %v", err, layout, show(rows), got, want)
		}
		if err == nil && st.Rows != int64(len(want)) {
			t.Fatalf("MergeStats.Rows = %d, the table has %d", st.Rows, len(want))
		}
	})
}

func equalRows(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func show(rows []changeRow) string {
	var s []string
	for _, r := range rows {
		id, kind := "NULL", "NULL"
		if r.id != nil {
			id = *r.id
		}
		if r.kind != nil {
			kind = *r.kind
		}
		s = append(s, fmt.Sprintf("%s %s %d", id, kind, r.value))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// FuzzApplyIDMap: pairs of ids from r0 … r6 (or null) to r0 … r6 or
// n0 … n6 (or null), so maps swap, chain and collide.
func FuzzApplyIDMap(f *testing.F) {
	ctx := context.Background()
	db, path := fuzzDB(f)
	if _, err := db.SQL().Exec(`CREATE TABLE notes AS SELECT 'r' || (i % 7) AS ref, i AS n FROM range(12) t(i)`); err != nil {
		f.Fatal(err)
	}
	refs := []storage.IDRef{{Table: "notes", Column: "ref", DatasetID: "ds"}, {Table: "notes", Column: "ref", DatasetID: "other"}}
	f.Add([]byte{}, byte(0))
	f.Add([]byte{0, 7, 1, 8, 2, 9}, byte(0)) // r0→n0, r1→n1, r2→n2
	f.Add([]byte{0, 1, 1, 0}, byte(0))       // a swap: r0→r1, r1→r0
	f.Add([]byte{0, 7, 1, 7}, byte(0))       // two ids mapped to one
	f.Add([]byte{0, 7, 0, 8}, byte(0))       // one id mapped twice
	f.Add([]byte{15, 7}, byte(0))            // a null from_id
	f.Add([]byte{0, 15}, byte(0))            // a null to_id
	f.Add([]byte{0, 7}, byte(1))             // lacks to_id
	f.Add([]byte{0, 7, 1, 0}, byte(2))       // to_id first
	f.Fuzz(func(t *testing.T, data []byte, layout byte) {
		layout %= 3
		type pair struct{ from, to *string }
		var pairs []pair
		id := func(b byte) *string {
			switch n := b % 16; {
			case n < 7:
				return strp(fmt.Sprintf("r%d", n))
			case n < 14:
				return strp(fmt.Sprintf("n%d", n-7))
			}
			return nil
		}
		for i := 0; i+1 < len(data) && len(pairs) < 16; i += 2 {
			pairs = append(pairs, pair{id(data[i]), id(data[i+1])})
		}
		var vals []string
		for _, p := range pairs {
			vals = append(vals, fmt.Sprintf("(%s, %s)", sqlStr(p.from), sqlStr(p.to)))
		}
		src := "SELECT NULL::VARCHAR, NULL::VARCHAR WHERE false"
		if len(vals) > 0 {
			src = "VALUES " + strings.Join(vals, ", ")
		}
		sel := "SELECT from_id::VARCHAR AS from_id, to_id::VARCHAR AS to_id FROM (" + src + ") v(from_id, to_id)"
		switch layout {
		case 1:
			sel = "SELECT from_id FROM (" + sel + ")"
		case 2:
			sel = "SELECT to_id, from_id FROM (" + sel + ")" // read by name, not position
		}
		if _, err := db.SQL().Exec("COPY (" + sel + ") TO " + storage.Literal(path) + " (FORMAT parquet)"); err != nil {
			t.Fatalf("write the id map: %v", err)
		}

		// the model: refuse a null, a repeated from_id or to_id, a missing column
		refuse := layout == 1
		m := map[string]string{}
		tos := map[string]bool{}
		for _, p := range pairs {
			if p.from == nil || p.to == nil || m[*p.from] != "" || tos[*p.to] {
				refuse = true
				continue
			}
			m[*p.from], tos[*p.to] = *p.to, true
		}
		var want []string
		for i := range 12 {
			ref := fmt.Sprintf("r%d", i%7)
			if to, ok := m[ref]; ok && !refuse {
				ref = to
			}
			want = append(want, fmt.Sprintf("%d:%s", i, ref))
		}

		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		n, err := tx.Tables().ApplyIDMap(ctx, "ds", 2, path, refs)
		var de *storage.DataError
		switch {
		case err != nil && !errors.As(err, &de):
			t.Fatalf("ApplyIDMap: %v, want a DataError or success", err)
		case err != nil && !refuse:
			t.Fatalf("ApplyIDMap refused a map that fits: %v (pairs %s)", err, data)
		case err == nil && refuse:
			t.Fatalf("ApplyIDMap took a map that breaks a rule (layout %d, %d pairs)", layout, len(pairs))
		case err != nil:
			tx.Rollback()
			var berr error
			if tx, berr = db.Begin(ctx); berr != nil {
				t.Fatal(berr)
			}
			defer tx.Rollback()
		case n != int64(len(pairs)):
			t.Fatalf("ApplyIDMap = %d, the map has %d rows", n, len(pairs))
		}
		rows, qerr := tx.Query(ctx, "SELECT n, ref FROM notes ORDER BY n")
		if qerr != nil {
			t.Fatal(qerr)
		}
		var got []string
		for rows.Next() {
			var i int
			var ref string
			if err := rows.Scan(&i, &ref); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d:%s", i, ref))
		}
		rows.Close()
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("user references after ApplyIDMap (layout %d, map %v, err %v):\n got %v\nwant %v", layout, m, err, got, want)
		}
		var recorded int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM _ploti.id_map WHERE dataset_id = 'ds' AND version = 2").Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if want := int64(len(m)); refuse {
			want = 0
		} else if recorded != want {
			t.Fatalf("_ploti.id_map holds %d rows, want %d", recorded, want)
		}
	})
}
