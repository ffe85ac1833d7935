package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/internal/pgtest"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// The crash harness with the replica in PostgreSQL ("the crash
// harness (kills of the client; PostgreSQL itself survives)"): the same
// world and kill plans as TestCrash, fewer scenarios. A sync process is
// killed (SIGKILL) at planned moments of its requests, resumed, killed
// again, and the sync that finishes must leave the database with the
// content a sync that never crashed left: tables, rows, columns, the
// registry, holds, id maps, changes log, applied events and cursor.
// PostgreSQL rolls back the killed session's transaction, and the writer's
// advisory lock goes with the session.
func TestCrash_postgres(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness builds the binary and runs it about 50 times")
	}
	pgtest.Require(t)
	w := newCrashWorld(t)
	w.bin = harnessBinary(t)
	h := newHarness(t, w, "crash harness on PostgreSQL", crashKind)
	clean := func(from string) (string, map[string]string, []string) {
		t.Helper()
		u := pgtest.DB(t)
		if from != "" {
			u = pgtest.Clone(t, from)
		}
		run := h.clean(u)
		fp, err := pgFingerprint(t, u)
		if err != nil {
			t.Fatal(err)
		}
		return u, fp, run.seq
	}
	base, _, _ := clean("")
	w.moreVersions(t)
	want := map[string]map[string]string{}
	seqs := map[string][]string{}
	_, want["catch-up"], seqs["catch-up"] = clean(base)
	_, want["bootstrap"], seqs["bootstrap"] = clean("")
	if holds := want["catch-up"]["_ploti.holds"]; !strings.Contains(holds, "local") || !strings.Contains(holds, "server") {
		t.Fatalf("the catch-up should end with a local and a server hold: %q", holds)
	}

	scenarios := scenarioPlan{seed: 17, counts: map[string]int{"bootstrap": crashShare(4), "catch-up": crashShare(8)},
		delays:  []time.Duration{0, time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond},
		resumes: func(i int) int { return 1 + i%2 }, maxAt: 10, faultEvery: 4, faultAt: 2,
	}.scenarios(seqs)
	for i, sc := range scenarios {
		u := pgtest.DB(t)
		if sc.from == "catch-up" {
			u = pgtest.Clone(t, base)
		}
		h.play(i, u, sc, func() []string {
			fp, err := pgFingerprint(t, u)
			if err != nil {
				return []string{"read the database: " + err.Error()}
			}
			return diff(fp, want[sc.from])
		})
	}
	h.report(len(scenarios), crashKills(12, 12, len(scenarios))) // at least one a scenario
}

// pgFingerprint is fingerprint (crash_test.go) of a replica in
// PostgreSQL, in PostgreSQL's SQL: md5 of the sorted rows where the file's
// takes DuckDB's hash of each.
func pgFingerprint(t *testing.T, u string) (map[string]string, error) {
	t.Helper()
	ctx := context.Background()
	db, err := backends.Open(ctx, u, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	q := db.SQL()
	out := map[string]string{}
	one := func(key, query string) error {
		var s string
		if err := q.QueryRowContext(ctx, query).Scan(&s); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		out[key] = s
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'spatial_ref_sys' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	out["tables"] = strings.Join(tables, ",")
	for _, tb := range tables {
		id := storage.Ident(tb)
		if err := one("rows of "+tb, `SELECT count(*)::text || ' rows, md5 ' || coalesce(md5(string_agg(t::text, chr(10) ORDER BY t::text)), '-') FROM `+id+` AS t`); err != nil {
			return nil, err
		}
		if err := one("columns of "+tb, `SELECT string_agg(column_name || ' ' || udt_name, ', ' ORDER BY ordinal_position) FROM information_schema.columns
			WHERE table_schema = 'public' AND table_name = `+storage.Literal(tb)); err != nil {
			return nil, err
		}
	}
	parts := map[string]string{
		"_ploti.datasets": `SELECT coalesce(string_agg(concat_ws(' | ', dataset_id, table_name, coalesce(version, 0), status, coalesce(status_reason, ''),
			coalesce(row_count, 0), coalesce(schema_version, ''), key_columns::text, columns::text, skip_until_removed,
			coalesce(previous_version, 0), coalesce(last_error, ''), source), chr(10) ORDER BY dataset_id), '') FROM _ploti.datasets`,
		"_ploti.holds": `SELECT coalesce(string_agg(concat_ws(' | ', dataset_id, coalesce(version, 0), kind, reason, coalesce(detail::text, '')),
			chr(10) ORDER BY dataset_id, kind), '') FROM _ploti.holds`,
		"_ploti.id_map": `SELECT count(*) || ' ' || coalesce(md5(string_agg(concat_ws('|', dataset_id, version, from_id, to_id), ',' ORDER BY dataset_id, version, from_id)), '-')
			FROM _ploti.id_map`,
		"_ploti.changes": `SELECT count(*) || ' ' || coalesce(md5(string_agg(concat_ws('|', dataset_id, version, record_id, change), ',' ORDER BY dataset_id, version, record_id, change)), '-')
			FROM _ploti.changes`,
		"_ploti.applied_events": `SELECT count(*) || ' ' || count(DISTINCT event_id) || ' ' || coalesce(md5(string_agg(event_id, ',' ORDER BY event_id)), '-')
			FROM _ploti.applied_events`,
		"_ploti.subscription": `SELECT coalesce(string_agg(concat_ws(' | ', subscription_id, coalesce(cursor, '')), chr(10)), '') FROM _ploti.subscription`,
	}
	for k, query := range parts {
		if err := one(k, query); err != nil {
			return nil, err
		}
	}
	return out, nil
}
