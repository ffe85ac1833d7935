package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
)

type subscriptionsShowCmd struct{ apiCmd }

func newSubscriptionsShowCmd(env *Env) *cobra.Command {
	s := &subscriptionsShowCmd{apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a subscription and the datasets it delivers",
		Long: `Show a subscription and the datasets it delivers now (every page).

--json prints {"subscription", "datasets"}; see subscriptions --help and
datasets list --help for their shapes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error { return s.run(c.Context(), a[0]) },
	}
	s.register(cmd)
	return cmd
}

func (s *subscriptionsShowCmd) run(ctx context.Context, id string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	sub, err := c.Subscription(ctx, id)
	if err != nil {
		return explain(err, "subscription "+id)
	}
	list, err := c.Datasets(ctx, fetch.DatasetsQuery{Subscription: id}, 0)
	if err != nil {
		return explain(err, "datasets of subscription "+id)
	}
	if s.JSON {
		out := struct {
			Subscription subscriptionOut `json:"subscription"`
			Datasets     []datasetOut    `json:"datasets"`
		}{newSubscriptionOut(*sub), make([]datasetOut, len(list))}
		for i, d := range list {
			out.Datasets[i] = newDatasetOut(d)
		}
		return s.printJSON(out)
	}
	printSubscription(s.env, *sub)
	fmt.Fprintf(s.env.Stdout, "\ndelivers %d dataset(s):\n", len(list))
	if len(list) == 0 {
		return nil
	}
	return printDatasets(s.env, list, nil)
}
