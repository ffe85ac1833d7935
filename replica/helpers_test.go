package replica

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// mustEmulator starts an emulator on loopback with rate limits off.
func mustEmulator(tb testing.TB) *emulator.Emulator {
	tb.Helper()
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2})
	if err != nil {
		tb.Fatal(err)
	}
	if err := em.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { em.Close() })
	return em
}

// mustOpen opens a replica of sub on em in a fresh file (or path, if given).
func mustOpen(tb testing.TB, em *emulator.Emulator, sub string, path string, mod ...func(*Options)) *Replica {
	tb.Helper()
	if path == "" {
		path = filepath.Join(tb.TempDir(), "replica.duckdb")
	}
	opts := Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub}
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

func mustSync(tb testing.TB, r *Replica) SyncResult {
	tb.Helper()
	res, err := r.Sync(context.Background())
	if err != nil {
		st, _ := r.Status(context.Background())
		for _, d := range st.Datasets {
			tb.Logf("%s %s: %s", d.DatasetID, d.Status, d.Reason)
		}
		tb.Fatalf("sync: %v", err)
	}
	return res
}

// normalized is an SQL expression that renders a column the same way
// whatever DuckDB type the table or the truth file gives it.
func normalized(col, typ string) string {
	q := storage.Ident(col)
	switch typ {
	case "timestamp":
		return fmt.Sprintf("CAST(CAST(%s AS TIMESTAMPTZ) AS VARCHAR) AS %s", q, q)
	case "geometry":
		return fmt.Sprintf("ST_AsText(%s) AS %s", q, q)
	}
	return fmt.Sprintf("CAST(%s AS VARCHAR) AS %s", q, q)
}

// assertMatchesTruth compares every column of every row of a dataset's
// table with the emulator's truth for the version the registry says it
// holds, geometry included.
func assertMatchesTruth(tb testing.TB, r *Replica, em *emulator.Emulator, datasetID string, wantVersion int) {
	tb.Helper()
	ctx := context.Background()
	d, err := r.db.Dataset(ctx, datasetID)
	if err != nil {
		tb.Fatalf("registry row of %s: %v", datasetID, err)
	}
	if wantVersion > 0 && d.Version != wantVersion {
		tb.Fatalf("%s holds version %d, want %d (status %s: %s)", datasetID, d.Version, wantVersion, d.Status, d.StatusReason)
	}
	truth, err := em.Truth(ctx, datasetID, d.Version)
	if err != nil {
		tb.Fatalf("truth of %s v%d: %v", datasetID, d.Version, err)
	}
	cols := []string{normalized(storage.ColRecordID, "string"), normalized(storage.ColPlaceID, "string")}
	for _, c := range d.Columns {
		cols = append(cols, normalized(c.Name, c.Type.Type))
	}
	sel := strings.Join(cols, ", ")
	tbl := "main." + storage.Ident(d.Table)
	src := "read_parquet(" + storage.Literal(truth) + ")"
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT %[1]s FROM %[2]s EXCEPT ALL SELECT %[1]s FROM %[3]s)),
		(SELECT count(*) FROM (SELECT %[1]s FROM %[3]s EXCEPT ALL SELECT %[1]s FROM %[2]s)),
		(SELECT count(*) FROM %[2]s), (SELECT count(*) FROM %[3]s)`, sel, tbl, src)
	var extra, missing, have, want int64
	if err := r.DB().QueryRowContext(ctx, q).Scan(&extra, &missing, &have, &want); err != nil {
		tb.Fatalf("compare %s with truth: %v", datasetID, err)
	}
	if extra != 0 || missing != 0 || have != want {
		tb.Fatalf("%s v%d differs from the emulator's truth: %d rows not in truth, %d truth rows missing (%d rows, want %d)",
			datasetID, d.Version, extra, missing, have, want)
	}
	if d.RowCount != want {
		tb.Fatalf("%s registry row_count %d, want %d", datasetID, d.RowCount, want)
	}
}
