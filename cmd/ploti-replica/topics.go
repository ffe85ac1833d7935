package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

type topicsCmd struct{ apiCmd }

func newTopicsCmd(env *Env) *cobra.Command {
	t := &topicsCmd{apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List Ploti's topics, for subscriptions preview and create --topic",
		Long: `List Ploti's fixed list of topics. A dataset's topic is its primary topic;
a subscription's topics keep, within its places, only datasets of those
topics (every topic when it names none).

--json prints [{"id", "name"}].`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return t.run(c.Context()) },
	}
	t.register(cmd)
	return cmd
}

func (t *topicsCmd) run(ctx context.Context) error {
	c, err := t.client()
	if err != nil {
		return err
	}
	topics, err := c.Topics(ctx)
	if err != nil {
		return explain(err, "list topics")
	}
	if t.JSON {
		return t.printJSON(nonNil(topics))
	}
	tw := table(t.env.Stdout)
	fmt.Fprintln(tw, "ID\tNAME")
	for _, tp := range topics {
		fmt.Fprintf(tw, "%s\t%s\n", tp.ID, tp.Name)
	}
	return tw.Flush()
}
