package replica

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// truthRows reads the emulator's truth of a dataset's version: each
// record's values by column, as text (geometry as WKT), through db (any
// DuckDB connection: it only reads the Parquet file).
func truthRows(tb testing.TB, db *sql.DB, em *emulator.Emulator, datasetID string, version int) map[string]map[string]string {
	tb.Helper()
	path, err := em.Truth(context.Background(), datasetID, version)
	if err != nil {
		tb.Fatalf("truth of %s v%d: %v", datasetID, version, err)
	}
	return textRows(tb, db, "SELECT * FROM read_parquet("+storage.Literal(path)+")")
}

// textRows runs a query whose rows have _ploti_record_id and reads each
// row's values as text, by column, by record id; NULL is left out.
func textRows(tb testing.TB, db *sql.DB, q string, args ...any) map[string]map[string]string {
	tb.Helper()
	rows, err := db.QueryContext(context.Background(), "SELECT COLUMNS(*)::VARCHAR FROM ("+q+")", args...)
	if err != nil {
		tb.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]map[string]string{}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			if vals[i].Valid {
				row[c] = vals[i].String
			}
		}
		id := row[storage.ColRecordID]
		if _, dup := out[id]; dup {
			tb.Fatalf("%s: record %s twice", q, id)
		}
		out[id] = row
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// kindList is a set of record ids by kind of change: "added r1", …, sorted.
type kindList []string

// truthChanges is what changed between two truths: ids added, removed, and
// changed (a value differs, a column the older lacks counting as NULL).
// Columns only the older has are compared too when all is set (a history,
// which keeps them); otherwise they are left out (a log of changes).
func truthChanges(a, b map[string]map[string]string, all bool) kindList {
	var out kindList
	for id, rb := range b {
		ra, ok := a[id]
		switch {
		case !ok:
			out = append(out, "added "+id)
		case !sameRow(ra, rb, all):
			out = append(out, "changed "+id)
		}
	}
	for id := range a {
		if _, ok := b[id]; !ok {
			out = append(out, "removed "+id)
		}
	}
	sort.Strings(out)
	return out
}

func sameRow(a, b map[string]string, all bool) bool {
	for c, v := range b {
		if a[c] != v {
			return false
		}
	}
	if all {
		for c, v := range a {
			if b[c] != v {
				return false
			}
		}
	}
	return true
}

// changeKinds lists a dataset's changes by kind; a renamed record counts
// as its old id removed and its new one added, as truths without id maps
// see it.
func changeKinds(cs []Change) kindList {
	var out kindList
	for _, c := range cs {
		if c.Change == storage.ChangeRenamed {
			out = append(out, "added "+c.RecordID)
			if c.PreviousRecordID != "" {
				out = append(out, "removed "+c.PreviousRecordID)
			}
			continue
		}
		out = append(out, c.Change+" "+c.RecordID)
	}
	sort.Strings(out)
	return out
}

func (k kindList) String() string {
	if len(k) > 12 {
		return fmt.Sprintf("%d: %s …", len(k), strings.Join(k[:12], ", "))
	}
	return fmt.Sprintf("%d: %s", len(k), strings.Join(k, ", "))
}

func sameKinds(a, b kindList) bool { return slices.Equal(a, b) }

// kindsDiff says what only a and only b have.
func kindsDiff(a, b kindList) string {
	in := func(k kindList, x string) bool { _, ok := slices.BinarySearch(k, x); return ok }
	var onlyA, onlyB kindList
	for _, x := range a {
		if !in(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !in(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	return fmt.Sprintf("only got %v; only want %v", onlyA, onlyB)
}

// loggedTruthChanges is what a log of changes says happened between
// versions from and to, from the truths of each version between: a
// record's first change after from decides its kind (added stays added,
// anything else is changed), and whether it exists at to; one added and
// gone again is left out. A record changed and changed back is changed: a
// log keeps no values.
func loggedTruthChanges(tb testing.TB, db *sql.DB, em *emulator.Emulator, datasetID string, from, to int) kindList {
	tb.Helper()
	first := map[string]string{}
	prev := truthRows(tb, db, em, datasetID, from)
	var last map[string]map[string]string
	for v := from + 1; v <= to; v++ {
		cur := truthRows(tb, db, em, datasetID, v)
		for _, k := range truthChanges(prev, cur, false) {
			kind, id, _ := strings.Cut(k, " ")
			if _, ok := first[id]; !ok {
				first[id] = kind
			}
		}
		prev, last = cur, cur
	}
	var out kindList
	for id, kind := range first {
		_, now := last[id]
		switch {
		case !now && kind == "added":
		case !now:
			out = append(out, "removed "+id)
		case kind == "added":
			out = append(out, "added "+id)
		default:
			out = append(out, "changed "+id)
		}
	}
	sort.Strings(out)
	return out
}
