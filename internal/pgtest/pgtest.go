// Package pgtest gives tests a PostgreSQL database of their own, with
// PostGIS, on the cluster that PLOTI_TEST_POSTGRES names (a superuser's
// URL). Without it the tests skip and say how to start a throwaway
// cluster (.ci/pg start); with PLOTI_REQUIRE_POSTGRES=1 (set by .ci/run)
// they fail instead, so CI never passes on skipped PostgreSQL tests.
//
// Each DB call creates a database from a template that has PostGIS
// already (creating the extension takes about a second; copying a
// template a tenth of that) and drops it when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables.
const (
	// EnvURL names the cluster: a superuser's URL, as .ci/pg start prints.
	EnvURL = "PLOTI_TEST_POSTGRES"
	// EnvRequire, when "1", makes a test without a cluster fail.
	EnvRequire = "PLOTI_REQUIRE_POSTGRES"
)

// template is the database every test database is copied from.
const template = "ploti_test_template"

// Hint is what a test without a cluster says.
const Hint = "no PostgreSQL for the tests: set " + EnvURL + " to a superuser's URL, or start a throwaway cluster " +
	"with PostGIS (apt-get install postgresql-15 postgresql-15-postgis-3): eval \"$(.ci/pg start)\"; stop it with .ci/pg stop"

// AdminURL is the cluster's URL, or "" when none is configured.
func AdminURL() string { return os.Getenv(EnvURL) }

// Require skips tb (or fails it, when EnvRequire is set) when no cluster
// is configured, and returns the cluster's URL.
func Require(tb testing.TB) string {
	tb.Helper()
	u := AdminURL()
	if u == "" {
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatal(Hint + " (" + EnvRequire + "=1: CI does not skip these)")
		}
		tb.Skip(Hint)
	}
	return u
}

// DB creates a database for tb with PostGIS installed, drops it when tb
// ends, and returns its URL.
func DB(tb testing.TB) string {
	tb.Helper()
	admin := Require(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	if err := ensureTemplate(ctx, conn); err != nil {
		tb.Fatal(err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "ploti_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, template)); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() { Drop(tb, admin, name) })
	u, err := WithDatabase(admin, name)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// Clone creates a database for tb that is a copy of the test database at
// from (its URL; nothing may be connected to it), drops it when tb ends,
// and returns its URL: a replica copied as a file is copied.
func Clone(tb testing.TB, from string) string {
	tb.Helper()
	admin := Require(tb)
	f, err := url.Parse(from)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "ploti_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, pgx.Identifier{f.Path[1:]}.Sanitize())); err != nil {
		tb.Fatalf("copy test database %s: %v", f.Path[1:], err)
	}
	tb.Cleanup(func() { Drop(tb, admin, name) })
	u, err := WithDatabase(admin, name)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// Drop drops a test database, ending its connections.
func Drop(tb testing.TB, admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Errorf("drop %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		tb.Errorf("drop %s: %v", name, err)
	}
}

// WithDatabase is the URL u with its database replaced by name.
func WithDatabase(u, name string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", EnvURL, err)
	}
	p.Path = "/" + name
	return p.String(), nil
}

// ensureTemplate creates the template database with PostGIS once per
// cluster; test binaries that run at once take turns under an advisory
// lock.
func ensureTemplate(ctx context.Context, conn *pgx.Conn) error {
	const key = 0x706c6f7469 // "ploti"
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return fmt.Errorf("lock the template: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", template).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+template); err != nil {
		return fmt.Errorf("create the template database: %w", err)
	}
	u, err := WithDatabase(conn.Config().ConnString(), template)
	if err != nil {
		return err
	}
	tc, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer tc.Close(ctx)
	if _, err := tc.Exec(ctx, "CREATE EXTENSION postgis"); err != nil {
		conn.Exec(ctx, "DROP DATABASE "+template)
		return fmt.Errorf("create extension postgis (apt-get install postgresql-15-postgis-3): %w", err)
	}
	return nil
}
