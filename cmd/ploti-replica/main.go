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

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitPartial = 3 // the sync ran, some datasets failed
	exitLocked  = 4 // another process holds the file
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Stdin: os.Stdin}
	os.Exit(run(ctx, env, os.Args[1:]))
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
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "ploti-replica: %v\n", err)
		return exitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(env.Stderr, "ploti-replica: interrupted; the last committed state stays")
		return exitFailure
	case errors.Is(err, replica.ErrPartial):
		fmt.Fprintf(env.Stderr, "ploti-replica: %s\n", oneLine(err))
		return exitPartial
	case errors.Is(err, storage.ErrLocked):
		fmt.Fprintf(env.Stderr, "ploti-replica: %s\n", oneLine(err))
		return exitLocked
	}
	fmt.Fprintf(env.Stderr, "ploti-replica: %s\n", oneLine(err))
	return exitFailure
}

// oneLine folds an error (DuckDB's run over several lines) onto one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func newRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:           "ploti-replica",
		Short:         "Keep a local DuckDB file current with a Ploti Data Feeds subscription",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.AddCommand(newSyncCmd(env), newStatusCmd(env), newHoldsCmd(env), newDemoCmd(env), newEmulatorCmd(env), newBenchCmd(env), newBenchChildCmd(env), newServeCmd(env), newWebhooksCmd(env), newSubscriptionsCmd(env))
	root.AddCommand(newPlacesCmd(env), newTopicsCmd(env), newDatasetsCmd(env))
	return root
}
