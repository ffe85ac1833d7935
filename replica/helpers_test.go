package replica

import (
	"context"
	"os"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// testGeometry is how the tests' replicas store geometry: the environment's
// PLOTI_TEST_GEOMETRY (.ci/run runs the package again with wkb), or the
// file's default.
var testGeometry = os.Getenv("PLOTI_TEST_GEOMETRY")

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
		path = freshReplica(tb)
	}
	opts := Options{APIURL: em.URL(), APIKey: em.APIKey(), SubscriptionID: sub, Geometry: testGeometry}
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
		if st, serr := r.Status(context.Background()); serr == nil {
			for _, d := range st.Datasets {
				tb.Logf("%s %s: %s", d.DatasetID, d.Status, d.Reason)
			}
		}
		tb.Fatalf("sync: %v", err)
	}
	return res
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
	tdb, table := tableForDiff(tb, r, d)
	extra, missing, err := em.Diff(ctx, tdb, table, datasetID, d.Version)
	if err != nil {
		tb.Fatalf("compare %s with truth: %v", datasetID, err)
	}
	var have int64
	if err := r.DB().QueryRowContext(ctx, "SELECT count(*) FROM "+storage.Ident(d.Table)).Scan(&have); err != nil {
		tb.Fatal(err)
	}
	if extra != 0 || missing != 0 {
		tb.Fatalf("%s v%d differs from the emulator's truth: %d rows not in truth, %d truth rows missing (%d rows)",
			datasetID, d.Version, extra, missing, have)
	}
	if d.RowCount != have {
		tb.Fatalf("%s registry row_count %d, table has %d", datasetID, d.RowCount, have)
	}
}

// droppingFinal is permitCols without final, and rows without it: a
// MAJOR change (a column removed).
func droppingFinal(rows []emulator.Row) ([]emulator.Column, []emulator.Row) {
	for _, row := range rows {
		delete(row, "final")
	}
	return append(append([]emulator.Column{}, permitCols[:4]...), permitCols[5]), rows
}
