package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// tamper changes a file by hand, as a user's stray statement would.
func tamper(t *testing.T, path string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.SQL().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// verify finds a row changed, a row deleted, a row added and a column
// altered by hand, says which in words, and --repair restores each; on a
// clean file it reports all verified.
func TestVerify(t *testing.T) {
	_, _, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	good := vars["PLOTI_DB"]
	code, out, errs := cli(t, vars, "verify")
	if code != exitOK || !strings.Contains(out, "all 3 dataset(s) verified") {
		t.Fatalf("verify on a clean file: exit %d\n%s%s", code, out, errs)
	}
	// README: every --json output gives "durations in seconds
	// (durationSeconds), empty lists as []" and no null.
	if out := mustCLI(t, vars, "verify", "--json"); !strings.Contains(out, `"durationSeconds"`) || strings.Contains(out, "null") {
		t.Fatalf("verify --json:\n%s", out)
	}
	permits := "main." + storage.Ident(emulator.DemoPermits)
	cases := []struct {
		name  string
		stmts []string
		want  string
	}{
		{"a row changed", []string{"UPDATE " + permits + " SET status = 'forged' WHERE permit_number = 'BP-0003'"},
			"1 row(s) differ from version 1 in status (e.g. "},
		{"a row deleted", []string{"DELETE FROM " + permits + " WHERE permit_number = 'BP-0004'"},
			"1 row(s) of version 1 are missing from the table (e.g. "},
		{"a row added", []string{"INSERT INTO " + permits + " SELECT * REPLACE ('rec_by_hand' AS _ploti_record_id, 'BP-9999' AS permit_number) FROM " + permits + " LIMIT 1"},
			"1 row(s) in the table are not in version 1 (e.g. rec_by_hand)"},
		{"a column altered", []string{"ALTER TABLE " + permits + " ALTER COLUMN units TYPE VARCHAR"},
			"column units is VARCHAR in the table, BIGINT in version 1"},
		{"the table dropped", []string{"DROP TABLE " + permits}, "the table is not in the file (dropped?)"},
		// A row held twice matches its version's row twice: the record is
		// named, and the table is not the version even when the registry's
		// count is made to agree with it.
		{"a record held twice", []string{"INSERT INTO " + permits + " SELECT * FROM " + permits + " WHERE permit_number = 'BP-0005'"},
			"1 record id(s) are held by more than one row of the table (e.g. rec_"},
		{"a record held twice, the registry's count raised", []string{"INSERT INTO " + permits + " SELECT * FROM " + permits + " WHERE permit_number = 'BP-0005'",
			"UPDATE _ploti.datasets SET row_count = row_count + 1 WHERE dataset_id = " + storage.Literal(emulator.DemoPermits)},
			"the table has 21 rows, version 1 has 20"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tampered.duckdb")
			copyFile(t, good, path)
			tamper(t, path, tc.stmts...)
			v := map[string]string{}
			for k, val := range vars {
				v[k] = val
			}
			v["PLOTI_DB"] = path
			code, out, errs := cli(t, v, "verify")
			if code != exitPartial || !strings.Contains(out, emulator.DemoPermits+" v1: DIFFERS") || !strings.Contains(out, tc.want) {
				t.Fatalf("verify: exit %d, want 3 and %q\n%s%s", code, tc.want, out, errs)
			}
			if !strings.Contains(out, "2 verified, 1 differ") {
				t.Fatalf("the two untouched datasets should verify:\n%s", out)
			}
			code, out, errs = cli(t, v, "verify", "--repair", "--json")
			var rep replica.VerifyReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || rep.Repaired != 1 || rep.Differ != 0 {
				t.Fatalf("verify --repair: exit %d (%v)\n%s%s", code, err, out, errs)
			}
			if code, out, errs := cli(t, v, "verify"); code != exitOK || !strings.Contains(out, "all 3 dataset(s) verified") {
				t.Fatalf("verify after the repair: exit %d\n%s%s", code, out, errs)
			}
		})
	}
	t.Run("the registry's row count", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tampered.duckdb")
		copyFile(t, good, path)
		tamper(t, path, "UPDATE _ploti.datasets SET row_count = 7 WHERE dataset_id = "+storage.Literal(emulator.DemoParcels))
		v := map[string]string{}
		for k, val := range vars {
			v[k] = val
		}
		v["PLOTI_DB"] = path
		code, out, errs := cli(t, v, "verify", "--dataset", emulator.DemoParcels)
		if code != exitPartial || !strings.Contains(out, "the registry says 7 rows, the table has 15") || strings.Contains(out, emulator.DemoPermits) {
			t.Fatalf("verify --dataset %s: exit %d\n%s%s", emulator.DemoParcels, code, out, errs)
		}
	})
}

// docs (schemas-and-holds): "Records that did not change keep the value
// your table gives a new column, usually null, until you reload": after a
// MINOR change merged from a changes file, the new column's NULLs are a
// note, not a difference; a version past retention is unverifiable, not
// a difference.
func TestVerify_minorChangeAndRetention(t *testing.T) {
	em, _, vars := demoWorld(t)
	ctx := context.Background()
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	cols := []emulator.Column{{Name: "permit_number", Type: "string"}, {Name: "status", Type: "string"},
		{Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
		{Name: "issued", Type: "date"}, {Name: "units", Type: "integer"},
		{Name: "geometry", Type: "geometry", Geometry: &emulator.GeometryInfo{CRS: "EPSG:4326", Types: []string{"Point"}}},
		{Name: "inspector", Type: "string"}}
	q := `SELECT 'BP-' || lpad(i::VARCHAR, 4, '0') AS permit_number,
	CASE WHEN i % 3 = 0 THEN 'issued' WHEN i % 3 = 1 THEN 'applied' ELSE 'under_review' END AS status,
	(1000 * i + CASE WHEN i = 7 THEN 5 ELSE 0 END + 0.25)::DECIMAL(14,2) AS valuation,
	DATE '2026-10-01' + i::INTEGER AS issued, (i % 4) + 1 AS units,
	'POINT (' || (-81.38 + i * 0.001) || ' ' || (28.54 + i * 0.0005) || ')' AS geometry, 'inspector ' || (i % 13) AS inspector
FROM range(0, 20) t(i)`
	rel, err := em.PublishQuery(ctx, emulator.DemoPermits, q, emulator.WithSchema(cols, []string{"permit_number"}))
	if err != nil || rel.SchemaBump != "minor" {
		t.Fatalf("publish a MINOR change: %+v %v", rel, err)
	}
	if code, out, errs := cli(t, vars, "sync"); code != exitOK || !strings.Contains(out, "1 changes file(s) merged") {
		t.Fatalf("sync the MINOR change: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := cli(t, vars, "verify")
	if code != exitOK || !strings.Contains(out, emulator.DemoPermits+" v2: verified") ||
		!strings.Contains(out, "note: column inspector, added by a MINOR change, is NULL in ") {
		t.Fatalf("verify after a MINOR change: exit %d\n%s%s", code, out, errs)
	}
	// The same table with a NULL where no MINOR change explains it differs.
	path := filepath.Join(t.TempDir(), "nulled.duckdb")
	copyFile(t, vars["PLOTI_DB"], path)
	tamper(t, path, "UPDATE main."+storage.Ident(emulator.DemoPermits)+" SET status = NULL WHERE permit_number = 'BP-0002'")
	v := map[string]string{}
	for k, val := range vars {
		v[k] = val
	}
	v["PLOTI_DB"] = path
	if code, out, errs := cli(t, v, "verify"); code != exitPartial || !strings.Contains(out, "1 row(s) differ from version 2 in status") {
		t.Fatalf("verify with a status set to NULL by hand: exit %d\n%s%s", code, out, errs)
	}

	// Ploti moves on and the file does not: past retention, version 2's
	// files are gone.
	if _, err := em.PublishQuery(ctx, emulator.DemoPermits, strings.Replace(q, "i = 7", "i = 8", 1), emulator.WithSchema(cols, []string{"permit_number"})); err != nil {
		t.Fatal(err)
	}
	em.Advance(emulator.Retention + 48*time.Hour)
	code, out, errs = cli(t, vars, "verify", "--dataset", emulator.DemoPermits)
	if code != exitOK || !strings.Contains(out, emulator.DemoPermits+" v2: unverifiable: version 2 is no longer served (past retention)") {
		t.Fatalf("verify past retention: exit %d\n%s%s", code, out, errs)
	}
}

// A snapshot that cannot be read (its bytes not as signed) leaves a
// dataset unverifiable: a verify that could compare nothing else is no
// success (exit 1, saying why). The counts Ploti and the registry give
// still say when rows went missing: a row deleted by hand is found all
// the same.
func TestVerify_countsWhenTheSnapshotCannotBeRead(t *testing.T) {
	em, _, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	em.Inject(emulator.Fault{Match: "/files/**", Kind: emulator.FaultCorrupt, Count: -1})
	defer em.ClearFaults()
	code, out, errs := cli(t, vars, "verify", "--dataset", emulator.DemoPermits)
	if code != exitFailure || !strings.Contains(out, "unverifiable") || !strings.Contains(errs, "no dataset could be verified") {
		t.Fatalf("verify with the snapshot unreadable, nothing changed: exit %d, want %d\n%s%s", code, exitFailure, out, errs)
	}
	tamper(t, vars["PLOTI_DB"], "DELETE FROM main."+storage.Ident(emulator.DemoPermits)+" WHERE permit_number = 'BP-0004'")
	code, out, errs = cli(t, vars, "verify", "--dataset", emulator.DemoPermits)
	if code != exitPartial || !strings.Contains(out, "the table has 19 rows, version 1 has 20") || !strings.Contains(out, "the registry says 20 rows, the table has 19") {
		t.Fatalf("verify with a row deleted and the snapshot unreadable: exit %d, want %d and the counts\n%s%s", code, exitPartial, out, errs)
	}
}
