package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/emulator"
)

type emulatorCmd struct {
	env    *Env
	Listen string
	Files  string
	Dir    string
	APIKey string
	Demo   bool
}

func newEmulatorCmd(env *Env) *cobra.Command {
	e := &emulatorCmd{env: env}
	cmd := &cobra.Command{
		Use:   "emulator",
		Short: "Run the bundled Ploti Data Feeds emulator, for trying the CLI or your own client by hand",
		Long: `Run the bundled emulator until interrupted. It prints the variables to
export so that every ploti-replica command (and your own client) talks to it.
With --demo (the default) it is seeded with the demo subscription.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return e.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&e.Listen, "listen", "127.0.0.1:8080", "address for the API")
	cmd.Flags().StringVar(&e.Files, "files-listen", "", "address for signed file links (default: the API port + 1)")
	cmd.Flags().StringVar(&e.Dir, "dir", "", "where to keep the emulator's files (default: a temporary folder)")
	cmd.Flags().StringVar(&e.APIKey, "api-key", emulator.DefaultAPIKey, "the bearer key the emulator accepts")
	cmd.Flags().BoolVar(&e.Demo, "demo", true, "seed the demo places, datasets and subscription")
	return cmd
}

func (e *emulatorCmd) run(ctx context.Context) error {
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
	sub := ""
	if e.Demo {
		d, err := emulator.SeedDemo(ctx, em)
		if err != nil {
			return err
		}
		sub = d.SubscriptionID
	}
	fmt.Fprintf(e.env.Stdout, "Ploti Data Feeds emulator on %s (files on %s). Paste into a shell:\n\n", em.URL(), em.FileURL())
	fmt.Fprintf(e.env.Stdout, "export PLOTI_API_URL=%s PLOTI_API_KEY=%s PLOTI_SUBSCRIPTION=%s\n\n", em.URL(), em.APIKey(), sub)
	fmt.Fprintln(e.env.Stdout, "then: ploti-replica sync --db try.duckdb && ploti-replica status --db try.duckdb")
	fmt.Fprintln(e.env.Stdout, "Ctrl-C stops the emulator.")
	<-ctx.Done()
	return nil
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
