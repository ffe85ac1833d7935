package emulator

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// fileKinds are the names POST .../links takes.
var fileKinds = []string{"snapshot", "changes", "idMap", "schema", "attachments"}

// versionJSON is a version object with signed links to the files named in
// only (all when nil); the others are null.
func (e *Emulator) versionJSON(d *dataset, v *version, l linker, only map[string]bool) map[string]any {
	want := func(k string) bool { return only == nil || only[k] }
	files := map[string]any{"snapshot": nil, "changes": nil, "idMap": nil, "schema": nil, "attachments": nil}
	if want("snapshot") {
		files["snapshot"] = l.list(v.snapshot)
	}
	if want("changes") {
		if v.changes != nil { // docs/wire.md section 2: "changes": [{"url", "bytes", "sha256"}], a list like snapshot
			files["changes"] = []any{l.objPtr(v.changes)}
		}
	}
	if want("idMap") {
		files["idMap"] = l.objPtr(v.idMap)
	}
	if want("schema") {
		files["schema"] = l.obj(v.schemaFile)
	}
	if want("attachments") {
		files["attachments"] = l.attachments(d.attachments)
	}
	prev, why := v.prev, v.resyncReason
	if v == d.feedFirst {
		prev, why = nil, reasonFirstVersion // the first version sent, whatever Ploti built before
	}
	var reason any
	if why != "" {
		reason = why
	}
	return map[string]any{
		"datasetId": d.spec.ID, "version": v.num, "previousVersion": intOrNil(prev),
		"schemaVersion": v.schema.Version, "publishedAt": v.publishedAt.Format(time.RFC3339),
		"rowCount": v.rowCount, "resyncRequired": why != "", "resyncReason": reason,
		"files": files, "linksExpireAt": l.expires.Format(time.RFC3339),
	}
}

// deliverableVersion finds a released version that one of the workspace's
// subscriptions delivers, or the error answer the docs give.
func (e *Emulator) deliverableVersion(r *http.Request) (*dataset, *version, error) {
	d := e.datasets[r.PathValue("dataset")]
	if d == nil {
		return nil, nil, errNotFound("no such dataset")
	}
	switch {
	case !d.deliverable:
		return nil, nil, &apiError{http.StatusConflict, "not_deliverable", "the dataset is not delivered through Data Feeds"}
	case !e.inCoverage(d):
		return nil, nil, &apiError{http.StatusConflict, "outside_coverage", "the dataset is outside the workspace's coverage"}
	case d.planClosed || !e.deliveredLocked(d):
		return nil, nil, &apiError{http.StatusConflict, "not_subscribed", "no subscription of the workspace delivers this dataset"}
	}
	n, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || n < 1 {
		return nil, nil, errInvalid("version must be a positive integer")
	}
	for _, v := range d.versions {
		if v.num != n || !d.sentByFeeds(v) {
			continue
		}
		if v.filesGone {
			return nil, nil, &apiError{http.StatusGone, "expired", "the version's files are past retention"}
		}
		if d.rebuilding && v == d.released {
			return nil, nil, &apiError{http.StatusServiceUnavailable, "rebuilding", "the version's files are being rebuilt"}
		}
		return d, v, nil
	}
	return nil, nil, errNotFound("no such version")
}

func (e *Emulator) getVersion(r *http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, v, err := e.deliverableVersion(r)
	if err != nil {
		return 0, nil, err
	}
	return 200, e.versionJSON(d, v, e.newLinker(e.fileBase(r)), nil), nil
}

func (e *Emulator) postLinks(r *http.Request) (int, any, error) {
	var body struct {
		Files []string `json:"files"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil || len(body.Files) == 0 {
		return 0, nil, errInvalid(`body must be {"files": [...]} naming snapshot, changes, idMap, schema or attachments`)
	}
	only := map[string]bool{}
	for _, f := range body.Files {
		ok := false
		for _, k := range fileKinds {
			ok = ok || k == f
		}
		if !ok {
			return 0, nil, errInvalid("unknown file kind " + strconv.Quote(f))
		}
		only[f] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d, v, err := e.deliverableVersion(r)
	if err != nil {
		return 0, nil, err
	}
	return 200, e.versionJSON(d, v, e.newLinker(e.fileBase(r)), only), nil
}

func (e *Emulator) getSchema(r *http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.lookupDataset(r)
	if err != nil {
		return 0, nil, err
	}
	if d.current() == nil {
		return 0, nil, errNotFound("the dataset has no released version yet")
	}
	s := d.current().schema
	if q := r.URL.Query().Get("version"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			return 0, nil, errInvalid("version must be a positive integer")
		}
		s = nil
		for _, v := range d.versions {
			if v.num == n && d.sentByFeeds(v) {
				s = v.schema
			}
		}
		if s == nil {
			return 0, nil, errNotFound("no such version")
		}
	}
	return 200, s.json(d.spec.ID), nil
}

func (e *Emulator) getSchemas(r *http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.lookupDataset(r)
	if err != nil {
		return 0, nil, err
	}
	out := []map[string]any{}
	for _, s := range d.schemas {
		out = append(out, s.json(d.spec.ID))
	}
	return 200, map[string]any{"datasetId": d.spec.ID, "schemas": out}, nil
}
