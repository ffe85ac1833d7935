package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
)

type subscriptionsDeleteCmd struct{ apiCmd }

func newSubscriptionsDeleteCmd(env *Env) *cobra.Command {
	s := &subscriptionsDeleteCmd{apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a subscription: its events and webhooks stop; rows you loaded stay yours",
		Long: `Delete a subscription (it takes a workspace admin's key). Its events and its
webhooks stop, and Ploti stops signing links for its datasets unless another
of the workspace's subscriptions delivers them. Files and rows you already
have stay yours. While the subscription's datasets are changing Ploti
answers 409 busy ("try again in a moment"): the command tries again a few
times, waiting as Ploti asks, and says so if it is still busy.

--json prints {"id", "deleted": true}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error { return s.run(c.Context(), a[0]) },
	}
	s.register(cmd)
	return cmd
}

func (s *subscriptionsDeleteCmd) run(ctx context.Context, id string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.DeleteSubscription(ctx, id); err != nil {
		if errors.Is(err, fetch.ErrNotFound) {
			return &explained{msg: fmt.Sprintf("delete subscription %s: no such subscription (404): `subscriptions list` shows the workspace's", id), err: err}
		}
		return explain(err, "delete subscription "+id)
	}
	if s.JSON {
		return s.printJSON(map[string]any{"id": id, "deleted": true})
	}
	fmt.Fprintf(s.env.Stdout, "deleted subscription %s: its events and webhooks stop; the rows you loaded stay yours\n", id)
	return nil
}
