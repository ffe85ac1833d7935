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

// Limits of the watch API's pages (docs/wire.md section 9).
const (
	// MaxRowsLimit is the largest page changes and rows serve.
	MaxRowsLimit = 1000
	// MaxRowIDs is the most ids one rows read may name.
	MaxRowIDs = 500
)

// Watch watches a dataset: from then on each new version sends
// dataset.changed to the member's webhooks. Watching twice changes nothing.
// The 101st watch answers ErrWatchLimit; a dataset the workspace's coverage
// or plan does not open ErrOutsideCoverage or ErrNotDeliverable.
func (c *Client) Watch(ctx context.Context, datasetID string) (*ploti.Watch, error) {
	var w ploti.Watch
	err := c.call(ctx, "watch "+datasetID, http.MethodPost, c.endpoint(nil, "v1", "datasets", datasetID, "watch"), struct{}{},
		decodeChecked(&w, func() bool { return w.DatasetID != "" }, "watch has no datasetId"))
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// Unwatch stops watching a dataset; it succeeds also when the dataset was
// not watched. An answer without a body (204 No Content) is a success too:
// only an answer that says the dataset is still watched is refused.
func (c *Client) Unwatch(ctx context.Context, datasetID string) error {
	var u ploti.Unwatched
	check := decodeChecked(&u, func() bool { return !u.Watching }, "answer says the dataset is still watched")
	return c.call(ctx, "unwatch "+datasetID, http.MethodDelete, c.endpoint(nil, "v1", "datasets", datasetID, "watch"), nil,
		func(b []byte) error {
			if len(bytes.TrimSpace(b)) == 0 {
				return nil
			}
			return check(b)
		})
}

// Watches lists every dataset the member watches, each with its current
// version, in one call: a sync of 100 watched datasets learns which moved
// without a call per dataset.
func (c *Client) Watches(ctx context.Context) ([]ploti.Watch, error) {
	var out struct {
		Watches *[]ploti.Watch `json:"watches"`
	}
	err := c.call(ctx, "list watches", http.MethodGet, c.endpoint(nil, "v1", "datasets", "watches"), nil,
		func(b []byte) error {
			if err := json.Unmarshal(b, &out); err != nil {
				return err
			}
			if out.Watches == nil {
				return errors.New(`no "watches" list`)
			}
			for i, w := range *out.Watches {
				if w.DatasetID == "" {
					return fmt.Errorf("watch %d has no datasetId", i)
				}
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return *out.Watches, nil
}

// DatasetInfo gets a dataset from Ploti's general API: its own version
// number and its columns now.
func (c *Client) DatasetInfo(ctx context.Context, datasetID string) (*ploti.DatasetInfo, error) {
	var d ploti.DatasetInfo
	err := c.call(ctx, "get dataset info "+datasetID, http.MethodGet, c.endpoint(nil, "v1", "datasets", datasetID), nil,
		decodeChecked(&d, func() bool { return d.ID != "" }, "dataset has no id"))
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// Changes reads one page of what a version of a dataset added, changed,
// removed or renamed, after cursor (the first page when empty). limit 0
// leaves the server's default; a limit over MaxRowsLimit is lowered to it.
// A version past retention answers ErrExpired.
func (c *Client) Changes(ctx context.Context, datasetID string, version int, cursor string, limit int) (*ploti.ChangesPage, error) {
	op := fmt.Sprintf("read changes %s v%d", datasetID, version)
	if version <= 0 {
		return nil, fmt.Errorf("%s: version must be positive", op)
	}
	q := url.Values{"version": {strconv.Itoa(version)}}
	pageQuery(q, cursor, limit)
	var p ploti.ChangesPage
	err := c.call(ctx, op, http.MethodGet, c.endpoint(q, "v1", "datasets", datasetID, "changes"), nil, func(b []byte) error {
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		switch {
		case p.Version != version:
			return fmt.Errorf("answer is for version %d", p.Version)
		case p.DatasetID != "" && p.DatasetID != datasetID:
			return fmt.Errorf("answer is for dataset %s", p.DatasetID)
		case p.ChangeLog == "":
			return errors.New("answer has no changeLog")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// Rows reads one page of a dataset's rows after cursor (the first page
// when empty): the whole dataset, or with ids only the rows of those ids
// that exist now (at most MaxRowIDs). A read that pages stays on its first
// page's version; its cursor answers ErrExpired once that version has been
// superseded for an hour.
func (c *Client) Rows(ctx context.Context, datasetID, cursor string, limit int, ids []string) (*ploti.RowsPage, error) {
	op := "read rows " + datasetID
	if err := checkRowIDs(op, ids); err != nil {
		return nil, err
	}
	q := url.Values{}
	pageQuery(q, cursor, limit)
	if len(ids) > 0 {
		q.Set("ids", strings.Join(ids, ","))
	}
	var p ploti.RowsPage
	err := c.call(ctx, op, http.MethodGet, c.endpoint(q, "v1", "datasets", datasetID, "rows"), nil, func(b []byte) error {
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		return checkRowsPage(&p, datasetID, int64(len(p.Rows)))
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// spoolRowsPage reads one rows page like Rows, writing its rows to w (one
// a line, through splitRows) instead of decoding them; the page it
// returns has no rows, and n says how many went to w.
func (c *Client) spoolRowsPage(ctx context.Context, datasetID, cursor string, limit int, ids []string, w *spoolFile) (p *ploti.RowsPage, n int64, err error) {
	op := "read rows " + datasetID
	if err := checkRowIDs(op, ids); err != nil {
		return nil, 0, err
	}
	q := url.Values{}
	pageQuery(q, cursor, limit)
	if len(ids) > 0 {
		q.Set("ids", strings.Join(ids, ","))
	}
	err = c.call(ctx, op, http.MethodGet, c.endpoint(q, "v1", "datasets", datasetID, "rows"), nil, func(b []byte) error {
		env, rows, err := splitRows(b, w.w)
		if err != nil {
			return err
		}
		p, n = &ploti.RowsPage{}, rows
		if err := json.Unmarshal(env, p); err != nil {
			return err
		}
		return checkRowsPage(p, datasetID, n)
	})
	if err != nil {
		return nil, n, err
	}
	return p, n, nil
}

// checkRowIDs refuses more ids than a read may name, and ids that ids=
// cannot name.
func checkRowIDs(op string, ids []string) error {
	if len(ids) > MaxRowIDs {
		return fmt.Errorf("%s: %d ids, at most %d a read", op, len(ids), MaxRowIDs)
	}
	for _, id := range ids {
		if id == "" || strings.Contains(id, ",") {
			return fmt.Errorf("%s: %w: record id %q cannot be named in ids=", op, ErrUnnamableID, id)
		}
	}
	return nil
}

// checkRowsPage checks a rows page's envelope: its dataset, and a version
// when it has rows.
func checkRowsPage(p *ploti.RowsPage, datasetID string, rows int64) error {
	if p.DatasetID != "" && p.DatasetID != datasetID {
		return fmt.Errorf("answer is for dataset %s", p.DatasetID)
	}
	if p.Version == nil && rows > 0 {
		return errors.New("answer has rows but no version")
	}
	return nil
}

// pageQuery sets cursor and limit (lowered to MaxRowsLimit) when given.
func pageQuery(q url.Values, cursor string, limit int) {
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(min(limit, MaxRowsLimit)))
	}
}
