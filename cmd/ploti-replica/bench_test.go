package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseRows(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"1000000,10000000", "[1000000 10000000]"},
		{"1M, 10m", "[1000000 10000000]"},
		{"100k", "[100000]"},
		{"1_000_000", "[1000000]"},
		{"0", "error"},
		{"ten", "error"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseRows(tc.in)
			s := fmt.Sprint(got)
			if err != nil {
				s = "error"
			}
			if s != tc.want {
				t.Fatalf("parseRows(%q) = %s, want %s", tc.in, s, tc.want)
			}
		})
	}
}

// bench --only postgres with no PostgreSQL is a usage error that says how
// to start one; --postgres takes only a postgres:// URL.
func TestBench_postgresUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"no URL", nil, []string{"bench", "--only", "postgres"}, `eval "$(.ci/pg start)"`},
		{"not a URL", nil, []string{"bench", "--only", "postgres", "--postgres", "host=/tmp"}, "want a postgres:// URL"},
		{"bad size", map[string]string{"PLOTI_TEST_POSTGRES": "postgres://u@/postgres"}, []string{"bench", "--only", "postgres", "--postgres-rows", "lots"}, "--postgres-rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := cli(t, tc.vars, tc.args...)
			if code != exitUsage || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d mentioning %q", code, errs, exitUsage, tc.want)
			}
		})
	}
}
