package duckdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// wholeFile is a GrowingFile that has wholly arrived.
type wholeFile string

func (f wholeFile) Path() string                               { return string(f) }
func (f wholeFile) Have() int64                                { st, _ := os.Stat(string(f)); return st.Size() }
func (f wholeFile) Arrived(ctx context.Context, n int64) error { return nil }
func (f wholeFile) Done(ctx context.Context) error             { return nil }

// steppedFile is a GrowingFile whose bytes arrive as they are waited
// for: each run of the load is as short as the loader asks, so a file of
// many row groups loads in many runs.
type steppedFile struct {
	path string
	have int64
	runs int // calls of Arrived: one a run
}

func (f *steppedFile) Path() string { return f.path }
func (f *steppedFile) Have() int64  { return f.have }
func (f *steppedFile) Arrived(ctx context.Context, n int64) error {
	f.have = max(f.have, n)
	f.runs++
	return nil
}
func (f *steppedFile) Done(ctx context.Context) error { return nil }

// A snapshot loaded as it arrives is refused, as a whole file's load is
// (docs/design.md invariant 4: a row set that violates the key is
// refused), when a record id is null or repeats: across runs of row
// groups, or only within the last row group; a good file of many row
// groups loads with its count. The refusal is a data error naming the
// file. Each file is loaded whole, as it arrives a run at a time (one
// DuckDB thread: runs of two row groups), and with no memory for the
// runs' check (the whole file checked after its last byte).
func TestTx_loadSnapshotStreamRefusesNullAndRepeatedIDs(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.duckdb"), storage.Options{Geometry: testGeometry, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rowsOf := func(n int) string { return strings.Replace(snapQuery, "range(5)", fmt.Sprintf("range(%d)", n), 1) }
	write := func(name, q string) string {
		p := filepath.Join(t.TempDir(), name+".parquet")
		if _, err := db.SQL().Exec("COPY (" + q + ") TO " + storage.Literal(p) + " (FORMAT parquet, ROW_GROUP_SIZE 2048)"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := rowsOf(20000) // ten row groups: five runs
	cases := []struct {
		name, q, want string
		rows          int64
	}{
		{"good", base, "", 20000},
		{"repeat across runs", "SELECT CASE WHEN permit = 'P19999' THEN 'r0' ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "0 null and 1 duplicate _ploti_record_id", 0},
		{"repeat within a run", "SELECT CASE WHEN permit = 'P1' THEN 'r0' ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "0 null and 1 duplicate _ploti_record_id", 0},
		{"repeat in the last row group", "SELECT CASE WHEN permit = 'P19999' THEN 'r19998' ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "0 null and 1 duplicate _ploti_record_id", 0},
		{"a run of null ids", "SELECT CASE WHEN CAST(substr(permit, 2) AS INTEGER) < 4096 THEN NULL ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "4096 null and 0 duplicate _ploti_record_id", 0},
		{"null ids", "SELECT CASE WHEN permit IN ('P3', 'P19000') THEN NULL ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "2 null and 0 duplicate _ploti_record_id", 0},
	}
	budget := maxRunIDsBytes
	defer func() { maxRunIDsBytes = budget }()
	for _, c := range cases {
		f := write(strings.ReplaceAll(c.name, " ", "_"), c.q)
		for i, arrival := range []storage.GrowingFile{wholeFile(f), &steppedFile{path: f}, &steppedFile{path: f}} {
			// The last arrival has no memory for the runs' check: the
			// whole file is checked after its last byte.
			maxRunIDsBytes = map[bool]uint64{true: 0, false: budget}[i == 2]
			what := fmt.Sprintf("%s, %T, budget %d", c.name, arrival, maxRunIDsBytes)
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n, err := eng(tx).LoadSnapshotStream(ctx, "t_"+strings.ReplaceAll(c.name, " ", "_"), testCols, arrival, false)
			tx.Rollback()
			if m := slotMaps.Load(); m != 0 {
				t.Fatalf("%s: %d sets of hashes still mapped after the load", what, m)
			}
			if sf, ok := arrival.(*steppedFile); ok && sf.runs < 5 {
				t.Fatalf("%s: %d runs, want 5", what, sf.runs)
			}
			if c.want == "" {
				if err != nil || n != c.rows {
					t.Fatalf("%s: %d rows, %v; want %d", what, n, err, c.rows)
				}
				continue
			}
			var de *storage.DataError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(f)) {
				t.Fatalf("%s: %v; want a data error naming the file and %q", what, err, c.want)
			}
		}
	}
}

// The runs' check of a streamed load's ids sizes its set from the
// footer's rows, and gives way to the whole file's check past its
// budget or an eighth of a memory limit set.
func TestTx_newRunIDsKeepsToItsMemory(t *testing.T) {
	cases := []struct {
		limit string
		rows  int64
		slots int // 0: no runs' check
	}{
		{"", 10_000_000, 1 << 24},
		{"", 1, 2},
		{"", 30_000_000, 1 << 26},
		{"", 50_000_000, 0},
		{"500MB", 10_000_000, 0},
		{"1GB", 10_000_000, 1 << 24},
		{"not a size", 10_000_000, 1 << 24},
		{"", 1 << 62, 0}, // a footer's count that would overflow the set's size
		{"", -1, 0},
	}
	for _, c := range cases {
		r := (&Tx{db: &DB{opts: storage.Options{MemoryLimit: c.limit}}}).newRunIDs("src", c.rows)
		got := 0
		if r != nil {
			got = len(r.set)
			r.release()
			r.release() // a second release (the load's deferred one) is safe
			if r.held() {
				t.Errorf("limit %q, %d rows: the set still held after its release", c.limit, c.rows)
			}
		}
		if got != c.slots {
			t.Errorf("limit %q, %d rows: %d slots, want %d", c.limit, c.rows, got, c.slots)
		}
	}
	for s, want := range map[string]uint64{"1GB": 1e9, "512 MiB": 512 << 20, "2.5GB": 2.5e9, "1000000": 1e6, "4 KB": 4000} {
		if got, ok := parseBytes(s); !ok || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "GB", "-1GB", "1 PB", "lots"} {
		if got, ok := parseBytes(s); ok {
			t.Errorf("parseBytes(%q) = %d; want none", s, got)
		}
	}
}

// The runs' set counts a hash it has seen (one whose high bits are 0,
// its empty slot's mark, too); hashes that share a slot, or their high
// bits only, are told apart; a hash seen again that is not a repeated id
// (a collision) is settled by the exact count over the file and refuses
// nothing.
func TestRunIDs_countsHashesSeenAgain(t *testing.T) {
	r := &runIDs{set: make([]uint32, 8)}
	a, b, c := uint64(7)<<32|5, uint64(9)<<32|13, uint64(7)<<32|6 // a and b share a slot, a and c their high bits
	for _, h := range []uint64{0, a, b, 0, b, c, a} {
		r.note(h)
	}
	if r.again != 3 || r.used != 4 {
		t.Fatalf("again %d, used %d; want 3, 4", r.again, r.used)
	}
	ctx := context.Background()
	db := mustOpen(t)
	f := mustParquet(t, db, snapQuery)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	r = &runIDs{tx: eng(tx), set: make([]uint32, 8), n: 5, again: 1}
	n, nulls, dups, err := r.counts(ctx, recordIDsOf(duckread.ParquetSource([]string{f})))
	if err != nil || n != 5 || nulls != 0 || dups != 0 {
		t.Fatalf("counts = %d, %d, %d, %v; want 5 rows, no null or repeated id", n, nulls, dups, err)
	}
}

// The set's slots start empty, every one writable, and a mapped set is
// unmapped when freed.
func TestHashSlots_emptyAndWritable(t *testing.T) {
	before := slotMaps.Load()
	for _, n := range []int{0, 1, 1 << 16} {
		s, free := hashSlots(n)
		if m := slotMaps.Load() - before; m > 1 || n == 0 && m != 0 {
			t.Fatalf("hashSlots(%d): %d mappings made", n, m)
		}
		if len(s) != n {
			t.Fatalf("hashSlots(%d): %d slots", n, len(s))
		}
		for i := range s {
			if s[i] != 0 {
				t.Fatalf("hashSlots(%d): slot %d is %d, want empty", n, i, s[i])
			}
			s[i] = uint32(i) + 1
		}
		for i := range s {
			if s[i] != uint32(i)+1 {
				t.Fatalf("hashSlots(%d): slot %d lost its value", n, i)
			}
		}
		free()
		if m := slotMaps.Load(); m != before {
			t.Fatalf("hashSlots(%d): %d mappings left after free, want %d", n, m, before)
		}
	}
}
