package duckdb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
)

// A catch-up from a later snapshot logs how it differs from the table:
// here r0 unchanged, r1 changed in its geometry only, r2 in its list,
// r3 removed and r5 added.
func TestTx_LogSnapshotDiff(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	v1 := mustParquet(t, db, snapQuery[:strings.Index(snapQuery, "FROM range(5)")]+"FROM range(4) t(i)")
	v3 := mustParquet(t, db, `SELECT * REPLACE (
			CASE WHEN _ploti_record_id = 'r1' THEN 'POINT (9 9)'::GEOMETRY ELSE geometry END AS geometry,
			CASE WHEN _ploti_record_id = 'r2' THEN ['a'] ELSE tags END AS tags)
		FROM (`+snapQuery+`) WHERE _ploti_record_id <> 'r3' AND _ploti_record_id <> 'r4'
		UNION ALL SELECT 'r5', 'fl-orange', 'P5', 1, TIMESTAMPTZ '2026-01-01 00:00:00+00', [], NULL`)
	err := db.Update(ctx, func(tx *storage.Tx) error {
		if _, err := tx.Tables().CreateSnapshot(ctx, "t", testCols, []string{v1}); err != nil {
			return err
		}
		n, err := eng(tx).LogSnapshotDiff(ctx, "ds", 3, "t", testCols, []string{v3})
		if err == nil && n != 4 {
			t.Errorf("logged %d changes, want 4", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.SQL().QueryRow(`SELECT string_agg(record_id || ':' || change, ' ' ORDER BY record_id) FROM _ploti.changes
		WHERE dataset_id = 'ds' AND version = 3`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "r1:changed r2:changed r3:removed r5:added"; got != want {
		t.Fatalf("changes logged: %s, want %s", got, want)
	}
}

// FreeTableNames reads the catalog once for many datasets: a name a
// dataset or a user's table holds, or one chosen in the same call, is
// not given again.
func TestDB_FreeTableNames(t *testing.T) {
	ctx := context.Background()
	db := mustOpen(t)
	if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE ds_b AS SELECT 1 AS x; CREATE VIEW ds_c AS SELECT 1 AS x"); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutDataset(ctx, &storage.Dataset{ID: "ds_a", Table: "ds_a"}) }); err != nil {
		t.Fatal(err)
	}
	names, err := db.FreeTableNames(ctx, []string{"DS-A", "ds_b", "ds_c", "ds.d", "ds-d"})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"DS-A": "ds_a_2", "ds_b": "ds_b_2", "ds_c": "ds_c_2", "ds.d": "ds_d", "ds-d": "ds_d_2"} {
		if names[id] != want {
			t.Errorf("%s: %q, want %q", id, names[id], want)
		}
	}
}

// PutAttachmentSets writes what PutAttachments and PutAttachmentError
// write, set for set, with four statements for all.
func TestTx_PutAttachmentSets_writesWhatPutAttachmentsWrites(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	sets := []storage.AttachmentSet{
		{DatasetID: "ds_a", Version: 3, List: []storage.Attachment{
			{Name: "dict.pdf", ContentType: "application/pdf", Bytes: 3, SHA256: "aa", Content: []byte("pdf")},
			{Name: "big.zip", Bytes: 9, SHA256: "bb", Path: "f.attachments/ds_a/big.zip", Version: 2, FetchedAt: at}}},
		{DatasetID: "ds_b", Version: 1, List: nil},
		{DatasetID: "ds_c", Version: 5, Err: "sha256 mismatch"},
		{DatasetID: "ds_d", Version: 2, List: []storage.Attachment{{Name: "empty.txt", Bytes: 0, SHA256: "cc"}}},
	}
	dump := func(db *storage.DB, now time.Time) string {
		var b strings.Builder
		for _, q := range []string{`SELECT dataset_id, version, name, coalesce(content_type, '-'), bytes, sha256, coalesce(content::VARCHAR, '-'),
				coalesce(path, '-'), fetched_at = ? FROM _ploti.attachments ORDER BY ALL`,
			`SELECT dataset_id, version, coalesce(error, '-'), true, 0, '', '', '', synced_at = ? FROM _ploti.attachment_syncs ORDER BY ALL`} {
			arg := at
			if strings.Contains(q, "synced_at") {
				arg = now.Truncate(time.Microsecond) // the transaction's now
			}
			rows, err := db.SQL().Query(q, arg)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				v := make([]any, 9)
				p := make([]any, 9)
				for i := range v {
					p[i] = &v[i]
				}
				if err := rows.Scan(p...); err != nil {
					t.Fatal(err)
				}
				b.WriteString(fmtAll(v) + "\n")
			}
			rows.Close()
		}
		return b.String()
	}
	var got [2]string
	for i := range got {
		db := mustOpen(t)
		// Something kept before, replaced by both.
		if err := db.Update(ctx, func(tx *storage.Tx) error {
			return tx.PutAttachments(ctx, "ds_a", 1, []storage.Attachment{{Name: "old.pdf", Bytes: 1, SHA256: "zz", Content: []byte("x")}})
		}); err != nil {
			t.Fatal(err)
		}
		var now time.Time
		err := db.Update(ctx, func(tx *storage.Tx) error {
			now = tx.Now
			if i == 1 {
				return tx.PutAttachmentSets(ctx, sets)
			}
			for _, s := range sets {
				var err error
				if s.Err != "" {
					err = tx.PutAttachmentError(ctx, s.DatasetID, s.Version, s.Err)
				} else {
					err = tx.PutAttachments(ctx, s.DatasetID, s.Version, s.List)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got[i] = dump(db, now)
	}
	if got[0] != got[1] || !strings.Contains(got[1], "ds_a 3 dict.pdf") || strings.Contains(got[1], "old.pdf") ||
		!strings.Contains(got[1], "ds_c 5 sha256 mismatch true 0    true") || !strings.Contains(got[1], "ds_a 3 - true 0    true") {
		t.Fatalf("one by one:\n%s\nat once:\n%s", got[0], got[1])
	}
}

func fmtAll(v []any) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, " ")
}

// A bootstrap's page records the attachments of its 500 datasets in one
// PutAttachmentSets (with its syncs as a VALUES list of 2,000
// parameters, 65 ms a call at load 3; as one JSON text, 17 ms).
func BenchmarkTx_PutAttachmentSets_500(b *testing.B) {
	ctx := context.Background()
	db := mustOpen(b)
	sets := make([]storage.AttachmentSet, 500)
	for i := range sets {
		sets[i] = storage.AttachmentSet{DatasetID: fmt.Sprintf("ds_%03d", i), Version: 1}
	}
	for b.Loop() {
		if err := db.Update(ctx, func(tx *storage.Tx) error { return tx.PutAttachmentSets(ctx, sets) }); err != nil {
			b.Fatal(err)
		}
	}
}
