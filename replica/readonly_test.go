package replica

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ploti-replica/ploti-replica/storage"
)

// tableState is what a dataset table holds, as the writer's handle reads
// it: its rows and a sum of their hashes.
func tableState(tb testing.TB, r *Replica, table string) (int64, string) {
	tb.Helper()
	var n int64
	var sum string
	q := fmt.Sprintf("SELECT count(*), coalesce(string_agg(%[1]s, ',' ORDER BY %[1]s), '') FROM %[2]s",
		storage.Ident(storage.ColRecordID), storage.Ident(table))
	if err := r.DB().QueryRowContext(context.Background(), q).Scan(&n, &sum); err != nil {
		tb.Fatal(err)
	}
	return n, sum
}

// refusal is a query the read-only handle must refuse; anyOnPG says that
// PostgreSQL refuses it with an error of its own (several statements in
// one, DuckDB's own statements), not as a write.
type refusal struct {
	q       string
	anyOnPG bool
}

func refusals(table string) []refusal {
	t, id := storage.Ident(table), storage.Ident(storage.ColRecordID)
	return []refusal{
		{q: "CREATE TABLE ro_x (a int)"},
		{q: "INSERT INTO " + t + " (" + id + ") VALUES ('ro-1')"},
		{q: "UPDATE " + t + " SET " + id + " = 'ro-2'"},
		{q: "DELETE FROM " + t},
		{q: "SELECT 1; CREATE TABLE ro_x (a int)", anyOnPG: true},
		{q: "COMMIT; CREATE TABLE ro_x (a int)", anyOnPG: true},
		{q: "SELECT 1; DROP TABLE " + t, anyOnPG: true},
		{q: "DROP TABLE " + t},
		{q: "SELECT nextval('ro_seq')"},
		{q: "ATTACH ':memory:' AS ro_other", anyOnPG: true},
		{q: "PRAGMA version", anyOnPG: true},
	}
}

// ReadOnly() reads the replica's tables and refuses every write, whether
// run with Exec, Query or a prepared statement, several statements in one
// included (duckdb-go runs all but a string's last while preparing it),
// and the tables, the catalog and a sequence are as they were after.
func TestReadOnly_readsAndRefusesWrites(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	table := datasetRow(t, r, "ds_permits").Table
	if _, err := r.DB().ExecContext(ctx, "CREATE SEQUENCE ro_seq"); err != nil {
		t.Fatal(err)
	}
	n, sum := tableState(t, r, table)
	ro := r.ReadOnly()
	var got int64
	if err := ro.QueryRowContext(ctx, "SELECT count(*) FROM "+storage.Ident(table)).Scan(&got); err != nil || got != n || n != 40 {
		t.Fatalf("ReadOnly() counts %d rows (%v), the table has %d, want 40", got, err, n)
	}
	for _, c := range refusals(table) {
		for how, run := range map[string]func() error{
			"Exec":  func() error { _, err := ro.ExecContext(ctx, c.q); return err },
			"Query": func() error { return queryAll(ctx, ro, c.q) },
			"Prepare": func() error {
				st, err := ro.PrepareContext(ctx, c.q)
				if err != nil {
					return err
				}
				defer st.Close()
				_, err = st.ExecContext(ctx)
				return err
			},
		} {
			err := run()
			if err == nil || (!errors.Is(err, ErrReadOnly) && !(c.anyOnPG && !isFile(r.db))) {
				t.Errorf("%s %q through ReadOnly(): %v, want ErrReadOnly", how, c.q, err)
			}
			if err != nil && isFile(r.db) && len(c.q) > 20 && strings.Contains(err.Error(), c.q) {
				t.Errorf("%s %q: the refusal quotes the whole query: %v", how, c.q, err)
			}
		}
	}
	assertUnchanged(t, r, table, n, sum)
}

// queryAll runs q and reads its rows to the end.
func queryAll(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, q string, args ...any) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}

// assertUnchanged checks that the table holds what it held, that no
// ro_x table was made and that ro_seq never moved.
func assertUnchanged(tb testing.TB, r *Replica, table string, n int64, sum string) {
	tb.Helper()
	ctx := context.Background()
	if n2, sum2 := tableState(tb, r, table); n2 != n || sum2 != sum {
		tb.Fatalf("the table changed through ReadOnly(): %d rows, was %d", n2, n)
	}
	var made int
	if err := r.DB().QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'ro_x'").Scan(&made); err != nil || made != 0 {
		tb.Fatalf("ro_x made through ReadOnly(): %d (%v)", made, err)
	}
	var next int64
	if err := r.DB().QueryRowContext(ctx, "SELECT nextval('ro_seq')").Scan(&next); err != nil || next != 1 {
		tb.Fatalf("ro_seq moved through ReadOnly(): next %d (%v), want 1", next, err)
	}
}

// A query through ReadOnly() cannot leave its read-only transaction: not
// by a session setting (PostgreSQL's default_transaction_read_only), not
// by ending the caller's transaction with a query of it, not by asking
// pgx for its simple protocol, which runs several statements.
func TestReadOnly_cannotLeaveItsTransaction(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	table := datasetRow(t, r, "ds_permits").Table
	if _, err := r.DB().ExecContext(ctx, "CREATE SEQUENCE ro_seq"); err != nil {
		t.Fatal(err)
	}
	n, sum := tableState(t, r, table)
	ro := r.ReadOnly()
	ro.SetMaxOpenConns(1) // one session: what a query sets, the next one has
	ro.ExecContext(ctx, "SET default_transaction_read_only = off")
	if _, err := ro.ExecContext(ctx, "CREATE TABLE ro_x (a int)"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("CREATE after SET default_transaction_read_only = off: %v, want ErrReadOnly", err)
	}
	tx, err := ro.BeginTx(ctx, nil)
	must(t, err)
	tx.ExecContext(ctx, "SET TRANSACTION READ WRITE")
	if _, err := tx.ExecContext(ctx, "CREATE TABLE ro_x (a int)"); err == nil {
		t.Errorf("CREATE after SET TRANSACTION READ WRITE in a ReadOnly() transaction was let through")
	}
	tx.Rollback()
	tx, err = ro.BeginTx(ctx, nil)
	must(t, err)
	tx.ExecContext(ctx, "COMMIT")
	if _, err := tx.ExecContext(ctx, "CREATE TABLE ro_x (a int)"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("CREATE after COMMIT in a ReadOnly() transaction: %v, want ErrReadOnly", err)
	}
	tx.Rollback()
	_, err = ro.ExecContext(ctx, "COMMIT; CREATE TABLE ro_x (a int)", pgx.QueryExecModeSimpleProtocol)
	if err == nil {
		t.Errorf("COMMIT; CREATE with pgx's simple protocol asked for was let through")
	}
	assertUnchanged(t, r, table, n, sum)
}

// permitsSeen is what one read of ds_permits saw: the registry's version
// and the table's rows, as the rounds of seedTwo's permits make them.
type permitsSeen struct {
	version int
	rows    int64
	first   string
}

func readPermits(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table string) (permitsSeen, error) {
	var s permitsSeen
	if err := q.QueryRowContext(ctx, "SELECT version FROM _ploti.datasets WHERE dataset_id = 'ds_permits'").Scan(&s.version); err != nil {
		return s, err
	}
	err := q.QueryRowContext(ctx, "SELECT count(*), min(permit) FROM "+storage.Ident(table)).Scan(&s.rows, &s.first)
	return s, err
}

// whole tells whether s is a version as published: v1 is round 0, and
// version v after it round v (40 permits from P-<5v>).
func (s permitsSeen) whole() bool {
	round := s.version
	if round == 1 {
		round = 0
	}
	return s.rows == 40 && s.first == fmt.Sprintf("P-%03d", round*5)
}
