package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/ploti"
)

func newSubscriptionsCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscriptions",
		Short: "Preview, create, change, show and delete the workspace's Data Feeds subscriptions",
		Long: `A subscription delivers every deliverable dataset in the places it names
(only those of its topics, when it names topics) and the datasets it names on
their own. Find places with ` + "`places`" + ` and topics with ` + "`topics`" + `, see what a
subscription would deliver with ` + "`subscriptions preview`" + `, then create it.

--json prints a subscription as {"id", "name", "places", "topics",
"datasetIds", "revision", "createdAt", "updatedAt"}.`,
	}
	cmd.AddCommand(newSubscriptionsListCmd(env), newSubscriptionsShowCmd(env), newSubscriptionsPreviewCmd(env),
		newSubscriptionsCreateCmd(env), newSubscriptionsUpdateCmd(env), newSubscriptionsDeleteCmd(env))
	return cmd
}

func newSubscriptionsListCmd(env *Env) *cobra.Command {
	a := &apiCmd{env: env}
	cmd := &cobra.Command{Use: "list", Short: "List the workspace's subscriptions", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			subs, err := cl.Subscriptions(c.Context())
			if err != nil {
				return explain(err, "list subscriptions")
			}
			if a.JSON {
				out := make([]subscriptionOut, len(subs))
				for i, s := range subs {
					out[i] = newSubscriptionOut(s)
				}
				return a.printJSON(out)
			}
			if len(subs) == 0 {
				fmt.Fprintln(env.Stdout, "no subscriptions: `subscriptions preview` and `subscriptions create` make one")
				return nil
			}
			tw := table(env.Stdout)
			fmt.Fprintln(tw, "ID\tNAME\tPLACES\tTOPICS\tDATASETS\tREVISION")
			for _, s := range subs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, orDash(s.Name), orDash(strings.Join(s.Places, ",")),
					topicsText(s.Topics), orDash(strings.Join(s.DatasetIDs, ",")), s.Revision)
			}
			return tw.Flush()
		}}
	a.register(cmd)
	return cmd
}

// specFlags are the flags that say what a subscription selects.
type specFlags struct {
	Places, Topics, Datasets []string
}

func (s *specFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	// Place, topic and dataset ids are opaque (subscriptions-manifest-files.txt,
	// of GET /v1/places: "Use the ids exactly as it gives them"): each is
	// taken whole, never split at a comma or read for quotes.
	f.StringArrayVar(&s.Places, "place", nil, "a `PLACE` id that ploti-replica places lists (repeatable)")
	f.StringArrayVar(&s.Topics, "topic", nil, "keep only datasets of these topics within the places (repeatable; default every topic)")
	f.StringArrayVar(&s.Datasets, "dataset", nil, "a dataset id to include on its own, from anywhere in your coverage (repeatable)")
}

// spec checks the flags ("A subscription names at least one place or
// dataset") and builds the body, which never holds null.
func (s *specFlags) spec(name string) (ploti.SubscriptionSpec, error) {
	if len(s.Places) == 0 && len(s.Datasets) == 0 {
		return ploti.SubscriptionSpec{}, &usageError{fmt.Errorf("name at least one --place or --dataset: a subscription names at least one place or dataset")}
	}
	return ploti.SubscriptionSpec{Name: name, Places: s.Places, Topics: s.Topics, DatasetIDs: s.Datasets}.Body(), nil
}

// subscriptionOut is a subscription in --json.
type subscriptionOut struct {
	ID         string     `json:"id"`
	Name       string     `json:"name,omitempty"`
	Places     []string   `json:"places"`
	Topics     []string   `json:"topics"`
	DatasetIDs []string   `json:"datasetIds"`
	Revision   int        `json:"revision"`
	CreatedAt  *time.Time `json:"createdAt,omitempty"`
	UpdatedAt  *time.Time `json:"updatedAt,omitempty"`
}

func newSubscriptionOut(s ploti.Subscription) subscriptionOut {
	o := subscriptionOut{ID: s.ID, Name: s.Name, Places: nonNil(s.Places), Topics: nonNil(s.Topics), DatasetIDs: nonNil(s.DatasetIDs), Revision: s.Revision}
	if !s.CreatedAt.IsZero() {
		o.CreatedAt = &s.CreatedAt
	}
	if !s.UpdatedAt.IsZero() {
		o.UpdatedAt = &s.UpdatedAt
	}
	return o
}

// printSubscription writes a subscription's fields, one a line.
func printSubscription(env *Env, s ploti.Subscription) {
	w := env.Stdout
	fmt.Fprintf(w, "subscription %s", s.ID)
	if s.Name != "" {
		fmt.Fprintf(w, " %q", s.Name)
	}
	fmt.Fprintf(w, " (revision %d)\n", s.Revision)
	fmt.Fprintf(w, "  places:   %s\n  topics:   %s\n  datasets: %s\n", orDash(strings.Join(s.Places, ", ")),
		topicsText(s.Topics), orDash(strings.Join(s.DatasetIDs, ", ")))
}

// topicsText writes a subscription's topics; none means every topic.
func topicsText(t []string) string {
	if len(t) == 0 {
		return "every topic"
	}
	return strings.Join(t, ", ")
}
