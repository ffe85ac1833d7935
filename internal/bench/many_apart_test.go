package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/duckread"
)

// A "raw-catchup" child applies the log's changes files to its file a
// transaction a page, as the bench's own DuckDB alone does, and prints
// the line rawCatchUpApart reads back.
func TestRunChild_rawCatchUpMergesThePages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, changes := filepath.Join(dir, "raw.duckdb"), filepath.Join(dir, "changes.parquet")
	withDuck(t, path, `CREATE TABLE permits AS SELECT 'r' || i AS _ploti_record_id, i AS n FROM range(10) t(i)`,
		`COPY (SELECT * FROM (VALUES ('r1', 100, 'updated'), ('r2', NULL, 'removed'), ('r10', 10, 'added')) v(_ploti_record_id, n, _ploti_change))
			TO '`+changes+`' (FORMAT parquet)`)
	pages := filepath.Join(dir, "pages.json")
	b, err := json.Marshal([][][2]string{{{"permits", changes}}, {}})
	if err == nil {
		err = os.WriteFile(pages, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	job, err := json.Marshal(childJob{Mode: "raw-catchup", Path: path, Pages: pages})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, string(job))
	var out bytes.Buffer
	if err := RunChild(ctx, &out); err != nil {
		t.Fatal(err)
	}
	var wall, cpu int64
	if err := scanChildLine(strings.Split(out.String(), "\n"), rawPrefix, &wall, &cpu); err != nil || wall <= 0 {
		t.Fatalf("the child's line: %v (wall %d); printed %q", err, wall, out.String())
	}
	var rows, sum int64
	db, err := duckread.OpenPlain(ctx, path, storage.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT count(*), sum(n) FROM permits").Scan(&rows, &sum); err != nil {
		t.Fatal(err)
	}
	// 10 rows, r2 removed, r10 added: 10; 45 - 1 + 100 - 2 + 10.
	if rows != 10 || sum != 152 {
		t.Fatalf("after the child: %d rows summing to %d, want 10 and 152", rows, sum)
	}
}

// withDuck runs statements on the DuckDB file at path and closes it.
func withDuck(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := duckread.OpenPlain(context.Background(), path, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
