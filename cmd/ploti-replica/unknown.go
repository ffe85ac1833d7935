package main

// Ids the user named that do not exist. A list narrowed by a place, a
// topic, a kind or a subscription that comes back empty is checked against
// what the API lists, so that a typo says so (exit 1, as a preview naming
// an unknown place does) instead of printing "no datasets match"; an empty
// list for a filter the API knows stays a plain empty list, exit 0.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ploti-replica/ploti-replica/fetch"
)

// placeKinds are the kinds of place Ploti lists: a county, a state, a
// state's "<state>-counties" place, and us.
var placeKinds = []string{"county", "state", "counties", "us"}

// unknownError is an id or a value the user gave that the API does not
// know: its words name it and where to find the ones that exist.
type unknownError struct{ msg string }

func (e *unknownError) Error() string { return e.msg }

// checkPlaceKind refuses a --kind that is none of placeKinds, before any
// call: the list is fixed.
func checkPlaceKind(kind string) error {
	if kind == "" || slices.Contains(placeKinds, kind) {
		return nil
	}
	return &usageError{fmt.Errorf("--kind %q: no such kind of place: want one of %s", kind, strings.Join(placeKinds, ", "))}
}

// checkPlace says whether id is a place the workspace's coverage lists.
func checkPlace(ctx context.Context, c *fetch.Client, id string) error {
	places, err := c.Places(ctx, fetch.PlacesQuery{})
	if err != nil {
		return explain(err, "list places")
	}
	for _, p := range places {
		if p.ID == id {
			return nil
		}
	}
	return &unknownError{fmt.Sprintf("--place %s: no such place in your workspace's coverage; `ploti-replica places` lists the place ids", id)}
}

// checkState says whether state is the state of a place the coverage lists.
func checkState(ctx context.Context, c *fetch.Client, state string) error {
	places, err := c.Places(ctx, fetch.PlacesQuery{})
	if err != nil {
		return explain(err, "list places")
	}
	for _, p := range places {
		if p.State != nil && strings.EqualFold(*p.State, state) {
			return nil
		}
	}
	return &unknownError{fmt.Sprintf("--state %s: no place of your workspace's coverage is in that state; `ploti-replica places` lists them", state)}
}

// checkTopic says whether id is one of Ploti's topics ("none" stands for
// datasets without a topic).
func checkTopic(ctx context.Context, c *fetch.Client, id string) error {
	if id == "none" {
		return nil
	}
	topics, err := c.Topics(ctx)
	if err != nil {
		return explain(err, "list topics")
	}
	for _, t := range topics {
		if t.ID == id {
			return nil
		}
	}
	return &unknownError{fmt.Sprintf("--topic %s: no such topic; `ploti-replica topics` lists the topic ids (none: datasets without a topic)", id)}
}

// checkSubscription says whether Ploti knows the subscription id.
func checkSubscription(ctx context.Context, c *fetch.Client, id string) error {
	_, err := c.Subscription(ctx, id)
	if errors.Is(err, fetch.ErrNotFound) {
		return &unknownError{fmt.Sprintf("--subscription %s: Ploti knows no such subscription in your workspace; `ploti-replica subscriptions list` lists them", id)}
	}
	if err != nil {
		return explain(err, "subscription "+id)
	}
	return nil
}

// datasetExists says whether Ploti knows the dataset: as one Data Feeds
// delivers to the workspace, or as one the workspace may watch.
func datasetExists(ctx context.Context, c *fetch.Client, id string) (bool, error) {
	_, err := c.Dataset(ctx, id)
	if errors.Is(err, fetch.ErrNotFound) {
		_, err = c.DatasetInfo(ctx, id)
	}
	switch {
	case errors.Is(err, fetch.ErrNotFound):
		return false, nil
	case err != nil:
		return false, explainUnreachable(err, "dataset "+id)
	}
	return true, nil
}
