package emulator

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestEmulator_Publish_ChangesAndIDs(t *testing.T) {
	em := mustEmulator(t)
	ctx := context.Background()
	db := testDB(t)
	v1 := mustPublish(t, em, []Row{permit("P-1", "100.00", 1), permit("P-2", "200.00", 2), permit("P-3", "300.00", 3)})
	if got, want := v1.Version, 1; got != want {
		t.Fatalf("version = %d, want %d", got, want)
	}
	if v1.ResyncReason != "first_version" || v1.SchemaVersion != "1.0" || v1.RowCount != 3 {
		t.Fatalf("v1 = %+v", v1)
	}
	snap1, _ := em.SnapshotFiles(ctx, dsPermits, 1)
	ids1 := queryRows(t, db, "SELECT permit_number || '=' || _ploti_record_id || '@' || _ploti_place_id FROM "+parquetList(snap1)+" ORDER BY 1")
	if got, want := strings.Join(ids1, " "), "P-1=rec_d1_1@fl-orange P-2=rec_d1_2@fl-orange P-3=rec_d1_3@fl-orange"; got != want {
		t.Fatalf("v1 ids = %s, want %s", got, want)
	}
	if cf, _ := em.ChangesFile(ctx, dsPermits, 1); cf != "" {
		t.Fatalf("first version has changes file %s", cf)
	}

	// v2: P-1 unchanged, P-2 changed, P-3 removed, P-4 added.
	v2 := mustPublish(t, em, []Row{permit("P-4", "400.00", 4), permit("P-1", "100.00", 1), permit("P-2", "250.50", 2)}, Parts(2))
	if v2.Added != 1 || v2.Changed != 1 || v2.Removed != 1 || v2.ResyncRequired || *v2.PreviousVersion != 1 || v2.SchemaVersion != "1.0" {
		t.Fatalf("v2 = %+v", v2)
	}
	cf, err := em.ChangesFile(ctx, dsPermits, 2)
	if err != nil || cf == "" {
		t.Fatalf("ChangesFile: %q %v", cf, err)
	}
	got := queryRows(t, db, "SELECT _ploti_change, _ploti_record_id, _ploti_place_id, permit_number, valuation, ST_AsText(geometry) FROM read_parquet('"+cf+"') ORDER BY 1, 2")
	want := []string{
		"added|rec_d1_4|fl-orange|P-4|400.00|POINT (4 28.5)",
		"changed|rec_d1_2|fl-orange|P-2|250.50|POINT (2 28.5)",
		"removed|rec_d1_3|∅|∅|∅|∅",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("changes =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	snap2, _ := em.SnapshotFiles(ctx, dsPermits, 2)
	if len(snap2) != 2 {
		t.Fatalf("parts = %d, want 2", len(snap2))
	}
	got = queryRows(t, db, "SELECT permit_number, _ploti_record_id FROM "+parquetList(snap2)+" ORDER BY 1")
	want = []string{"P-1|rec_d1_1", "P-2|rec_d1_2", "P-4|rec_d1_4"}
	if !slices.Equal(got, want) {
		t.Fatalf("snapshot v2 = %v, want %v", got, want)
	}

	// v3: P-3 comes back: ids are never reused, so it gets a new one
	// (counter 6 after two versions of 3 rows, + its place 4).
	mustPublish(t, em, []Row{permit("P-1", "100.00", 1), permit("P-2", "250.50", 2), permit("P-4", "400.00", 4), permit("P-3", "300.00", 3)})
	snap3, _ := em.SnapshotFiles(ctx, dsPermits, 3)
	got = queryRows(t, db, "SELECT permit_number, _ploti_record_id FROM "+parquetList(snap3)+" WHERE permit_number = 'P-3'")
	if want := []string{"P-3|rec_d1_10"}; !slices.Equal(got, want) {
		t.Fatalf("returning record = %v, want %v", got, want)
	}
	// Truth of an updated version equals its snapshot when the schema did not change.
	tr, err := em.Truth(ctx, dsPermits, 3)
	if err != nil {
		t.Fatal(err)
	}
	a := queryRows(t, db, "SELECT * EXCLUDE (geometry), ST_AsText(geometry) FROM read_parquet('"+tr+"') ORDER BY _ploti_record_id")
	b := queryRows(t, db, "SELECT * EXCLUDE (geometry), ST_AsText(geometry) FROM "+parquetList(snap3)+" ORDER BY _ploti_record_id")
	if !slices.Equal(a, b) {
		t.Fatalf("truth v3 =\n%s\nsnapshot =\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

func TestEmulator_Publish_ValuesSurvive(t *testing.T) {
	em := mustEmulator(t)
	db := testDB(t)
	mustPublish(t, em, []Row{permit("P-1", "12345.67", -81.25)})
	snap, _ := em.SnapshotFiles(context.Background(), dsPermits, 1)
	got := queryRows(t, db, `SELECT permit_number, valuation, issued, updated_at, tags, final, extra, ST_AsText(geometry),
		typeof(geometry), typeof(valuation), typeof(updated_at) FROM `+parquetList(snap))
	want := []string{`P-1|12345.67|2026-10-01|2026-10-02 03:04:05+00|[a, b]|true|{"k": 1}|POINT (-81.25 28.5)|GEOMETRY('OGC:CRS84')|DECIMAL(14,2)|TIMESTAMP WITH TIME ZONE`}
	if !slices.Equal(got, want) {
		t.Fatalf("row =\n%v\nwant\n%v", got, want)
	}
	geo := queryRows(t, db, "SELECT decode(value) FROM parquet_kv_metadata('"+snap[0]+"') WHERE decode(key) = 'geo'")
	if len(geo) != 1 || !strings.Contains(geo[0], `"encoding":"WKB"`) {
		t.Fatalf("geo metadata = %v", geo)
	}
}

func TestEmulator_PublishQuery(t *testing.T) {
	em := mustEmulator(t)
	ctx := context.Background()
	q := `SELECT 'P-' || i AS permit_number, (i * 10)::DECIMAL(14,2) AS valuation, DATE '2026-01-01' + i::INTEGER AS issued,
		NULL AS updated_at, ['x'] AS tags, i % 2 = 0 AS final, NULL AS extra, 'POINT (' || i || ' 1)' AS geometry FROM range(1, 1001) t(i)`
	r1, err := em.PublishQuery(ctx, dsPermits, q, Parts(3))
	if err != nil {
		t.Fatal(err)
	}
	if r1.RowCount != 1000 {
		t.Fatalf("rows = %d", r1.RowCount)
	}
	r2, err := em.PublishQuery(ctx, dsPermits, strings.Replace(q, "range(1, 1001)", "range(2, 1002)", 1))
	if err != nil {
		t.Fatal(err)
	}
	if r2.Added != 1 || r2.Removed != 1 || r2.Changed != 0 || r2.Held {
		t.Fatalf("r2 = %+v", r2)
	}
	snap, _ := em.SnapshotFiles(ctx, dsPermits, 1)
	db := testDB(t)
	if got := queryRows(t, db, "SELECT count(*), count(DISTINCT _ploti_record_id) FROM "+parquetList(snap)); got[0] != "1000|1000" {
		t.Fatalf("snapshot count = %v", got)
	}
}
