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
)

// wholeFile is a GrowingFile that has wholly arrived.
type wholeFile string

func (f wholeFile) Path() string                               { return string(f) }
func (f wholeFile) Have() int64                                { st, _ := os.Stat(string(f)); return st.Size() }
func (f wholeFile) Arrived(ctx context.Context, n int64) error { return nil }
func (f wholeFile) Done(ctx context.Context) error             { return nil }

// A snapshot loaded as it arrives is refused, as a whole file's load is
// (docs/design.md invariant 4: a row set that violates the key is
// refused), when a record id is null or repeats: across runs of row
// groups, or only within the last row group; a good file of many row
// groups loads with its count. The refusal is a data error naming the
// file.
func TestTx_loadSnapshotStreamRefusesNullAndRepeatedIDs(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	rowsOf := func(n int) string { return strings.Replace(snapQuery, "range(5)", fmt.Sprintf("range(%d)", n), 1) }
	write := func(name, q string) string {
		p := filepath.Join(t.TempDir(), name+".parquet")
		if _, err := db.SQL().Exec("COPY (" + q + ") TO " + storage.Literal(p) + " (FORMAT parquet, ROW_GROUP_SIZE 2048)"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := rowsOf(20000) // ten row groups: several runs on any thread count
	cases := []struct {
		name, q, want string
		rows          int64
	}{
		{"good", base, "", 20000},
		{"repeat across runs", "SELECT CASE WHEN permit = 'P19999' THEN 'r0' ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "0 null and 1 duplicate _ploti_record_id", 0},
		{"repeat in the last row group", "SELECT CASE WHEN permit = 'P19999' THEN 'r19998' ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "0 null and 1 duplicate _ploti_record_id", 0},
		{"null ids", "SELECT CASE WHEN permit IN ('P3', 'P19000') THEN NULL ELSE _ploti_record_id END AS _ploti_record_id, * EXCLUDE (_ploti_record_id) FROM (" + base + ")", "2 null and 0 duplicate _ploti_record_id", 0},
	}
	for _, c := range cases {
		f := write(strings.ReplaceAll(c.name, " ", "_"), c.q)
		tx, err := db.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, err := eng(tx).LoadSnapshotStream(ctx, "t_"+strings.ReplaceAll(c.name, " ", "_"), testCols, wholeFile(f), false)
		tx.Rollback()
		if c.want == "" {
			if err != nil || n != c.rows {
				t.Fatalf("%s: %d rows, %v; want %d", c.name, n, err, c.rows)
			}
			continue
		}
		var de *storage.DataError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(f)) {
			t.Fatalf("%s: %v; want a data error naming the file and %q", c.name, err, c.want)
		}
	}
}
