package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
)

type placesCmd struct {
	apiCmd
	State       string
	Kind        string
	Deliverable bool
}

func newPlacesCmd(env *Env) *cobra.Command {
	p := &placesCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "places",
		Short: "List the places in your workspace's coverage, with how many datasets each holds",
		Long: `List the places a subscription can name: your coverage's counties, their
states, each state's "<state>-counties" place (every county of the state you
cover, as one place) and us, with how many datasets each holds, in all and by
topic (datasets without a topic count in the total only). Use the ids exactly
as given, with subscriptions preview and create --place.

--json prints [{"id", "name", "kind", "state", "datasetCount", "datasetCounts"}].`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return p.run(c.Context()) },
	}
	cmd.Flags().StringVar(&p.State, "state", "", "only this state's places (a state code, such as fl)")
	cmd.Flags().StringVar(&p.Kind, "kind", "", "only places of this kind: county, state, counties or us")
	cmd.Flags().BoolVar(&p.Deliverable, "deliverable", false, "count only the datasets Data Feeds delivers")
	p.register(cmd)
	return cmd
}

// placeOut is a place in --json.
type placeOut struct {
	ID            string         `json:"id"`
	Name          string         `json:"name"`
	Kind          string         `json:"kind"`
	State         string         `json:"state,omitempty"`
	DatasetCount  int            `json:"datasetCount"`
	DatasetCounts map[string]int `json:"datasetCounts"`
}

func (p *placesCmd) run(ctx context.Context) error {
	if err := checkPlaceKind(p.Kind); err != nil {
		return err
	}
	c, err := p.client()
	if err != nil {
		return err
	}
	places, err := c.Places(ctx, fetch.PlacesQuery{State: p.State, Kind: p.Kind, Deliverable: p.Deliverable})
	if err != nil {
		return explain(err, "list places")
	}
	if len(places) == 0 && p.State != "" {
		if err := checkState(ctx, c, p.State); err != nil {
			return err
		}
	}
	if p.JSON {
		out := []placeOut{}
		for _, pl := range places {
			o := placeOut{ID: pl.ID, Name: pl.Name, Kind: pl.Kind, DatasetCount: pl.DatasetCount, DatasetCounts: pl.DatasetCounts}
			if pl.State != nil {
				o.State = *pl.State
			}
			if o.DatasetCounts == nil {
				o.DatasetCounts = map[string]int{}
			}
			out = append(out, o)
		}
		return p.printJSON(out)
	}
	if len(places) == 0 {
		fmt.Fprintln(p.env.Stdout, "no places match")
		return nil
	}
	tw := table(p.env.Stdout)
	fmt.Fprintln(tw, "ID\tNAME\tKIND\tSTATE\tDATASETS\tBY TOPIC")
	for _, pl := range places {
		state := "-"
		if pl.State != nil {
			state = *pl.State
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", pl.ID, pl.Name, pl.Kind, state, pl.DatasetCount, countsText(pl.DatasetCounts))
	}
	return tw.Flush()
}

// countsText writes counts by key, largest first: "parcels-property 3, zoning 1".
func countsText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return orDash(strings.Join(parts, ", "))
}
