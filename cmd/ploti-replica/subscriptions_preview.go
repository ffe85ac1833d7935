package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

type subscriptionsPreviewCmd struct {
	apiCmd
	spec                                        specFlags
	Search, OnlyPlace, OnlyTopic, MatchedBy, By string
	Limit                                       int
}

func newSubscriptionsPreviewCmd(env *Env) *cobra.Command {
	p := &subscriptionsPreviewCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "preview --place P [--topic T] [--dataset D]",
		Short: "Show what a subscription would deliver now, without creating one",
		Long: `Ask Ploti what a subscription with these places, topics and datasets would
deliver now: the exact total (a dataset over several of the places counts
once), counts by topic and by the place each is filed under, and the
datasets (every page, or --limit), each with what selects it (places,
datasetIds). A preview counts toward Ploti's stricter limit of 20 calls a
minute; the 25-subscription limit does not apply to it.

--json prints {"total", "byTopic", "byPlace", "matching", "datasets"}:
byTopic and byPlace map each topic or place to its count, "none" for the
datasets with none (Ploti counts them under null); each dataset as in
datasets list --help, with "matchedBy".`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return p.run(c.Context()) },
	}
	p.spec.register(cmd)
	f := cmd.Flags()
	f.StringVar(&p.Search, "search", "", "list only datasets whose title holds this text")
	f.StringVar(&p.OnlyPlace, "only-place", "", "list only datasets listed under this place")
	f.StringVar(&p.OnlyTopic, "only-topic", "", "list only datasets of this topic (none: no topic)")
	f.StringVar(&p.MatchedBy, "matched-by", "", "list only datasets selected by: places or datasetIds")
	f.StringVar(&p.By, "sort", "", "order the list by: place, title or updated (newest first)")
	f.IntVar(&p.Limit, "limit", 0, "list at most this many datasets (0: every page)")
	p.register(cmd)
	return cmd
}

// previewOut is subscriptions preview --json.
type previewOut struct {
	Total    int            `json:"total"`
	ByTopic  map[string]int `json:"byTopic"`
	ByPlace  map[string]int `json:"byPlace"`
	Matching int            `json:"matching"`
	Datasets []datasetOut   `json:"datasets"`
}

func (p *subscriptionsPreviewCmd) run(ctx context.Context) error {
	spec, err := p.spec.spec("")
	if err != nil {
		return err
	}
	if p.Limit < 0 {
		return &usageError{fmt.Errorf("--limit %d: want 0 (all) or more", p.Limit)}
	}
	c, err := p.client()
	if err != nil {
		return err
	}
	pv, list, err := p.fetchAll(ctx, c, spec)
	if err != nil {
		return explain(err, "preview subscription")
	}
	if p.JSON {
		out := previewOut{Total: pv.Total, ByTopic: noneNamed(pv.ByTopic), ByPlace: noneNamed(pv.ByPlace), Matching: pv.Matching, Datasets: make([]datasetOut, len(list))}
		for i, d := range list {
			out.Datasets[i] = newDatasetOut(d.Dataset)
			out.Datasets[i].MatchedBy = nonNil(d.MatchedBy)
		}
		return p.printJSON(out)
	}
	w := p.env.Stdout
	fmt.Fprintf(w, "would deliver %d dataset(s) now\n  by topic: %s\n  by place: %s\n", pv.Total, countsText(noneNamed(pv.ByTopic)), countsText(noneNamed(pv.ByPlace)))
	if len(list) == 0 {
		fmt.Fprintf(w, "\nno datasets listed (%d match the narrowing)\n", pv.Matching)
		return nil
	}
	fmt.Fprintln(w)
	ds, by := make([]ploti.Dataset, len(list)), make([][]string, len(list))
	for i, d := range list {
		ds[i], by[i] = d.Dataset, d.MatchedBy
	}
	if err := printDatasets(p.env, ds, by); err != nil {
		return err
	}
	if len(list) < pv.Matching {
		fmt.Fprintf(w, "\nshowing %d of %d (--limit)\n", len(list), pv.Matching)
	}
	return nil
}

// fetchAll reads the preview's pages until --limit datasets or the end.
func (p *subscriptionsPreviewCmd) fetchAll(ctx context.Context, c *fetch.Client, spec ploti.SubscriptionSpec) (*ploti.Preview, []ploti.PreviewDataset, error) {
	q := fetch.PreviewQuery{Q: p.Search, Place: p.OnlyPlace, Topic: p.OnlyTopic, MatchedBy: p.MatchedBy, Sort: p.By}
	var first *ploti.Preview
	list := []ploti.PreviewDataset{}
	for {
		if p.Limit > 0 {
			q.Limit = min(p.Limit-len(list), fetch.MaxDatasetsLimit)
		}
		pv, err := c.Preview(ctx, spec, q)
		if err != nil {
			return nil, nil, err
		}
		if first == nil {
			first = pv
		}
		list = append(list, pv.Datasets...)
		if p.Limit > 0 && len(list) >= p.Limit {
			return first, list[:p.Limit], nil
		}
		if pv.NextCursor == nil || *pv.NextCursor == "" || *pv.NextCursor == q.Cursor {
			return first, list, nil
		}
		q.Cursor = *pv.NextCursor
	}
}

// noneNamed is a preview's counts keyed for printing: the datasets with no
// topic (or place), which Ploti counts under null, under "none", the word
// --only-topic takes for them; never nil.
func noneNamed(c ploti.Counts) map[string]int {
	out := make(map[string]int, len(c))
	for k, n := range c {
		if k == ploti.NoneKey {
			k = "none"
		}
		out[k] += n
	}
	return out
}
