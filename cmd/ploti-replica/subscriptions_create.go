package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
)

type subscriptionsCreateCmd struct {
	apiCmd
	spec           specFlags
	Name           string
	IdempotencyKey string
}

func newSubscriptionsCreateCmd(env *Env) *cobra.Command {
	s := &subscriptionsCreateCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "create --name N --place P [--topic T] [--dataset D]",
		Short: "Create a subscription and print the export PLOTI_SUBSCRIPTION=… line for sync",
		Long: `Create a subscription (it takes a workspace admin's key). Every try of the
request carries one Idempotency-Key, so a try whose answer was lost (a
timeout, a dropped connection) is retried without creating a second
subscription: Ploti answers a retry with the same key, within a day, with
the first answer. When the command gives up, it prints the key: run it again
with --idempotency-key KEY to finish without making two.

--json prints the subscription (see subscriptions --help), with "replayed":
true when the answer was the first one, replayed.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return s.run(c.Context()) },
	}
	s.spec.register(cmd)
	cmd.Flags().StringVar(&s.Name, "name", "", "the subscription's name")
	cmd.Flags().StringVar(&s.IdempotencyKey, "idempotency-key", "", "the Idempotency-Key to send (default: a new one); reuse the one a failed run printed")
	s.register(cmd)
	return cmd
}

func (s *subscriptionsCreateCmd) run(ctx context.Context) error {
	spec, err := s.spec.spec(s.Name)
	if err != nil {
		return err
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	key := s.IdempotencyKey
	if key == "" {
		key = fetch.NewIdempotencyKey()
	}
	res, err := c.CreateSubscription(ctx, spec, key)
	if err != nil {
		err = explain(err, "create subscription")
		var ae *fetch.APIError
		if !errors.As(err, &ae) || fetch.IsTransient(ae) || ae.Status >= 500 {
			// The request may have reached Ploti: the same key finishes it.
			err = fmt.Errorf("%w; Ploti may have created it: run the same command with --idempotency-key %s to finish without making two", err, key)
		}
		return err
	}
	sub := res.Subscription
	if s.JSON {
		return s.printJSON(struct {
			subscriptionOut
			Replayed bool `json:"replayed,omitempty"`
		}{newSubscriptionOut(sub), res.Replayed})
	}
	w := s.env.Stdout
	if res.Replayed {
		fmt.Fprintf(w, "subscription %s was created by an earlier try with this key (Ploti replayed its answer)\n", sub.ID)
	} else {
		fmt.Fprintf(w, "created subscription %s\n", sub.ID)
	}
	printSubscription(s.env, sub)
	fmt.Fprintf(w, "\nsync it with:\nexport PLOTI_SUBSCRIPTION=%s\n", sub.ID)
	return nil
}
