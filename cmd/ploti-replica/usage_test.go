package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// placeholderRE is a value name written as a placeholder: one word in
// capitals (PATH, DURATION, PLACE, RECORD_ID).
var placeholderRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// cobra reads a back-quoted word in a flag's usage as its value name:
// "--watches ploti-replica watch add" and "--verify-every verify" in
// --help. Every flag of every command shows a placeholder in capitals, or
// its type as cobra names it; a bool flag shows none.
func TestHelp_flagValueNamesArePlaceholders(t *testing.T) {
	root := newRoot(&Env{Getenv: func(string) string { return "" }})
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			n++
			name, _ := pflag.UnquoteUsage(f)
			switch {
			case f.Value.Type() == "bool":
				if name != "" {
					t.Errorf("%s --%s: a bool flag shows the value name %q in --help", c.CommandPath(), f.Name, name)
				}
			case name == f.Value.Type(), defaultValueNames[name], placeholderRE.MatchString(name):
			default:
				t.Errorf("%s --%s: --help shows the value name %q: back-quote a placeholder in capitals, or none", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if n < 100 {
		t.Fatalf("walked %d flags only", n)
	}
}

// defaultValueNames are the value names pflag gives a type when the usage
// quotes none (pflag.UnquoteUsage).
var defaultValueNames = map[string]bool{"string": true, "strings": true, "int": true, "float": true, "uint": true,
	"duration": true, "ints": true, "uints": true, "floats": true}

// A usage error says once which command refused what, what the command
// wants, and points at that command's --help.
func TestUsage_errorsNameTheCommandOnceAndItsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"datasets", "show"}, "ploti-replica: datasets show: want one dataset id, got 0 (see 'ploti-replica datasets show --help')"},
		{[]string{"history", "ds_x"}, `ploti-replica: history: want a dataset id and a record id, got 1: "ds_x" (see 'ploti-replica history --help')`},
		{[]string{"watch", "add"}, "ploti-replica: watch add: want one or more dataset ids, got 0"},
		{[]string{"webhooks", "delete"}, "ploti-replica: webhooks delete: want one webhook id, got 0"},
		{[]string{"subscriptions", "show", "a", "b"}, `subscriptions show: want one subscription id, got 2: "a" "b"`},
		{[]string{"sync", "extra"}, `ploti-replica: sync takes no arguments, got 1: "extra" (see 'ploti-replica sync --help')`},
		{[]string{"sync", "--nope"}, "ploti-replica: unknown flag: --nope (see 'ploti-replica sync --help')"},
		{[]string{"holds", "nope"}, "(see 'ploti-replica holds --help')"},
		{[]string{"nope"}, "(see 'ploti-replica --help')"},
	} {
		code, _, errs := cli(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) || strings.Contains(errs, "ploti-replica: ploti-replica") ||
			strings.Contains(errs, "arg(s)") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line saying %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
}

// A file's path where a folder was given is said once, as a folder.
func TestUsage_folderForAFileSaysSo(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"status", "--db", dir}, {"sync", "--db", dir, "--api-key", "k", "--subscription", "sub_1", "--api-url", "http://127.0.0.1:1"}} {
		code, _, errs := cli(t, nil, args...)
		if code == exitOK || !strings.Contains(errs, dir+": not a DuckDB file: it is a folder") || strings.Count(errs, "read "+dir) > 0 {
			t.Errorf("%v: exit %d, stderr %q; want the folder named once as a folder", args, code, errs)
		}
	}
	code, _, errs := cli(t, nil, "sync", "--api-key", "k", "--subscription", "sub_1", "--db", filepath.Join(dir, "f.duckdb"), "--publish", dir)
	if code != exitUsage || !strings.Contains(errs, "--publish "+dir+": it is a folder") {
		t.Errorf("--publish a folder: exit %d, %q", code, errs)
	}
}
