// Command ploti-replica keeps a local DuckDB file current with a Ploti Data
// Feeds subscription.
//
//	ploti-replica demo                      the whole story on the bundled emulator
//	ploti-replica places|topics|datasets    find what to subscribe to
//	ploti-replica subscriptions preview|create|update|delete|show
//	ploti-replica sync --db feeds.duckdb    bootstrap or catch up, then exit
//	ploti-replica status --db feeds.duckdb  what the file holds, and why
//	ploti-replica holds list|release        datasets held for review
//	ploti-replica serve                     webhooks as the signal, the log as the record
//	ploti-replica emulator                  a standalone emulator to try things by hand
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/replica"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitPartial = 3 // the sync ran, some datasets failed
	exitLocked  = 4 // another process holds the file
	// Ploti asked to come back later than --retry-after-budget allows.
	exitRateLimited = 5
	// A command stopped by SIGINT or SIGTERM exits 128 + the signal's
	// number, as shells report it: 130 and 143.
	exitSignal = 128
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if sig, ok := <-sigs; ok {
			cancel(&signalError{sig.(syscall.Signal)})
			signal.Stop(sigs) // a second signal kills at once
		}
	}()
	env := &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Stdin: os.Stdin}
	os.Exit(run(ctx, env, os.Args[1:]))
}

// signalError is the cause of a context cancelled by SIGINT or SIGTERM.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "stopped by " + signalName(e.sig) }

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// Env is what commands read and write: tests pass their own.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader
	Getenv         func(string) string
}

// run executes the command line and maps its error to an exit code.
func run(ctx context.Context, env *Env, args []string) int {
	root := newRoot(env)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ue *usageError
	var se *signalError
	switch {
	case errors.As(err, &ue) || isCobraUsage(err):
		fmt.Fprintf(env.Stderr, "ploti-replica: %s (see '%s --help')\n", oneLine(err), helpPath(c))
		return exitUsage
	case errors.As(context.Cause(ctx), &se):
		// serve ends cleanly on a signal (err nil above); anything else
		// that a signal stopped says so, once.
		fmt.Fprintf(env.Stderr, "ploti-replica: %s; the last committed state stays\n", se)
		return exitSignal + int(se.sig)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(env.Stderr, "ploti-replica: interrupted; the last committed state stays")
		return exitFailure
	case errors.Is(err, replica.ErrNoFile):
		fmt.Fprintf(env.Stderr, "ploti-replica: %s (`ploti-replica sync` creates it; check --db or PLOTI_DB)\n", oneLine(err))
		return exitFailure
	}
	fmt.Fprintf(env.Stderr, "ploti-replica: %s%s\n", oneLine(err), hintOf(err, dbOf(c, env)))
	return exitCode(err)
}

// exitCode is the exit code of a command's error past the cases run
// words on their own.
func exitCode(err error) int {
	switch {
	case errors.Is(err, replica.ErrPartial), errors.Is(err, replica.ErrDiffers):
		return exitPartial
	case errors.Is(err, replica.ErrLocked):
		return exitLocked
	case errors.Is(err, fetch.ErrRetryBudget):
		return exitRateLimited
	}
	return exitFailure
}

// oneLine folds an error (DuckDB's run over several lines) onto one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// isCobraUsage reports the command-line errors cobra makes itself, which
// carry no type: an unknown command, and arguments a command's Args
// refuses (wrapped as usageError where ours, see usageArgs).
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag")
}

// usageArgs makes every command's argument check a usage error (exit 2).
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return &usageError{argsError(c, args)}
			}
			return nil
		}
	} else if !cmd.Runnable() && cmd.HasSubCommands() {
		// A group (holds, webhooks …) run with an unknown word.
		cmd.Args = func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return &usageError{fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())}
			}
			return nil
		}
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func newRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "ploti-replica",
		Short: "Keep a local DuckDB file current with a Ploti Data Feeds subscription and the datasets you watch",
		Long: "Keep a local DuckDB file current with a Ploti Data Feeds subscription and the datasets you watch:\n" +
			"every table always a whole version Ploti published, readable by any DuckDB client.\n" +
			"--db takes a file path or a postgres:// URL (the same replica in PostgreSQL/PostGIS).\n\n" +
			"Start with `ploti-replica demo` (no account needed), then `ploti-replica sync`.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(newSyncCmd(env), newStatusCmd(env), newHoldsCmd(env), newDemoCmd(env), newEmulatorCmd(env), newBenchCmd(env), newBenchChildCmd(env), newServeCmd(env), newWebhooksCmd(env), newWatchCmd(env), newInboxCmd(env), newSubscriptionsCmd(env))
	root.AddCommand(newVerifyCmd(env))
	root.AddCommand(newPlacesCmd(env), newTopicsCmd(env), newDatasetsCmd(env), newChangesCmd(env), newHistoryCmd(env), newDiffCmd(env))
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	usageArgs(root)
	return root
}
