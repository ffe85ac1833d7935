//go:build duckdb_arrow

package replica

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ploti-replica/ploti-replica/storage"
)

// QueryArrow reads a dataset table as record batches (the rows and a
// column's values as the table holds them), refuses writes as ReadOnly()
// does, and its reader's Release gives the connection back; a
// PostgreSQL replica has none.
func TestArrow_readsATableAsRecordBatches(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	table := storage.Ident(datasetRow(t, r, "ds_permits").Table)
	if !isFile(r.db) {
		if _, err := r.QueryArrow(ctx, "SELECT 1"); !errors.Is(err, ErrFileOnly) {
			t.Fatalf("QueryArrow of a PostgreSQL replica: %v, want ErrFileOnly", err)
		}
		return
	}
	var want []string
	rows, err := r.DB().QueryContext(ctx, "SELECT permit FROM "+table+" ORDER BY permit")
	must(t, err)
	for rows.Next() {
		var p string
		must(t, rows.Scan(&p))
		want = append(want, p)
	}
	must(t, rows.Close())
	for range 3 {
		got := arrowPermits(t, r, "SELECT permit, valuation FROM "+table+" WHERE permit >= ? ORDER BY permit", "P-000")
		if !slices.Equal(got, want) || len(got) != 40 {
			t.Fatalf("QueryArrow read %d permits %v, the table holds %d %v", len(got), got, len(want), want)
		}
	}
	if inUse := r.DB().Stats().InUse; inUse != 0 {
		t.Fatalf("%d connections of the file still in use after the readers' Release", inUse)
	}
	for _, q := range []string{"CREATE TABLE ro_x (a int)", "SELECT 1; DROP TABLE " + table, "SELECT nextval('ro_seq')"} {
		if _, err := r.DB().ExecContext(ctx, "CREATE SEQUENCE IF NOT EXISTS ro_seq"); err != nil {
			t.Fatal(err)
		}
		rr, err := r.QueryArrow(ctx, q)
		if err == nil {
			for rr.Next() {
			}
			err = rr.Err()
			rr.Release()
		}
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("QueryArrow(%q): %v, want ErrReadOnly", q, err)
		}
	}
	if n, _ := tableState(t, r, datasetRow(t, r, "ds_permits").Table); n != 40 {
		t.Fatalf("the table has %d rows after QueryArrow's refusals, want 40", n)
	}
}

// arrowPermits reads the permit column of q's record batches.
func arrowPermits(tb testing.TB, r *Replica, q string, args ...any) []string {
	tb.Helper()
	rr, err := r.QueryArrow(context.Background(), q, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rr.Release()
	if f := rr.Schema().Field(0); f.Name != "permit" {
		tb.Fatalf("first column %s, want permit", f.Name)
	}
	var got []string
	for rr.Next() {
		col := rr.RecordBatch().Column(0).(*array.String)
		for i := range col.Len() {
			got = append(got, strings.Clone(col.Value(i))) // the batch's memory goes with it
		}
	}
	if err := rr.Err(); err != nil {
		tb.Fatal(err)
	}
	return got
}
