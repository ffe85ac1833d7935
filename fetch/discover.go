package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// MaxDatasetsLimit is the largest page GET /v1/feeds/datasets serves
// ("up to 200 a page").
const MaxDatasetsLimit = 200

// PlacesQuery narrows GET /v1/places; zero fields leave it out.
type PlacesQuery struct {
	State string // a state code, such as "fl"
	Kind  string // county, state, us (or counties, the "<state>-counties" places)
	// Deliverable counts only the datasets Data Feeds delivers.
	Deliverable bool
}

// Places lists the places in the workspace's coverage, all at once.
func (c *Client) Places(ctx context.Context, q PlacesQuery) ([]ploti.PlaceInfo, error) {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if q.Deliverable {
		v.Set("deliverable", "true")
	}
	var out struct {
		Places *[]ploti.PlaceInfo `json:"places"`
	}
	err := c.call(ctx, "list places", http.MethodGet, c.endpoint(v, "v1", "places"), nil,
		decodeChecked(&out, func() bool { return out.Places != nil }, `no "places" list`))
	if err != nil {
		return nil, err
	}
	return *out.Places, nil
}

// Topics lists Ploti's fixed topic list.
func (c *Client) Topics(ctx context.Context) ([]ploti.Topic, error) {
	var out struct {
		Topics *[]ploti.Topic `json:"topics"`
	}
	err := c.call(ctx, "list topics", http.MethodGet, c.endpoint(nil, "v1", "topics"), nil,
		decodeChecked(&out, func() bool { return out.Topics != nil }, `no "topics" list`))
	if err != nil {
		return nil, err
	}
	return *out.Topics, nil
}

// DatasetsQuery narrows GET /v1/feeds/datasets; zero fields leave it out.
type DatasetsQuery struct {
	Place        string
	Topic        string // "none" for datasets with no topic
	Subscription string
	// UpdatedSince keeps datasets whose current version was released at or
	// after it.
	UpdatedSince time.Time
	// Cursor is a page's nextCursor; Limit the page size (the server's
	// default when 0, at most MaxDatasetsLimit).
	Cursor string
	Limit  int
}

// DatasetsPage reads one page of the datasets the workspace's
// subscriptions could deliver.
func (c *Client) DatasetsPage(ctx context.Context, q DatasetsQuery) (*ploti.DatasetPage, error) {
	v := url.Values{}
	for k, val := range map[string]string{"place": q.Place, "topic": q.Topic, "subscription": q.Subscription, "cursor": q.Cursor} {
		if val != "" {
			v.Set(k, val)
		}
	}
	if !q.UpdatedSince.IsZero() {
		v.Set("updatedSince", q.UpdatedSince.UTC().Format(time.RFC3339))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(min(q.Limit, MaxDatasetsLimit)))
	}
	var p ploti.DatasetPage
	err := c.call(ctx, "list datasets", http.MethodGet, c.endpoint(v, "v1", "feeds", "datasets"), nil,
		decodeChecked(&p, func() bool { return p.Datasets != nil }, `no "datasets" list`))
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// Datasets lists the datasets q selects, following nextCursor to the end,
// or until max datasets (max > 0) are read. It stops on a page that gives
// its own cursor back.
func (c *Client) Datasets(ctx context.Context, q DatasetsQuery, max int) ([]ploti.Dataset, error) {
	out := []ploti.Dataset{}
	for {
		if max > 0 {
			q.Limit = min(max-len(out), MaxDatasetsLimit)
		}
		p, err := c.DatasetsPage(ctx, q)
		if err != nil {
			return out, err
		}
		out = append(out, p.Datasets...)
		if max > 0 && len(out) >= max {
			return out[:max], nil
		}
		if p.NextCursor == nil || *p.NextCursor == "" {
			return out, nil
		}
		if *p.NextCursor == q.Cursor {
			return out, errors.New("list datasets: a page gave its own cursor back; stopping rather than reading it forever")
		}
		q.Cursor = *p.NextCursor
	}
}
