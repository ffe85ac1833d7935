package emulator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// With CompressTables the emulator's tables live compressed, and its
// versions are the same: the same snapshots, the same changes files, row
// for row, as an emulator without it publishes from the same queries.
func TestEmulator_CompressTables_publishesTheSameVersions(t *testing.T) {
	ctx := context.Background()
	q := `SELECT 'P-' || i AS permit_number, (i * 10 + %d * (i %% 7 = 0)::INT)::DECIMAL(14,2) AS valuation, DATE '2026-01-01' + i::INTEGER AS issued,
		NULL AS updated_at, ['x'] AS tags, i %% 2 = 0 AS final, NULL AS extra, 'POINT (' || i || ' 1)' AS geometry FROM range(%d, %d) t(i)`
	plain := mustEmulator(t)
	packed := mustEmulatorWith(t, Options{Dir: t.TempDir(), NoRateLimit: true, CompressTables: true})
	db := testDB(t)
	var inMem string
	if err := packed.db.QueryRowContext(ctx, "SELECT current_database()").Scan(&inMem); err != nil || inMem != compressedDB {
		t.Fatalf("the compressed emulator's tables live in %q (%v), want %s", inMem, err, compressedDB)
	}
	for v, sql := range []string{fmt.Sprintf(q, 0, 1, 3001), fmt.Sprintf(q, 5, 20, 3020)} {
		a, err := plain.PublishQuery(ctx, dsPermits, sql)
		if err != nil {
			t.Fatal(err)
		}
		b, err := packed.PublishQuery(ctx, dsPermits, sql)
		if err != nil {
			t.Fatal(err)
		}
		if a.RowCount != b.RowCount || a.Added != b.Added || a.Changed != b.Changed || a.Removed != b.Removed {
			t.Fatalf("v%d: %+v, compressed %+v", v+1, a, b)
		}
		sa, _ := plain.SnapshotFiles(ctx, dsPermits, v+1)
		sb, _ := packed.SnapshotFiles(ctx, dsPermits, v+1)
		all := "SELECT * EXCLUDE (geometry), ST_AsText(geometry) FROM %s ORDER BY _ploti_record_id"
		if x, y := queryRows(t, db, fmt.Sprintf(all, parquetList(sa))), queryRows(t, db, fmt.Sprintf(all, parquetList(sb))); !slices.Equal(x, y) || len(x) != 3000 {
			t.Fatalf("v%d snapshots differ (%d and %d rows)", v+1, len(x), len(y))
		}
		if v == 0 {
			continue
		}
		ca, _ := plain.ChangesFile(ctx, dsPermits, v+1)
		cb, _ := packed.ChangesFile(ctx, dsPermits, v+1)
		changes := "SELECT * EXCLUDE (geometry), ST_AsText(geometry) FROM read_parquet('%s') ORDER BY _ploti_record_id"
		x, y := queryRows(t, db, fmt.Sprintf(changes, ca)), queryRows(t, db, fmt.Sprintf(changes, cb))
		if !slices.Equal(x, y) || a.Added != 19 || a.Removed != 19 || a.Changed == 0 {
			t.Fatalf("changes differ or are not the edit's:\n%s\ncompressed:\n%s\n%+v", strings.Join(x, "\n"), strings.Join(y, "\n"), a)
		}
	}
}
