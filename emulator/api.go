package emulator

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// apiMux routes /v1 behind the middleware: time, auth, faults, rate limits.
func (e *Emulator) apiMux() http.Handler {
	mux := http.NewServeMux()
	routes := []struct {
		pattern string
		strict  bool
		h       func(*http.Request) (int, any, error)
	}{
		{"GET /v1/places", false, e.getPlaces},
		{"GET /v1/topics", false, e.getTopics},
		{"GET /v1/feeds/datasets", false, e.listDatasets},
		{"GET /v1/feeds/datasets/{dataset}", false, e.getDataset},
		{"GET /v1/feeds/datasets/{dataset}/versions/{version}", false, e.getVersion},
		{"POST /v1/feeds/datasets/{dataset}/versions/{version}/links", false, e.postLinks},
		{"GET /v1/feeds/datasets/{dataset}/schema", false, e.getSchema},
		{"GET /v1/feeds/datasets/{dataset}/schemas", false, e.getSchemas},
		{"GET /v1/feeds/subscriptions", false, e.listSubs},
		{"POST /v1/feeds/subscriptions", true, e.postSub},
		{"POST /v1/feeds/subscriptions/preview", true, e.previewSub},
		{"GET /v1/feeds/subscriptions/{id}", false, e.getSub},
		{"PATCH /v1/feeds/subscriptions/{id}", true, e.patchSub},
		{"DELETE /v1/feeds/subscriptions/{id}", false, e.deleteSub},
		{"GET /v1/feeds/subscriptions/{id}/events", false, e.getEvents},
		{"GET /v1/feeds/subscriptions/{id}/manifest", true, e.getManifest},
		{"GET /v1/datasets/watches", false, e.listWatches},
		{"GET /v1/datasets/{dataset}", false, e.getWatchDataset},
		{"POST /v1/datasets/{dataset}/watch", false, e.postWatch},
		{"DELETE /v1/datasets/{dataset}/watch", false, e.deleteWatch},
		{"GET /v1/datasets/{dataset}/changes", false, e.getWatchChanges},
		{"GET /v1/datasets/{dataset}/rows", false, e.getWatchRows},
		{"POST /v1/webhooks", false, e.postWebhook},
		{"GET /v1/webhooks", false, e.listWebhooks},
		{"DELETE /v1/webhooks/{id}", false, e.deleteWebhook},
		{"POST /v1/webhooks/{id}/test", false, e.testWebhook},
	}
	for _, rt := range routes {
		mux.Handle(rt.pattern, e.wrap(rt.strict, rt.h))
	}
	mux.Handle(ControlPrefix, e.controlMux()) // beside /v1, never under it (control.go)
	mux.Handle("/", e.wrap(false, func(*http.Request) (int, any, error) {
		return 0, nil, &apiError{http.StatusNotFound, "not_found", "no such endpoint"}
	}))
	return mux
}

// wrap runs a handler behind auth, faults and rate limits and writes its
// answer. A handler returns a status and a JSON body, or an error
// (an *apiError for an error answer).
func (e *Emulator) wrap(strict bool, h func(*http.Request) (int, any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.sweepLocked()
		e.mu.Unlock()
		key := e.keyFor(r.Header.Get("Authorization"))
		if key == nil {
			writeError(w, &apiError{http.StatusUnauthorized, "unauthorized", "a valid API key is required: Authorization: Bearer <key>"})
			return
		}
		r = r.WithContext(withCaller(r.Context(), key))
		done, r := e.applyFault(w, r, false)
		if done {
			return
		}
		if wait, ok := e.rateCheck(strict); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(wait))
			writeError(w, &apiError{http.StatusTooManyRequests, "rate_limited", "too many calls; retry after " + strconv.Itoa(wait) + "s"})
			return
		}
		status, body, err := h(r)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = &apiError{http.StatusInternalServerError, "internal", err.Error()}
			}
			writeError(w, ae)
			return
		}
		if hd, ok := body.(headered); ok {
			for k, v := range hd.headers {
				w.Header().Set(k, v)
			}
			body = hd.body
		}
		if bf := bodyFault(r.Context()); bf != nil {
			writeJSONFault(w, status, body, bf)
			return
		}
		writeJSON(w, status, body)
	})
}

// headered is a body with extra answer headers (ETag, Idempotent-Replayed).
type headered struct {
	headers map[string]string
	body    any
}

func (e *Emulator) rateCheck(strict bool) (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.rateOn {
		return 0, true
	}
	// With the manual clock, real time also slides the window, so a client
	// that waits Retry-After seconds gets through without anyone calling
	// Advance (a standalone emulator); Advance still slides it at once.
	now := e.nowLocked()
	if e.opts.Now == nil {
		now = now.Add(time.Since(e.created))
	}
	ok, wait := e.limiter.allow(now, strict)
	return wait, ok
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, ok := v.(json.RawMessage) // an answer rendered already (the watch API's rows)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			http.Error(w, "encode answer", http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, ae *apiError) {
	writeJSON(w, ae.status, map[string]any{"error": map[string]any{"code": ae.code, "message": ae.message}})
}

func errInvalid(msg string) error { return &apiError{http.StatusBadRequest, "invalid_input", msg} }

func errNotFound(msg string) error { return &apiError{http.StatusNotFound, "not_found", msg} }

func (e *Emulator) apiBase(r *http.Request) string {
	if e.apiURL != "" {
		return e.apiURL
	}
	return "http://" + r.Host
}

func (e *Emulator) fileBase(r *http.Request) string {
	if e.fileURL != "" {
		return e.fileURL
	}
	return e.apiBase(r)
}

func (e *Emulator) getTopics(*http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return 200, map[string]any{"topics": append([]Topic{}, e.topics...)}, nil
}

// placeList is every place in coverage, with the implied "<state>-counties"
// places after each state's own, and us last.
func (e *Emulator) placeList() []*Place {
	var out []*Place
	states := map[string]bool{}
	for _, p := range e.places {
		if p.Kind == "county" && e.placeInCoverage(p) {
			states[strings.ToLower(p.State)] = true
		}
	}
	for _, p := range e.places {
		if e.placeInCoverage(p) {
			out = append(out, p)
		}
	}
	var sts []string
	for st := range states {
		sts = append(sts, st)
	}
	slices.Sort(sts)
	for _, st := range sts {
		out = append(out, &Place{ID: st + "-counties", Name: strings.ToUpper(st) + " counties", Kind: "counties", State: st})
	}
	if us := e.placeByID(usPlace.ID); !slices.Contains(out, us) && e.placeInCoverage(us) {
		out = append(out, us)
	}
	return out
}

func (e *Emulator) getPlaces(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	deliverable := q.Get("deliverable") == "true"
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{}
	for _, p := range e.placeList() {
		if st := q.Get("state"); st != "" && !strings.EqualFold(st, p.State) {
			continue
		}
		if k := q.Get("kind"); k != "" && k != p.Kind {
			continue
		}
		count, byTopic := 0, map[string]int{}
		for _, id := range e.dsOrder {
			d := e.datasets[id]
			if !e.placeMatches(p.ID, d) || (deliverable && !e.listable(d)) {
				continue
			}
			count++
			if d.spec.Topic != "" {
				byTopic[d.spec.Topic]++
			}
		}
		out = append(out, map[string]any{
			"id": p.ID, "name": p.Name, "kind": p.Kind, "state": nullIfEmpty(p.State),
			"datasetCount": count, "datasetCounts": byTopic,
		})
	}
	return 200, map[string]any{"places": out}, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// listable tells whether the workspace may see a dataset: deliverable, in
// coverage and opened by the plan.
func (e *Emulator) listable(d *dataset) bool {
	return d.deliverable && e.inCoverage(d) && !d.planClosed
}

func (e *Emulator) datasetJSON(d *dataset) map[string]any {
	var place any
	if id := e.filedPlace(d); id != "" {
		p := e.placeByID(id)
		if p == nil {
			p = &Place{ID: id}
		}
		place = map[string]any{"id": p.ID, "name": nullIfEmpty(p.Name), "kind": nullIfEmpty(p.Kind)}
	}
	key := d.spec.KeyColumns
	var current any
	if v := d.current(); v != nil {
		key = v.schema.Key
		current = map[string]any{"version": v.num, "publishedAt": v.publishedAt.Format(time.RFC3339), "schemaVersion": v.schema.Version}
	}
	var refresh any = map[string]any{"lastCheckedAt": nil, "nextCheckBy": nil}
	if !d.checkedAt.IsZero() {
		refresh = map[string]any{"lastCheckedAt": d.checkedAt.Format(time.RFC3339), "nextCheckBy": d.nextCheckBy.Format(time.RFC3339)}
	}
	return map[string]any{
		"id": d.spec.ID, "title": d.spec.Title, "description": nullIfEmpty(d.spec.Description),
		"dataAtlasId": "da_" + d.tag, "place": place, "topic": nullIfEmpty(d.spec.Topic),
		"source": map[string]any{"publisher": nullIfEmpty(d.spec.Publisher), "url": nullIfEmpty(d.spec.SourceURL)},
		"keyed":  len(key) > 0, "keyColumns": nonNil(key),
		"current": current, "status": e.statusLocked(d), "refresh": refresh,
	}
}

func (e *Emulator) listDatasets(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 100, 200)
	if err != nil {
		return 0, nil, err
	}
	offset, err := pageOffset(q.Get("cursor"), "ds:")
	if err != nil {
		return 0, nil, err
	}
	var since time.Time
	if s := q.Get("updatedSince"); s != "" {
		if since, err = time.Parse(time.RFC3339, s); err != nil {
			return 0, nil, errInvalid("updatedSince must be an RFC 3339 time")
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var sub *subscription
	if id := q.Get("subscription"); id != "" {
		if sub = e.subs[id]; sub == nil {
			return 0, nil, errNotFound("no such subscription")
		}
	}
	var all []*dataset
	for _, id := range e.dsOrder {
		d := e.datasets[id]
		switch {
		case !e.listable(d):
		case q.Get("place") != "" && !e.placeMatches(q.Get("place"), d):
		case q.Has("topic") && !topicIs(d, q.Get("topic")):
		case sub != nil && sub.members[id] == nil:
		case !since.IsZero() && (d.current() == nil || d.current().publishedAt.Before(since)):
		default:
			all = append(all, d)
		}
	}
	out := []map[string]any{}
	for i := offset; i < len(all) && len(out) < limit; i++ {
		out = append(out, e.datasetJSON(all[i]))
	}
	var next any
	if offset+limit < len(all) {
		next = base64.RawURLEncoding.EncodeToString([]byte("ds:" + strconv.Itoa(offset+limit)))
	}
	return 200, map[string]any{"datasets": out, "nextCursor": next}, nil
}

func topicIs(d *dataset, t string) bool {
	if t == "none" {
		return d.spec.Topic == ""
	}
	return d.spec.Topic == t
}

func intParam(s string, def, maxv int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxv {
		return 0, errInvalid("limit must be an integer from 1 to " + strconv.Itoa(maxv))
	}
	return n, nil
}

// lookupDataset finds a dataset the workspace may see.
func (e *Emulator) lookupDataset(r *http.Request) (*dataset, error) {
	d := e.datasets[r.PathValue("dataset")]
	if d == nil || !e.listable(d) {
		return nil, errNotFound("no such dataset")
	}
	return d, nil
}

func (e *Emulator) getDataset(r *http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.lookupDataset(r)
	if err != nil {
		return 0, nil, err
	}
	return 200, e.datasetJSON(d), nil
}
