package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
)

// mapURL opens a dataset in Ploti's app (subscriptions-manifest-files.txt:
// "https://app.ploti.ai/map?dataAtlasDatasetId= with it shows the dataset
// on the map").
const mapURL = "https://app.ploti.ai/map?dataAtlasDatasetId="

type datasetsCmd struct {
	apiCmd
	Place, Topic, Subscription, UpdatedSince string
	Limit                                    int
}

func newDatasetsCmd(env *Env) *cobra.Command {
	cmd := &cobra.Command{Use: "datasets", Short: "List the datasets your subscriptions could deliver, or show one"}
	cmd.AddCommand(newDatasetsListCmd(env), newDatasetsShowCmd(env))
	return cmd
}

func newDatasetsListCmd(env *Env) *cobra.Command {
	d := &datasetsCmd{apiCmd: apiCmd{env: env}}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the datasets your subscriptions could deliver (every page, or --limit)",
		Long: `List the deliverable datasets: those your workspace's coverage and plan open.
Every page is read unless --limit says how many to list.

--json prints a list of datasets: {"id", "title", "description", "place":
{"id", "name", "kind"}, "topic", "source": {"publisher", "url"},
"dataAtlasId", "mapUrl" (the dataset in Ploti's app), "keyed", "keyColumns", "current": {"version", "publishedAt",
"schemaVersion"}, "status", "refresh": {"lastCheckedAt", "nextCheckBy"}};
fields Ploti leaves null are left out.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return d.run(c.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&d.Place, "place", "", "only datasets listed under this `PLACE` (an id that ploti-replica places lists)")
	f.StringVar(&d.Topic, "topic", "", "only datasets of this `TOPIC` (an id that ploti-replica topics lists; none for no topic)")
	f.StringVar(&d.Subscription, "subscription", "", "only datasets this subscription delivers")
	f.StringVar(&d.UpdatedSince, "updated-since", "", "only datasets whose current version was released since: an RFC 3339 time, a date (2026-11-01), or a duration ago (36h)")
	f.IntVar(&d.Limit, "limit", 0, "list at most this many (0: every page)")
	d.register(cmd)
	return cmd
}

func (d *datasetsCmd) run(ctx context.Context) error {
	if d.Limit < 0 {
		return &usageError{fmt.Errorf("--limit %d: want 0 (all) or more", d.Limit)}
	}
	q := fetch.DatasetsQuery{Place: d.Place, Topic: d.Topic, Subscription: d.Subscription}
	if d.UpdatedSince != "" {
		t, err := parseSince(d.UpdatedSince, time.Now())
		if err != nil {
			return &usageError{err}
		}
		q.UpdatedSince = t
	}
	c, err := d.client()
	if err != nil {
		return err
	}
	list, err := c.Datasets(ctx, q, d.Limit)
	if errors.Is(err, fetch.ErrNotFound) {
		if ferr := d.checkFilters(ctx, c); ferr != nil {
			return ferr // a 404 for a filter's id, named
		}
	}
	if err != nil {
		return explain(err, "list datasets")
	}
	if len(list) == 0 {
		if err := d.checkFilters(ctx, c); err != nil {
			return err
		}
	}
	if d.JSON {
		out := make([]datasetOut, len(list))
		for i, ds := range list {
			out[i] = newDatasetOut(ds)
		}
		return d.printJSON(out)
	}
	if len(list) == 0 {
		fmt.Fprintln(d.env.Stdout, "no datasets match")
		return nil
	}
	return printDatasets(d.env, list, nil)
}

// checkFilters refuses, once the list came back empty, a --place, --topic
// or --subscription the API does not know: a typo is not "no datasets match".
func (d *datasetsCmd) checkFilters(ctx context.Context, c *fetch.Client) error {
	if d.Place != "" {
		if err := checkPlace(ctx, c, d.Place); err != nil {
			return err
		}
	}
	if d.Topic != "" {
		if err := checkTopic(ctx, c, d.Topic); err != nil {
			return err
		}
	}
	if d.Subscription != "" {
		return checkSubscription(ctx, c, d.Subscription)
	}
	return nil
}

// printDatasets writes datasets as a table; matchedBy, when given, adds
// the preview's column.
func printDatasets(env *Env, list []ploti.Dataset, matchedBy [][]string) error {
	tw := table(env.Stdout)
	head := "ID\tTITLE\tPLACE\tTOPIC\tSTATUS\tVERSION\tPUBLISHED"
	if matchedBy != nil {
		head += "\tMATCHED BY"
	}
	fmt.Fprintln(tw, head)
	for i, ds := range list {
		place, topic, version, published := "-", orDash(deref(ds.Topic)), "-", "-"
		if ds.Place != nil {
			place = orDash(deref(ds.Place.ID))
		}
		if ds.Current != nil {
			version = strconv.Itoa(ds.Current.Version)
			published = textTime(ds.Current.PublishedAt)
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", ds.ID, ds.Title, place, topic, orDash(ds.Status), version, published)
		if matchedBy != nil {
			line += "\t" + orDash(strings.Join(matchedBy[i], ","))
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// parseSince reads --updated-since: an RFC 3339 time, a date, or a
// duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--updated-since %q: want an RFC 3339 time (2026-11-01T00:00:00Z), a date (2026-11-01) or a duration ago (36h)", s)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// datasetOut is a dataset in --json: the API's object with null fields
// left out and a link to Ploti's map.
type datasetOut struct {
	ID          string      `json:"id"`
	Title       string      `json:"title"`
	Description string      `json:"description,omitempty"`
	Place       *placeRef   `json:"place,omitempty"`
	Topic       string      `json:"topic,omitempty"`
	Source      *sourceOut  `json:"source,omitempty"`
	DataAtlasID string      `json:"dataAtlasId,omitempty"`
	MapURL      string      `json:"mapUrl,omitempty"`
	Keyed       bool        `json:"keyed"`
	KeyColumns  []string    `json:"keyColumns"`
	Current     *currentOut `json:"current,omitempty"`
	Status      string      `json:"status,omitempty"` // empty only for a dataset Data Feeds does not deliver (datasets show)
	Refresh     *refreshOut `json:"refresh,omitempty"`
	// MatchedBy is set in a preview: the body's fields that select it.
	MatchedBy []string `json:"matchedBy,omitempty"`
}

type placeRef struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	Kind string `json:"kind,omitempty"`
}

type sourceOut struct {
	Publisher string `json:"publisher,omitempty"`
	URL       string `json:"url,omitempty"`
}

type currentOut struct {
	Version       int       `json:"version"`
	PublishedAt   time.Time `json:"publishedAt"`
	SchemaVersion string    `json:"schemaVersion,omitempty"`
}

type refreshOut struct {
	LastCheckedAt *time.Time `json:"lastCheckedAt,omitempty"`
	NextCheckBy   *time.Time `json:"nextCheckBy,omitempty"`
}

// newPlaceRef is a dataset's place as --json gives it; nil for none.
func newPlaceRef(p *ploti.Place) *placeRef {
	if p == nil {
		return nil
	}
	return &placeRef{ID: deref(p.ID), Name: deref(p.Name), Kind: p.Kind}
}

func newDatasetOut(d ploti.Dataset) datasetOut {
	o := datasetOut{ID: d.ID, Title: d.Title, Description: deref(d.Description), Topic: deref(d.Topic),
		Keyed: d.Keyed, KeyColumns: nonNil(d.KeyColumns), Status: d.Status}
	o.Place = newPlaceRef(d.Place)
	if d.Source != nil && (d.Source.Publisher != nil || d.Source.URL != nil) {
		o.Source = &sourceOut{Publisher: deref(d.Source.Publisher), URL: deref(d.Source.URL)}
	}
	if d.DataAtlasID != "" {
		o.DataAtlasID, o.MapURL = d.DataAtlasID, mapURL+url.QueryEscape(d.DataAtlasID)
	}
	if d.Current != nil {
		o.Current = &currentOut{Version: d.Current.Version, PublishedAt: d.Current.PublishedAt, SchemaVersion: d.Current.SchemaVersion}
	}
	if d.Refresh != nil && (d.Refresh.LastCheckedAt != nil || d.Refresh.NextCheckBy != nil) {
		o.Refresh = &refreshOut{LastCheckedAt: d.Refresh.LastCheckedAt, NextCheckBy: d.Refresh.NextCheckBy}
	}
	return o
}
