package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The library's errors carry no CLI advice; the CLI adds its own at the
// end of the error's line: the command or flag that does what the error
// says (hints.go).
func TestHint_afterTheLibrarysError(t *testing.T) {
	_, d, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	mustCLI(t, vars, "subscriptions", "delete", d.SubscriptionID)
	_, _, errs := cli(t, vars, "sync")
	assertHint(t, errs, "Ploti does not know subscription "+d.SubscriptionID, "(hint: `ploti-replica subscriptions list` shows your subscriptions")

	// A file a newer DuckDB wrote.
	head := make([]byte, 4096)
	copy(head[8:12], "DUCK")
	binary.LittleEndian.PutUint64(head[12:20], 69)
	newer := filepath.Join(t.TempDir(), "newer.duckdb")
	if err := os.WriteFile(newer, head, 0o600); err != nil {
		t.Fatal(err)
	}
	vars["PLOTI_DB"] = newer
	_, _, errs = cli(t, vars, "status")
	assertHint(t, errs, "storage version 69", "(hint: rebuild the replica into a new --db file: `ploti-replica sync --db NEW.duckdb`")
}

// assertHint checks that stderr ends with the error (naming what) on one
// line, with no CLI advice in the error's own words and the hint after
// them.
func assertHint(tb testing.TB, stderr, what, hint string) {
	tb.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	cause, _, found := strings.Cut(last, " (hint: ")
	switch {
	case !strings.HasPrefix(last, "ploti-replica: ") || !strings.Contains(cause, what):
		tb.Fatalf("stderr does not end with the error naming %q:\n%s", what, stderr)
	case strings.Contains(cause, "`ploti-replica") || strings.Contains(cause, " --"):
		tb.Fatalf("the library's error carries CLI advice: %s", cause)
	case !found || !strings.HasSuffix(last, ")") || !strings.Contains(last, hint):
		tb.Fatalf("no %q after the error:\n%s", hint, stderr)
	case repeated(last) != "":
		tb.Fatalf("the hint says again what the error says (%q):\n%s", repeated(last), last)
	}
}

// repeated is a sequence of three words s says twice, or "".
func repeated(s string) string {
	var words []string
	for _, w := range strings.Fields(s) {
		if w = strings.ToLower(strings.Trim(w, ":;,.()`")); w != "" {
			words = append(words, w)
		}
	}
	seen := map[string]bool{}
	for i := 0; i+3 <= len(words); i++ {
		g := strings.Join(words[i:i+3], " ")
		if seen[g] {
			return g
		}
		seen[g] = true
	}
	return ""
}
