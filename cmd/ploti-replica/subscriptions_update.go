package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

type subscriptionsUpdateCmd struct {
	apiCmd
	Name                        string
	nameSet                     bool
	AddPlaces, RemovePlaces     []string
	AddTopics, RemoveTopics     []string
	AddDatasets, RemoveDatasets []string
}

func newSubscriptionsUpdateCmd(env *Env) *cobra.Command {
	u := &subscriptionsUpdateCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "update ID [--add-place P] [--remove-place P] [--add-topic T] [--remove-topic T] [--add-dataset D] [--remove-dataset D] [--name N]",
		Short: "Widen or narrow a subscription: add or remove places, topics and datasets",
		Long: `Change a subscription (it takes a workspace admin's key): read it, change its
lists as asked, and send the change with the revision read (If-Match), so
that two edits never overwrite each other. When someone else changed it in
between (412), it is read again and the change sent once more, but only when
your change still applies as it did (what you add still missing, what you
remove still there, the name as you read it); otherwise nothing more is
sent and the command says what changed.

A change that would leave no places and no datasets is refused before it is
sent: delete the subscription instead. Removing its last topic makes it
deliver every topic of its places. Datasets that join arrive at the next
sync as feed.dataset.added, those that leave as feed.dataset.removed (their
rows stay yours).

--json prints the changed subscription (see subscriptions --help), or the
subscription as read when it already was as asked.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, a []string) error {
			u.nameSet = c.Flags().Changed("name")
			return u.run(c.Context(), a[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&u.Name, "name", "", "a new name")
	// Ids are opaque ("Use the ids exactly as it gives them"): taken
	// whole, as --place, --topic and --dataset take them.
	f.StringArrayVar(&u.AddPlaces, "add-place", nil, "a place to add (repeatable)")
	f.StringArrayVar(&u.RemovePlaces, "remove-place", nil, "a place to remove (repeatable)")
	f.StringArrayVar(&u.AddTopics, "add-topic", nil, "a topic to add (repeatable; a subscription with topics keeps only those)")
	f.StringArrayVar(&u.RemoveTopics, "remove-topic", nil, "a topic to remove (repeatable)")
	f.StringArrayVar(&u.AddDatasets, "add-dataset", nil, "a dataset to include on its own (repeatable)")
	f.StringArrayVar(&u.RemoveDatasets, "remove-dataset", nil, "a dataset to stop including on its own (repeatable)")
	u.register(cmd)
	return cmd
}

// listEdit is the change asked of one of a subscription's lists.
type listEdit struct {
	field       string // places, topics, datasetIds
	add, remove []string
}

// apply changes cur as asked. noops tells what was already as asked;
// changed is false when nothing was left to do.
func (e listEdit) apply(cur []string) (next []string, noops []string, changed bool) {
	next = slices.Clone(nonNil(cur))
	for _, x := range e.add {
		if slices.Contains(next, x) {
			noops = append(noops, fmt.Sprintf("%s is already among its %s", x, e.field))
			continue
		}
		next, changed = append(next, x), true
	}
	for _, x := range e.remove {
		if !slices.Contains(next, x) {
			noops = append(noops, fmt.Sprintf("%s is not among its %s", x, e.field))
			continue
		}
		next, changed = slices.DeleteFunc(next, func(y string) bool { return y == x }), true
	}
	return next, noops, changed
}

func (u *subscriptionsUpdateCmd) edits() []listEdit {
	return []listEdit{
		{"places", u.AddPlaces, u.RemovePlaces},
		{"topics", u.AddTopics, u.RemoveTopics},
		{"datasetIds", u.AddDatasets, u.RemoveDatasets},
	}
}

// plan is the patch the user's change makes of s, and what of the change
// was already so.
func (u *subscriptionsUpdateCmd) plan(s *ploti.Subscription) (ploti.SubscriptionPatch, []string, error) {
	var p ploti.SubscriptionPatch
	var noops []string
	lists := map[string]*[]string{"places": &s.Places, "topics": &s.Topics, "datasetIds": &s.DatasetIDs}
	result := map[string][]string{}
	for _, e := range u.edits() {
		next, n, changed := e.apply(*lists[e.field])
		noops = append(noops, n...)
		result[e.field] = next
		if !changed {
			continue
		}
		switch e.field {
		case "places":
			p.Places = &next
		case "topics":
			p.Topics = &next
		case "datasetIds":
			p.DatasetIDs = &next
		}
	}
	if u.nameSet {
		if u.Name == s.Name {
			noops = append(noops, fmt.Sprintf("its name is already %q", u.Name))
		} else {
			p.Name = &u.Name
		}
	}
	// "a change that would leave no places and no datasets: 400
	// invalid_input. Delete the subscription to stop receiving."
	if !p.Empty() && len(result["places"]) == 0 && len(result["datasetIds"]) == 0 {
		return p, noops, &usageError{fmt.Errorf("update subscription %s: the change would leave it no places and no datasets, which Ploti refuses; nothing was sent: to stop receiving, `subscriptions delete %s`", s.ID, s.ID)}
	}
	return p, noops, nil
}

func (u *subscriptionsUpdateCmd) run(ctx context.Context, id string) error {
	asked := u.nameSet
	for _, e := range u.edits() {
		asked = asked || len(e.add)+len(e.remove) > 0
	}
	if !asked {
		return &usageError{fmt.Errorf("update subscription %s: nothing to change: give --add-place, --remove-place, --add-topic, --remove-topic, --add-dataset, --remove-dataset or --name", id)}
	}
	c, err := u.client()
	if err != nil {
		return err
	}
	first, err := c.Subscription(ctx, id)
	if err != nil {
		return explain(err, "read subscription "+id)
	}
	p, noops, err := u.plan(first)
	if err != nil {
		return err
	}
	for _, n := range noops {
		fmt.Fprintf(u.env.Stderr, "note: %s\n", n)
	}
	if p.Empty() {
		if u.JSON {
			return u.printJSON(newSubscriptionOut(*first))
		}
		fmt.Fprintf(u.env.Stdout, "subscription %s already is as asked (revision %d): nothing sent\n", id, first.Revision)
		return nil
	}
	sub, err := c.UpdateSubscription(ctx, id, first.Revision, p)
	if errors.Is(err, fetch.ErrPreconditionFailed) {
		sub, err = u.retry(ctx, c, first)
		if sub == nil && err == nil {
			return nil
		}
	}
	if err != nil {
		return explain(err, "update subscription "+id)
	}
	return u.done(first, sub)
}

// retry reads the subscription again after a 412 and sends the change
// once more, only when it still applies as it did to the first read. A
// nil subscription and error mean there was nothing left to send.
func (u *subscriptionsUpdateCmd) retry(ctx context.Context, c *fetch.Client, first *ploti.Subscription) (*ploti.Subscription, error) {
	id := first.ID
	fresh, err := c.Subscription(ctx, id)
	if err != nil {
		return nil, explain(err, "read subscription "+id+" again")
	}
	fmt.Fprintf(u.env.Stderr, "note: subscription %s changed since it was read (revision %d, now %d): someone else edited it\n", id, first.Revision, fresh.Revision)
	_, before, _ := u.plan(first)
	p, after, err := u.plan(fresh)
	if err != nil {
		return nil, err
	}
	if p.Empty() {
		if u.JSON {
			return nil, u.printJSON(newSubscriptionOut(*fresh))
		}
		fmt.Fprintf(u.env.Stdout, "subscription %s already has your change (revision %d): nothing more sent\n", id, fresh.Revision)
		return nil, nil
	}
	if moved := slices.DeleteFunc(slices.Clone(after), func(n string) bool { return slices.Contains(before, n) }); len(moved) > 0 || u.nameSet && fresh.Name != first.Name {
		if u.nameSet && fresh.Name != first.Name {
			moved = append(moved, fmt.Sprintf("its name is now %q", fresh.Name))
		}
		return nil, &explained{msg: fmt.Sprintf("update subscription %s: it changed since it was read (412 precondition_failed), and your change no longer applies as it did: %s; nothing more was sent: see it with `subscriptions show %s` and run the update again",
			id, strings.Join(moved, "; "), id), err: fetch.ErrPreconditionFailed}
	}
	fmt.Fprintf(u.env.Stderr, "note: your change still applies: sending it once more on revision %d\n", fresh.Revision)
	sub, err := c.UpdateSubscription(ctx, id, fresh.Revision, p)
	if errors.Is(err, fetch.ErrPreconditionFailed) {
		return nil, &explained{msg: fmt.Sprintf("update subscription %s: it changed again while the change was sent (412 precondition_failed): someone else is editing it; nothing was changed by this run: run it again", id), err: err}
	}
	return sub, err
}

// done prints the changed subscription.
func (u *subscriptionsUpdateCmd) done(first, sub *ploti.Subscription) error {
	if u.JSON {
		return u.printJSON(newSubscriptionOut(*sub))
	}
	fmt.Fprintf(u.env.Stdout, "updated subscription %s to revision %d\n", sub.ID, sub.Revision)
	printSubscription(u.env, *sub)
	if len(first.Topics) > 0 && len(sub.Topics) == 0 {
		fmt.Fprintln(u.env.Stdout, "with no topics left, it delivers every topic of its places")
	}
	fmt.Fprintln(u.env.Stdout, "datasets that join arrive at the next sync (feed.dataset.added); those that leave are marked removed and their rows stay yours")
	return nil
}
