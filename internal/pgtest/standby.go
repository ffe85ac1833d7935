package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvStandbyURL names a hot standby of the cluster EnvURL names, streaming
// from it (a superuser's URL), as .ci/pg start-standby prints.
const EnvStandbyURL = "PLOTI_TEST_POSTGRES_STANDBY"

// StandbyHint is what a test without a standby says.
const StandbyHint = "no hot standby for the tests: set " + EnvStandbyURL + " to a superuser's URL of a streaming standby of " + EnvURL +
	"'s cluster, or start one beside the throwaway cluster: eval \"$(.ci/pg start)\"; eval \"$(.ci/pg start-standby)\"; " +
	"stop it with .ci/pg stop \"$PLOTI_PG_STANDBY_DIR\""

// RequireStandby skips tb (or fails it, when EnvRequire is set) when no
// standby is configured, and returns the standby's URL.
func RequireStandby(tb testing.TB) string {
	tb.Helper()
	standby := os.Getenv(EnvStandbyURL)
	if standby == "" {
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatal(StandbyHint + " (" + EnvRequire + "=1: CI does not skip these)")
		}
		tb.Skip(StandbyHint)
	}
	return standby
}

// Standby is the URL, on the cluster's hot standby, of the test database
// at u (a URL DB gave), once the standby has replayed its creation. It
// skips tb (or fails it, when EnvRequire is set) when no standby is
// configured.
func Standby(tb testing.TB, u string) string {
	tb.Helper()
	admin, standby := Require(tb), RequireStandby(tb)
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pc, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connect to %s: %v", EnvURL, err)
	}
	defer pc.Close(ctx)
	sc, err := pgx.Connect(ctx, standby)
	if err != nil {
		tb.Fatalf("connect to %s: %v", EnvStandbyURL, err)
	}
	defer sc.Close(ctx)
	var recovering bool
	if err := sc.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil || !recovering {
		tb.Fatalf("%s is not a standby (pg_is_in_recovery: %v, %v)", EnvStandbyURL, recovering, err)
	}
	if _, err := WaitReplay(ctx, pc, sc); err != nil {
		tb.Fatalf("the standby has not replayed the test database's creation: %v", err)
	}
	s, err := WithDatabase(standby, p.Path[1:])
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// WaitReplay waits until the standby has replayed all the primary has
// written so far (pg_last_wal_replay_lsn at least the primary's
// pg_current_wal_insert_lsn, both read with superusers' sessions), and
// says how long it waited. The insert position, not pg_current_wal_lsn
// (what is written out): with synchronous_commit off (.ci/pg's cluster),
// a commit's record can still be in the primary's WAL buffers when its
// client has the answer.
func WaitReplay(ctx context.Context, primary, standby *pgx.Conn) (time.Duration, error) {
	start := time.Now()
	var lsn string
	if err := primary.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return 0, fmt.Errorf("the primary's WAL position: %w", err)
	}
	for {
		var done bool
		if err := standby.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&done); err != nil {
			return time.Since(start), fmt.Errorf("the standby's replay position: %w", err)
		}
		if done {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("replay of %s: %w", lsn, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
