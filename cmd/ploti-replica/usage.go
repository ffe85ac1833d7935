package main

// Usage errors in words: which command, what arguments it wants, and
// whose --help to read.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// helpPath is the command whose --help a usage error points at: the
// command that refused the line, or the root when cobra found none.
func helpPath(c *cobra.Command) string {
	if c == nil {
		return "ploti-replica"
	}
	return c.CommandPath()
}

// commandName is c's path without the program's name ("datasets show"),
// for an error that ploti-replica's own prefix starts already.
func commandName(c *cobra.Command) string {
	if c.Root() == c {
		return c.Name()
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// argsError says what arguments c wants, from the placeholders of its Use
// line ("show DATASET", "history DATASET RECORD_ID", "add DATASET..."),
// and what it got: "datasets show: want one dataset id, got 0".
func argsError(c *cobra.Command, args []string) error {
	var want []string
	many := false
	for _, w := range strings.Fields(c.Use)[1:] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
			break // the flags' synopsis
		}
		if strings.HasSuffix(w, "...") {
			many = true
		}
		want = append(want, argWords(c, strings.TrimSuffix(w, "...")))
	}
	got := fmt.Sprintf("got %d", len(args))
	if len(args) > 0 {
		got += ": " + strings.Join(quoted(args), " ")
	}
	name := commandName(c)
	switch {
	case len(want) == 0:
		return fmt.Errorf("%s takes no arguments, %s", name, got)
	case many:
		return fmt.Errorf("%s: want one or more %ss, %s", name, want[0], got)
	case len(want) == 1:
		return fmt.Errorf("%s: want one %s, %s", name, want[0], got)
	}
	return fmt.Errorf("%s: want %s, %s", name, joinAnd(want), got)
}

// argWords is a Use placeholder in words: DATASET "dataset id",
// RECORD_ID "record id", and ID the id of what the command's group
// manages ("webhook id", "subscription id").
func argWords(c *cobra.Command, placeholder string) string {
	switch placeholder {
	case "DATASET":
		return "dataset id"
	case "ID":
		if p := c.Parent(); p != nil && p != c.Root() {
			return strings.TrimSuffix(p.Name(), "s") + " id"
		}
		return "id"
	}
	return strings.ReplaceAll(strings.ToLower(placeholder), "_", " ")
}

func quoted(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprintf("%q", a)
	}
	return out
}

// joinAnd joins words as a list: "a dataset id and a record id".
func joinAnd(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "a " + w
	}
	if len(out) == 2 {
		return out[0] + " and " + out[1]
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1]
}
