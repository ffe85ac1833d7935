package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// outputWorld is the demo world with everything a command prints: a
// synced file with history, a watched dataset, a mark, a review hold and
// one of Ploti's holds.
type outputWorld struct {
	em   *emulator.Emulator
	d    *emulator.Demo
	vars map[string]string
	// filled as the commands run: what later commands name.
	subscription, webhook, record string
}

func newOutputWorld(t *testing.T) *outputWorld {
	t.Helper()
	ctx := context.Background()
	em, d, vars := demoWorld(t)
	w := &outputWorld{em: em, d: d, vars: vars}
	must(t, d.AddWatched())
	if _, err := em.PublishNext(ctx, emulator.DemoWatched); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, vars, "watch", "add", emulator.DemoWatched)
	mustCLI(t, vars, "sync", "--history", "all")
	mustCLI(t, vars, "changes", "--mark", "conv", "--advance")
	must(t, d.Next(ctx)) // the watched dataset's next version too
	mustCLI(t, vars, "sync", "--history", "all")
	// A MAJOR change (the inspections lose a column): held for review.
	cols := []emulator.Column{{Name: "inspection_id", Type: "string"}, {Name: "establishment", Type: "string"},
		{Name: "inspected_on", Type: "date"}, {Name: "recorded_at", Type: "timestamp"},
		{Name: "score", Type: "decimal", Precision: &emulator.Precision{Precision: 5, Scale: 1}}, {Name: "passed", Type: "boolean"}}
	rows := []emulator.Row{{"inspection_id": "INS-1", "establishment": "Cafe", "score": "90.5", "passed": true}}
	if _, err := em.Publish(ctx, emulator.DemoInspections, rows, emulator.WithSchema(cols, []string{"inspection_id"}), emulator.SkipReview()); err != nil {
		t.Fatal(err)
	}
	// And Ploti's own hold of the permits' next version.
	if _, err := em.Publish(ctx, emulator.DemoPermits, []emulator.Row{{"permit_number": "X-1"}}, emulator.Hold("data_check")); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, vars, "sync", "--history", "all")
	return w
}

// jsonStep is one command run with --json: its arguments (from what the
// earlier steps found), whether it prints a list, the keys its object
// always has as lists, the columns whose values it must give typed, and
// what a later step needs of its answer.
type jsonStep struct {
	path  string
	args  func(w *outputWorld) []string
	list  bool
	lists []string
	typed []string
	keep  func(w *outputWorld, v any)
}

func fixed(args ...string) func(*outputWorld) []string {
	return func(*outputWorld) []string { return args }
}

// jsonSteps runs every command that has --json, in an order where each
// finds what it names.
var jsonSteps = []jsonStep{
	{path: "places", args: fixed("places"), list: true},
	{path: "topics", args: fixed("topics"), list: true},
	{path: "datasets list", args: fixed("datasets", "list"), list: true},
	{path: "datasets show", args: fixed("datasets", "show", emulator.DemoPermits)},
	{path: "subscriptions list", args: fixed("subscriptions", "list"), list: true},
	{path: "subscriptions show", args: func(w *outputWorld) []string { return []string{"subscriptions", "show", w.d.SubscriptionID} }},
	{path: "subscriptions preview", args: fixed("subscriptions", "preview", "--place", "fl-orange", "--topic", "development-activity")},
	{path: "subscriptions create", args: fixed("subscriptions", "create", "--name", "Conv", "--place", "fl-seminole"),
		keep: func(w *outputWorld, v any) { w.subscription = field(v, "id") }},
	{path: "subscriptions update", args: func(w *outputWorld) []string {
		return []string{"subscriptions", "update", w.subscription, "--name", "Conv 2"}
	}},
	{path: "subscriptions delete", args: func(w *outputWorld) []string { return []string{"subscriptions", "delete", w.subscription} }},
	{path: "webhooks create", args: fixed("webhooks", "create", "--url", "https://example.org/conv"),
		keep: func(w *outputWorld, v any) { w.webhook = field(v, "id") }},
	{path: "webhooks list", args: fixed("webhooks", "list"), list: true},
	{path: "webhooks test", args: func(w *outputWorld) []string { return []string{"webhooks", "test", w.webhook} }},
	{path: "webhooks delete", args: func(w *outputWorld) []string { return []string{"webhooks", "delete", w.webhook} }},
	{path: "watch add", args: fixed("watch", "add", emulator.DemoParcels), list: true},
	{path: "watch list", args: fixed("watch", "list"), list: true},
	{path: "watch remove", args: fixed("watch", "remove", emulator.DemoParcels), list: true},
	{path: "sync", args: fixed("sync", "--history", "all"), lists: []string{"failed", "heldForReview"}},
	{path: "status", args: fixed("status"), lists: []string{"datasets"}},
	{path: "holds list", args: fixed("holds", "list"), list: true},
	{path: "changes", args: fixed("changes", "--mark", "conv"), lists: []string{"datasets"}, typed: []string{"bond", "valuation"}},
	{path: "diff", args: fixed("diff", emulator.DemoInspections, "--from", "1", "--to", "2"), lists: []string{"changes"}, typed: []string{"score"},
		keep: func(w *outputWorld, v any) { w.record = firstChanged(v) }},
	{path: "history", args: func(w *outputWorld) []string { return []string{"history", emulator.DemoInspections, w.record} }, list: true, typed: []string{"score", "passed"}},
	{path: "verify", args: fixed("verify"), lists: []string{"datasets"}},
	{path: "inbox", args: fixed("inbox"), list: true},
	{path: "holds release", args: fixed("holds", "release", emulator.DemoInspections)},
}

// Every command that takes --json prints the one convention the README
// states: camelCase keys, no nulls, [] for an empty list, lists as bare
// arrays (never an object wrapping one), numbers and booleans typed,
// decimals with their scale, timestamps in RFC 3339 UTC.
func TestJSONConvention_everyCommand(t *testing.T) {
	have := map[string]bool{}
	for _, s := range jsonSteps {
		have[s.path] = true
	}
	var missing []string
	for _, p := range jsonCommands(newRoot(&Env{Getenv: func(string) string { return "" }})) {
		if !have[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("commands with --json that this test does not run (add them to jsonSteps): %v", missing)
	}
	w := newOutputWorld(t)
	for _, s := range jsonSteps {
		args := append(s.args(w), "--json")
		code, out, errs := cli(t, w.vars, args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
		}
		v := decodeJSON(t, s.path, out)
		for _, p := range checkConvention(v, s) {
			t.Errorf("%s --json: %s", s.path, p)
		}
		if s.keep != nil {
			s.keep(w, v)
		}
	}
}

// jsonCommands are the paths (without the root's name) of the commands
// that have a --json flag.
func jsonCommands(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil {
			out = append(out, strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

func decodeJSON(t *testing.T, what, out string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s --json does not parse: %v\n%s", what, err, out)
	}
	return v
}

func field(v any, key string) string {
	m, _ := v.(map[string]any)
	s, _ := m[key].(string)
	return s
}

func firstChanged(v any) string {
	m, _ := v.(map[string]any)
	changes, _ := m["changes"].([]any)
	for _, c := range changes {
		if field(c, "change") == "changed" {
			return field(c, "recordId")
		}
	}
	return ""
}

// The demo's typed columns: numbers (decimals with their scale) and
// booleans, as the output must give them.
var (
	demoScales = map[string]int{"valuation": 2, "bond": 2, "score": 1, "units": 0}
	demoBools  = map[string]bool{"passed": true}
	rowKeys    = map[string]bool{"row": true, "before": true, "after": true, "values": true, "data": true}
	// idKeyed are maps keyed by ids (a topic's, a place's), not by names.
	idKeyed     = map[string]bool{"datasetCounts": true, "byTopic": true, "byPlace": true}
	camelKey    = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	looksLikeTS = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}`)
	numericKeys = map[string]bool{"version": true, "rows": true, "from": true, "to": true, "fromVersion": true, "toVersion": true,
		"validFrom": true, "validTo": true, "added": true, "changed": true, "removed": true, "renamed": true, "storageVersion": true,
		"durationSeconds": true, "eventsSeen": true, "eventsApplied": true, "behind": true}
)

// checkConvention lists what in v breaks the convention.
func checkConvention(v any, s jsonStep) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	top, isObject := v.(map[string]any)
	switch _, isList := v.([]any); {
	case s.list && !isList:
		bad("a list command prints a bare array, got %T", v)
	case !s.list && !isObject:
		bad("prints an object, got %T", v)
	case isObject && len(top) == 1:
		for k, e := range top {
			if _, ok := e.([]any); ok {
				bad("a list wrapped in an object {%q: […]}: lists are bare arrays", k)
			}
		}
	}
	for _, k := range s.lists {
		if _, ok := top[k].([]any); !ok {
			bad("%s is a list: want [] when empty, got %v", k, top[k])
		}
	}
	typed := map[string]bool{}
	walkJSON(v, "$", "", false, typed, bad)
	for _, c := range s.typed {
		if !typed[c] {
			bad("no typed value of column %s found", c)
		}
	}
	return problems
}

// walkJSON checks each value under path; key is its member name, inRow
// whether it is a dataset's row (whose keys are column names).
func walkJSON(v any, path, key string, inRow bool, typed map[string]bool, bad func(string, ...any)) {
	switch x := v.(type) {
	case nil:
		bad("null at %s: leave it out (or [] for a list)", path)
	case map[string]any:
		if name, ok := x["name"].(string); ok && !inRow {
			checkColumnValue(name, x["old"], path+".old", typed, bad)
			checkColumnValue(name, x["new"], path+".new", typed, bad)
		}
		for k, e := range x {
			if !inRow && !idKeyed[key] && !camelKey.MatchString(k) {
				bad("key %q at %s is not camelCase", k, path)
			}
			if inRow {
				checkColumnValue(k, e, path+"."+k, typed, bad)
			}
			walkJSON(e, path+"."+k, k, inRow || rowKeys[k], typed, bad)
		}
	case []any:
		for i, e := range x {
			walkJSON(e, fmt.Sprintf("%s[%d]", path, i), key, inRow, typed, bad)
		}
	case string:
		if looksLikeTS.MatchString(x) {
			if ts, err := time.Parse(time.RFC3339Nano, x); err != nil || !strings.HasSuffix(x, "Z") || ts.Location() != time.UTC {
				bad("timestamp %q at %s is not RFC 3339 UTC", x, path)
			}
		}
		if numericKeys[key] && !inRow {
			bad("%s is a number, given as the string %q", path, x)
		}
	}
}

// checkColumnValue checks a demo column's value: a number with its
// column's scale, or a boolean.
func checkColumnValue(col string, v any, path string, typed map[string]bool, bad func(string, ...any)) {
	if v == nil {
		return
	}
	if scale, ok := demoScales[col]; ok {
		n, isNum := v.(json.Number)
		if !isNum {
			bad("%s (column %s) is a number, got %T %v", path, col, v, v)
			return
		}
		_, frac, _ := strings.Cut(string(n), ".")
		if len(frac) != scale {
			bad("%s (column %s) = %s: want %d decimal(s), the column's scale", path, col, n, scale)
		}
		typed[col] = true
	}
	if demoBools[col] {
		if _, isBool := v.(bool); !isBool {
			bad("%s (column %s) is a boolean, got %T %v", path, col, v, v)
			return
		}
		typed[col] = true
	}
}

// Text output speaks one way too: tables aligned, times in RFC 3339 UTC,
// rows and details as key=value, never a JSON object; decimals with their
// scale.
func TestTextConvention(t *testing.T) {
	w := newOutputWorld(t)
	outs := map[string]string{}
	for _, args := range [][]string{{"status"}, {"holds", "list"}, {"changes", "--mark", "conv"}, {"datasets", "list"}, {"watch", "list"},
		{"diff", emulator.DemoInspections, "--from", "1", "--to", "2"}} {
		outs[strings.Join(args, " ")] = mustCLI(t, w.vars, args...)
	}
	rec := regexp.MustCompile(`changed +(rec_\S+)`).FindStringSubmatch(outs["diff "+emulator.DemoInspections+" --from 1 --to 2"])
	if rec == nil {
		t.Fatalf("diff lists no changed record:\n%s", outs["diff "+emulator.DemoInspections+" --from 1 --to 2"])
	}
	outs["history"] = mustCLI(t, w.vars, "history", emulator.DemoInspections, rec[1])
	spaceDate := regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}`)
	for name, out := range outs {
		if strings.Contains(out, `{"`) {
			t.Errorf("%s prints a JSON object in text:\n%s", name, out)
		}
		if m := spaceDate.FindString(out); m != "" {
			t.Errorf("%s prints the time %q: want RFC 3339 UTC (2026-12-04T04:09:00Z)\n%s", name, m, out)
		}
	}
	for _, name := range []string{"holds list", "status", "datasets list", "watch list"} {
		if p := misaligned(outs[name]); p != "" {
			t.Errorf("%s: %s\n%s", name, p, outs[name])
		}
	}
	if !tableRow(outs["holds list"], emulator.DemoInspections, "local", "schema_review", "at version 2") ||
		!tableRow(outs["holds list"], emulator.DemoPermits, "server", "data_check", "version 2 stays current, Ploti holds the next") ||
		!strings.Contains(outs["holds list"], "pendingVersion=3") {
		t.Errorf("holds list lacks its holds, or their detail as key=value:\n%s", outs["holds list"])
	}
	if !strings.Contains(outs["changes --mark conv"], "bond=12500.00") {
		t.Errorf("changes should print a DECIMAL(12,2) with its scale (bond=12500.00):\n%s", outs["changes --mark conv"])
	}
}

// tableRow reports whether a line of out holds cells in order, each in a
// column of its own (two spaces or more apart).
func tableRow(out string, cells ...string) bool {
	quoted := make([]string, len(cells))
	for i, c := range cells {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return regexp.MustCompile(`(?m)^\s*` + strings.Join(quoted, `\s{2,}`) + `(\s|$)`).MatchString(out)
}

// misaligned checks each table in out (a header line in capitals, the
// rows under it up to a blank line): every row's cell starts where its
// header's column does. It returns the first line that does not.
func misaligned(out string) string {
	lines := strings.Split(out, "\n")
	header := regexp.MustCompile(`^[A-Z][A-Z ]+[A-Z]$`)
	for i := 0; i < len(lines); i++ {
		if !header.MatchString(strings.TrimRight(lines[i], " ")) || !strings.Contains(lines[i], "  ") {
			continue
		}
		starts := columnStarts(lines[i])
		for j := i + 1; j < len(lines) && strings.TrimSpace(lines[j]) != ""; j++ {
			for _, s := range starts[1:] {
				if len(lines[j]) <= s || lines[j][s-1] != ' ' || lines[j][s] == ' ' {
					return fmt.Sprintf("the line %q does not start a cell at column %d", lines[j], s)
				}
			}
		}
	}
	return ""
}

// columnStarts are where a header's columns start: after two spaces.
func columnStarts(h string) []int {
	starts := []int{0}
	for i := 2; i < len(h); i++ {
		if h[i] != ' ' && h[i-1] == ' ' && h[i-2] == ' ' {
			starts = append(starts, i)
		}
	}
	return slices.Clip(starts)
}
