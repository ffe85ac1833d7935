package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/emulator"
)

type emulatorCmd struct {
	env          *Env
	Listen       string
	Files        string
	Dir          string
	APIKey       string
	Demo         bool
	PublishEvery time.Duration
}

// emulatorDriveHelp is how to drive a running emulator, for its --help and
// its banner.
const emulatorDriveHelp = `Drive it from another shell, with the variables it prints:
  ploti-replica emulator publish [DATASET]     the next version of a dataset, or of each
  ploti-replica emulator hold DATASET          a version Ploti holds for review (feed.dataset.delayed)
  ploti-replica emulator release DATASET       Ploti's staff releases the held version
  ploti-replica emulator rename-ids DATASET    a quarter of its records under new ids (an id map)
  ploti-replica emulator request-event TYPE    a request event (data_request.*, research_request.*) to member webhooks
  ploti-replica emulator fail-next [--status 503] [--path /v1/**] [--count 1]   the next requests fail
Each calls a control endpoint (Authorization: Bearer <the key>), which a test
in any language may call too:
`

// emulatorRoundsHelp says what --publish-every publishes.
const emulatorRoundsHelp = `Each round publishes the next version of every dataset, the watched one too:
updates, and at a dataset's round 4, 14, 24 … a MINOR change (a column
added), at 7, 17 … a quarter of the records under new ids, at 10, 20 … a
MAJOR change (the column dropped) that Ploti releases and a replica on
--on-major hold holds for review.`

func newEmulatorCmd(env *Env) *cobra.Command {
	e := &emulatorCmd{env: env}
	cmd := &cobra.Command{
		Use:   "emulator",
		Short: "Run the bundled Ploti Data Feeds emulator, for trying the CLI or your own client by hand",
		Long: `Run the bundled emulator until interrupted. It prints the variables to
export so that every ploti-replica command (and your own client) talks to it.
With --demo (the default) it serves the demo's world: two Florida counties,
three datasets a subscription delivers, and ` + emulator.DemoWatched + `, a
statewide dataset to watch. --publish-every publishes a round on a timer.
` + emulatorRoundsHelp + `

` + emulatorDriveHelp + controlList(""),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return e.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&e.Listen, "listen", "127.0.0.1:8080", "address for the API")
	cmd.Flags().StringVar(&e.Files, "files-listen", "", "address for signed file links (default: the API port + 1)")
	cmd.Flags().StringVar(&e.Dir, "dir", "", "where to keep the emulator's files (default: a temporary folder)")
	cmd.Flags().StringVar(&e.APIKey, "api-key", emulator.DefaultAPIKey, "the bearer key the emulator accepts")
	cmd.Flags().BoolVar(&e.Demo, "demo", true, "seed the demo's world: places, datasets, the subscription and a dataset to watch")
	cmd.Flags().DurationVar(&e.PublishEvery, "publish-every", 0, "publish the next version of each demo dataset at this interval, such as 30s (0: only by hand)")
	cmd.AddCommand(newEmulatorControlCmds(env)...)
	return cmd
}

// controlList is the control endpoints, one a line, each with indent.
func controlList(indent string) string {
	var b strings.Builder
	for _, l := range emulator.ControlEndpoints() {
		fmt.Fprintf(&b, "%s  %s\n", indent, l)
	}
	return b.String()
}

func (e *emulatorCmd) run(ctx context.Context) error {
	if e.PublishEvery < 0 || (e.PublishEvery > 0 && !e.Demo) {
		return &usageError{fmt.Errorf("--publish-every %s: want a duration above zero, with the demo's world (--demo)", e.PublishEvery)}
	}
	// Real time: links expire, events age and webhook deliveries are
	// signed on the wall clock, as at Ploti, so a real receiver accepts them.
	em, err := emulator.New(emulator.Options{APIKey: e.APIKey, Dir: e.Dir, Now: time.Now})
	if err != nil {
		return err
	}
	defer em.Close()
	files := e.Files
	if files == "" {
		files, err = nextPort(e.Listen)
		if err != nil {
			return &usageError{err}
		}
	}
	if err := em.StartOn(e.Listen, files); err != nil {
		return err
	}
	var world *emulator.Demo
	if e.Demo {
		if world, err = emulator.SeedDemoWorld(ctx, em); err != nil {
			return err
		}
	}
	e.banner(em, world)
	if e.PublishEvery > 0 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			em.PublishEvery(ctx, e.PublishEvery, func(rels []emulator.Release, err error) { printRound(e.env.Stdout, rels, err) })
		}()
		defer wg.Wait() // before em.Close: a round in flight ends first
	}
	<-ctx.Done()
	return nil
}

// banner prints the variables to export and how to drive the emulator.
func (e *emulatorCmd) banner(em *emulator.Emulator, world *emulator.Demo) {
	w := e.env.Stdout
	sub := ""
	if world != nil {
		sub = world.SubscriptionID
	}
	fmt.Fprintf(w, "Ploti Data Feeds emulator on %s (files on %s). Paste into a shell:\n\n", em.URL(), em.FileURL())
	fmt.Fprintf(w, "export PLOTI_API_URL=%s PLOTI_API_KEY=%s PLOTI_SUBSCRIPTION=%s\n\n", em.URL(), em.APIKey(), sub)
	fmt.Fprintln(w, "then: ploti-replica sync --db try.duckdb && ploti-replica status --db try.duckdb")
	if world != nil {
		fmt.Fprintf(w, "      ploti-replica watch add %s   # a statewide dataset the subscription does not deliver\n", emulator.DemoWatched)
		fmt.Fprintf(w, "datasets: %s\n", strings.Join(world.Datasets(), ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, emulatorDriveHelp)
	fmt.Fprint(w, controlList(""))
	if e.PublishEvery > 0 {
		fmt.Fprintf(w, "\nPublishing a round every %s. %s\n", e.PublishEvery, emulatorRoundsHelp)
	}
	fmt.Fprintln(w, "\nCtrl-C stops the emulator.")
}

// printRound prints what a round of --publish-every published.
func printRound(w io.Writer, rels []emulator.Release, err error) {
	parts := make([]string, len(rels))
	for i, r := range rels {
		parts[i] = describeRelease(releaseOf(r))
	}
	line := time.Now().Format("15:04:05") + " published " + strings.Join(parts, "; ")
	if err != nil {
		line += "; failed: " + oneLine(err)
	}
	fmt.Fprintln(w, line)
}

// nextPort is host:(port+1) of addr.
func nextPort(addr string) (string, error) {
	var host string
	var port int
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			host = addr[:i]
			if _, err := fmt.Sscanf(addr[i+1:], "%d", &port); err != nil || port <= 0 {
				return "", fmt.Errorf("--listen %q: want HOST:PORT with a port above 0", addr)
			}
			return fmt.Sprintf("%s:%d", host, port+1), nil
		}
	}
	return "", fmt.Errorf("--listen %q: want HOST:PORT", addr)
}
