package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/replica"
)

// failingWriter is a consumer that dies: every write fails.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func changesJSON(t *testing.T, vars map[string]string, args ...string) *replica.ChangeSet {
	t.Helper()
	code, out, errs := cli(t, vars, append([]string{"changes", "--json"}, args...)...)
	var cs replica.ChangeSet
	if code != exitOK || json.Unmarshal([]byte(out), &cs) != nil {
		t.Fatalf("changes --json %v: exit %d\n%s\n%s", args, code, out, errs)
	}
	return &cs
}

func countChanges(cs *replica.ChangeSet) (n int) {
	for _, d := range cs.Datasets {
		n += len(d.Changes)
	}
	return n
}

// "moves it only with --advance, after the output is written, so
// a consumer that dies in between sees the same changes again".
func TestChanges_MarkMovesOnlyAfterTheOutputIsWritten(t *testing.T) {
	ctx := context.Background()
	_, d, vars := demoWorld(t)
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d\n%s%s", code, out, errs)
	}
	if cs := changesJSON(t, vars, "--mark", "agent", "--advance"); len(cs.Datasets) != 3 || countChanges(cs) != 0 {
		t.Fatalf("a new mark on a first sync: %+v", cs)
	}
	if err := d.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("sync: %d %s", code, errs)
	}
	first := changesJSON(t, vars, "--mark", "agent")
	if countChanges(first) == 0 {
		t.Fatalf("the demo's next version changed nothing? %+v", first)
	}
	// The consumer dies while reading (its pipe breaks): the mark stays.
	env := &Env{Stdout: failingWriter{}, Stderr: &bytes.Buffer{}, Getenv: func(k string) string { return vars[k] }}
	if code := run(ctx, env, []string{"changes", "--mark", "agent", "--advance"}); code == exitOK {
		t.Fatalf("changes --advance into a broken pipe exits 0")
	}
	again := changesJSON(t, vars, "--mark", "agent", "--advance")
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Fatalf("after a failed write the changes differ:\n%s\n%s", a, b)
	}
	if cs := changesJSON(t, vars, "--mark", "agent"); countChanges(cs) != 0 {
		t.Fatalf("after --advance, changes remain: %+v", cs)
	}
	code, out, _ := cli(t, vars, "changes", "--mark", "agent")
	if code != exitOK || !strings.Contains(out, "nothing new since v2") {
		t.Fatalf("changes in words: exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, vars, "changes", "--mark", "agent", "--forget"); code != exitOK || !strings.Contains(out, "forgot mark agent") {
		t.Fatalf("--forget: exit %d %s", code, out)
	}
	if code, _, _ := cli(t, vars, "changes"); code != exitUsage {
		t.Fatalf("changes without --mark: exit %d, want usage", code)
	}
}

// README: "Each of these takes --json … (each command's --help gives its
// shape)", and a dataset that keeps history answers "with the row before
// (before) and the columns that changed". Every key `changes --json`
// prints, those of a history's changes included, is in `changes --help`.
func TestChanges_helpGivesEveryKeyOfTheJSON(t *testing.T) {
	ctx := context.Background()
	_, d, vars := demoWorld(t)
	mustCLI(t, vars, "sync", "--history", "all")
	mustCLI(t, vars, "changes", "--mark", "agent", "--advance")
	if err := d.Next(ctx); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, vars, "sync", "--history", "all")
	var doc any
	if err := json.Unmarshal([]byte(mustCLI(t, vars, "changes", "--mark", "agent", "--json")), &doc); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				keys[k] = true
				if k != "row" && k != "before" { // a record's columns, not the shape's
					walk(x)
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if !keys["columns"] || !keys["before"] {
		t.Fatalf("changes of a dataset that keeps history give no before or columns: %v", keys)
	}
	help := mustCLI(t, vars, "changes", "--help")
	for k := range keys {
		if !strings.Contains(help, `"`+k+`"`) {
			t.Errorf("changes --json prints %q, which changes --help does not give", k)
		}
	}
}
