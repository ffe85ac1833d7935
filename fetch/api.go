package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ploti-replica/ploti-replica/ploti"
)

// MaxEventsLimit is the largest page the events endpoint serves.
const MaxEventsLimit = 500

// Manifest gets a subscription's manifest; asOf, when non-empty, is an
// eventCursor from an earlier manifest (docs/wire.md section 4).
func (c *Client) Manifest(ctx context.Context, subscriptionID, asOf string) (*ploti.Manifest, error) {
	op := "get manifest " + subscriptionID
	var q url.Values
	if asOf != "" {
		q = url.Values{"asOf": {asOf}}
		op += " as of " + asOf
	}
	var m *ploti.Manifest
	err := c.call(ctx, op, http.MethodGet, c.endpoint(q, "v1", "feeds", "subscriptions", subscriptionID, "manifest"), nil,
		func(b []byte) (err error) { m, err = DecodeManifest(b); return err })
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Events reads one page of a subscription's event log after cursor (the
// oldest kept event when empty). limit 0 leaves the server's default (100);
// a limit over MaxEventsLimit is lowered to it. types, when given, filter
// the page (and an empty page then does not mean the end).
func (c *Client) Events(ctx context.Context, subscriptionID, cursor string, limit int, types []string) (*ploti.EventPage, error) {
	op := "read events " + subscriptionID
	if cursor != "" {
		op += " after " + cursor
	}
	if limit < 0 {
		return nil, fmt.Errorf("%s: limit %d is negative", op, limit)
	}
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(min(limit, MaxEventsLimit)))
	}
	if len(types) > 0 {
		q.Set("types", strings.Join(types, ","))
	}
	var p *ploti.EventPage
	err := c.call(ctx, op, http.MethodGet, c.endpoint(q, "v1", "feeds", "subscriptions", subscriptionID, "events"), nil,
		func(b []byte) (err error) { p, err = DecodeEventPage(b); return err })
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Subscription gets one subscription.
func (c *Client) Subscription(ctx context.Context, id string) (*ploti.Subscription, error) {
	var s ploti.Subscription
	err := c.call(ctx, "get subscription "+id, http.MethodGet, c.endpoint(nil, "v1", "feeds", "subscriptions", id), nil,
		decodeChecked(&s, func() bool { return s.ID != "" }, "subscription has no id"))
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// Dataset gets one dataset, with its current version.
func (c *Client) Dataset(ctx context.Context, datasetID string) (*ploti.Dataset, error) {
	var d ploti.Dataset
	err := c.call(ctx, "get dataset "+datasetID, http.MethodGet, c.endpoint(nil, "v1", "feeds", "datasets", datasetID), nil,
		decodeChecked(&d, func() bool { return d.ID != "" }, "dataset has no id"))
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Version gets one version of a dataset with freshly signed file links.
func (c *Client) Version(ctx context.Context, datasetID string, version int) (*ploti.Version, error) {
	op := fmt.Sprintf("get version %s v%d", datasetID, version)
	return c.getVersion(ctx, op, c.endpoint(nil, "v1", "feeds", "datasets", datasetID, "versions", strconv.Itoa(version)))
}

// VersionByLink gets the version an event's links.version names. The link
// must be on the base URL's scheme, host and port (else ErrForeignLink,
// and nothing is sent): the key never goes anywhere else.
func (c *Client) VersionByLink(ctx context.Context, link string) (*ploti.Version, error) {
	const op = "get version by link"
	u, err := url.Parse(link)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: unparsable link", op, ErrForeignLink)
	}
	if !sameOrigin(u, c.base) || u.User != nil {
		return nil, fmt.Errorf("%s %s: %w (api is %s)", op, redactURL(u), ErrForeignLink, c.base.Host)
	}
	return c.getVersion(ctx, op, link)
}

func (c *Client) getVersion(ctx context.Context, op, rawURL string) (*ploti.Version, error) {
	var v ploti.Version
	if err := c.call(ctx, op, http.MethodGet, rawURL, nil, decodeVersion(&v)); err != nil {
		return nil, err
	}
	return &v, nil
}

// Links signs fresh links for only the named files of a version
// ("snapshot", "changes", "idMap", "schema", "attachments").
func (c *Client) Links(ctx context.Context, datasetID string, version int, files []string) (*ploti.Version, error) {
	op := fmt.Sprintf("sign links %s v%d %s", datasetID, version, strings.Join(files, ","))
	body := struct {
		Files []string `json:"files"`
	}{Files: files}
	var v ploti.Version
	u := c.endpoint(nil, "v1", "feeds", "datasets", datasetID, "versions", strconv.Itoa(version), "links")
	if err := c.call(ctx, op, http.MethodPost, u, body, decodeVersion(&v)); err != nil {
		return nil, err
	}
	return &v, nil
}

// Schema gets a dataset's schema at a version; version 0 is the current
// one. A dataset with no released version answers ErrNotFound.
func (c *Client) Schema(ctx context.Context, datasetID string, version int) (*ploti.Schema, error) {
	op := "get schema " + datasetID
	var q url.Values
	if version > 0 {
		q = url.Values{"version": {strconv.Itoa(version)}}
		op += fmt.Sprintf(" v%d", version)
	}
	var s ploti.Schema
	if err := c.call(ctx, op, http.MethodGet, c.endpoint(q, "v1", "feeds", "datasets", datasetID, "schema"), nil,
		decodeChecked(&s, func() bool { return s.SchemaVersion != "" }, "schema has no schemaVersion")); err != nil {
		return nil, err
	}
	return &s, nil
}

// Schemas lists every schema version a dataset's released versions have
// had, oldest first. It accepts a bare array or {"schemas": [...]}.
func (c *Client) Schemas(ctx context.Context, datasetID string) ([]ploti.Schema, error) {
	var out []ploti.Schema
	err := c.call(ctx, "list schemas "+datasetID, http.MethodGet, c.endpoint(nil, "v1", "feeds", "datasets", datasetID, "schemas"), nil,
		func(b []byte) error {
			if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
				return json.Unmarshal(t, &out)
			}
			var wrapped struct {
				Schemas *[]ploti.Schema `json:"schemas"`
			}
			if err := json.Unmarshal(b, &wrapped); err != nil {
				return err
			}
			if wrapped.Schemas == nil {
				return errors.New(`no "schemas" list`)
			}
			out = *wrapped.Schemas
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decodeChecked unmarshals into v, then refuses it with msg unless ok():
// a JSON null or an object of the wrong kind decodes without error.
func decodeChecked(v any, ok func() bool, msg string) func([]byte) error {
	return func(b []byte) error {
		if err := json.Unmarshal(b, v); err != nil {
			return err
		}
		if !ok() {
			return errors.New(msg)
		}
		return nil
	}
}

// decodeVersion decodes a version, which must name its dataset and a
// positive version number.
func decodeVersion(v *ploti.Version) func([]byte) error {
	return decodeChecked(v, func() bool { return v.DatasetID != "" && v.Version > 0 }, "version has no datasetId or version")
}

// DecodeEventPage decodes an events page. It refuses a page without
// nextCursor: storing an empty cursor would restart the log.
func DecodeEventPage(b []byte) (*ploti.EventPage, error) {
	var p ploti.EventPage
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	if p.NextCursor == "" && len(p.Events) > 0 {
		// With events, a missing cursor would restart the log; an empty
		// last page without one just means caught up.
		return nil, errors.New("page has no nextCursor")
	}
	return &p, nil
}

// DecodeManifest decodes a manifest. It refuses one without eventCursor:
// events after the manifest could not be read from the right place.
func DecodeManifest(b []byte) (*ploti.Manifest, error) {
	var m ploti.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.EventCursor == "" {
		return nil, errors.New("manifest has no eventCursor")
	}
	return &m, nil
}
