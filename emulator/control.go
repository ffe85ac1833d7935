package emulator

// The control endpoints: what a person (ploti-replica emulator publish,
// hold, …) or a test in another language does to a running emulator.
// They live under ControlPrefix on the API listener, beside /v1 and never
// under it, need the emulator's API key, and pass by the injected faults
// and the rate limits. Each calls an exported method (drive.go, staff.go,
// member.go, faults.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// ControlPrefix is the path prefix of the control endpoints.
const ControlPrefix = "/_emulator/"

// ControlEndpoints lists the control endpoints, each with what it does and
// the method it calls, for a banner or a help text.
func ControlEndpoints() []string {
	return []string{
		"POST " + ControlPrefix + "publish[?dataset=ID]          the next version of a demo dataset, or of each (PublishNext)",
		"POST " + ControlPrefix + "hold?dataset=ID[&reason=R]    a version Ploti holds for review (HoldNext)",
		"POST " + ControlPrefix + "release?dataset=ID            staff releases the held version (ReleaseHeld)",
		"POST " + ControlPrefix + "rename-ids?dataset=ID[&fraction=F]  records under new ids (ReplaceIDs)",
		"POST " + ControlPrefix + "request-event?type=T[&request=ID]   a request event to member webhooks; a JSON body is its data (EmitRequestEvent)",
		"POST " + ControlPrefix + "fail-next?path=P&status=S[&count=N] the next requests matching P answer S (FailNext)",
	}
}

// requestSeq numbers the request ids the request-event endpoint makes up.
var requestSeq atomic.Int64

// controlMux routes the control endpoints behind the key.
func (e *Emulator) controlMux() http.Handler {
	mux := http.NewServeMux()
	routes := []struct {
		pattern string
		h       func(*http.Request) (int, any, error)
	}{
		{"POST " + ControlPrefix + "publish", e.ctlPublish},
		{"POST " + ControlPrefix + "hold", e.ctlHold},
		{"POST " + ControlPrefix + "release", e.ctlRelease},
		{"POST " + ControlPrefix + "rename-ids", e.ctlRenameIDs},
		{"POST " + ControlPrefix + "request-event", e.ctlRequestEvent},
		{"POST " + ControlPrefix + "fail-next", e.ctlFailNext},
	}
	for _, rt := range routes {
		mux.Handle(rt.pattern, e.control(rt.h))
	}
	mux.Handle(ControlPrefix, e.control(func(*http.Request) (int, any, error) {
		return 0, nil, &apiError{http.StatusNotFound, "not_found", "no such control endpoint; there are: " + strings.Join(ControlEndpoints(), "; ")}
	}))
	return mux
}

// control checks the key and writes a handler's answer; errors of the
// methods become 400, 404, 409 or 503 answers.
func (e *Emulator) control(h func(*http.Request) (int, any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || key != e.apiKey {
			writeError(w, &apiError{http.StatusUnauthorized, "unauthorized", "a valid API key is required: Authorization: Bearer <key>"})
			return
		}
		status, body, err := h(r)
		if err != nil {
			writeError(w, controlError(err))
			return
		}
		writeJSON(w, status, body)
	})
}

func controlError(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, ErrInvalid):
		return &apiError{http.StatusBadRequest, "invalid_input", err.Error()}
	case errors.Is(err, ErrNotFound):
		return &apiError{http.StatusNotFound, "not_found", err.Error()}
	case errors.Is(err, ErrNotHeld), errors.Is(err, ErrNotReleasable):
		return &apiError{http.StatusConflict, "conflict", err.Error()}
	case errors.Is(err, ErrClosed):
		return &apiError{http.StatusServiceUnavailable, "closed", err.Error()}
	}
	return &apiError{http.StatusInternalServerError, "internal", err.Error()}
}

// releaseJSON is a Release as the control endpoints answer it.
func releaseJSON(r Release) map[string]any {
	return map[string]any{
		"datasetId": r.DatasetID, "version": r.Version, "previousVersion": intOrNil(r.PreviousVersion),
		"schemaVersion": r.SchemaVersion, "schemaBump": nullIfEmpty(r.SchemaBump),
		"held": r.Held, "holdReason": nullIfEmpty(r.HoldReason), "resyncReason": nullIfEmpty(r.ResyncReason),
		"rowCount": r.RowCount, "added": r.Added, "changed": r.Changed, "removed": r.Removed,
		"eventIds": nonNil(r.EventIDs), "plotiVersion": r.PlotiVersion,
	}
}

func releasesJSON(rs ...Release) map[string]any {
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = releaseJSON(r)
	}
	return map[string]any{"releases": out}
}

// needDataset is the dataset query parameter, which must be given.
func needDataset(r *http.Request) (string, error) {
	id := r.URL.Query().Get("dataset")
	if id == "" {
		return "", errInvalid("dataset is required: ?dataset=ID")
	}
	return id, nil
}

func (e *Emulator) ctlPublish(r *http.Request) (int, any, error) {
	var ids []string
	if id := r.URL.Query().Get("dataset"); id != "" {
		ids = []string{id}
	}
	rels, err := e.PublishNext(r.Context(), ids...)
	if err != nil {
		return 0, nil, err
	}
	return 200, releasesJSON(rels...), nil
}

func (e *Emulator) ctlHold(r *http.Request) (int, any, error) {
	id, err := needDataset(r)
	if err != nil {
		return 0, nil, err
	}
	rel, err := e.HoldNext(r.Context(), id, r.URL.Query().Get("reason"))
	if err != nil {
		return 0, nil, err
	}
	return 200, releasesJSON(rel), nil
}

func (e *Emulator) ctlRelease(r *http.Request) (int, any, error) {
	id, err := needDataset(r)
	if err != nil {
		return 0, nil, err
	}
	rel, err := e.ReleaseHeld(id)
	if err != nil {
		return 0, nil, err
	}
	return 200, releasesJSON(rel), nil
}

func (e *Emulator) ctlRenameIDs(r *http.Request) (int, any, error) {
	id, err := needDataset(r)
	if err != nil {
		return 0, nil, err
	}
	fraction := demoReplaced
	if s := r.URL.Query().Get("fraction"); s != "" {
		if fraction, err = strconv.ParseFloat(s, 64); err != nil || fraction <= 0 || fraction > 1 {
			return 0, nil, errInvalid("fraction must be a number above 0 and at most 1")
		}
	}
	rel, err := e.ReplaceIDs(r.Context(), id, fraction)
	if err != nil {
		return 0, nil, err
	}
	return 200, releasesJSON(rel), nil
}

// ctlRequestEvent sends a request event: the body (a JSON object, or
// nothing) is its data, and what the type needs and the body lacks is made
// up: a request id, questions, an answer.
func (e *Emulator) ctlRequestEvent(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	typ := q.Get("type")
	if typ == "" {
		return 0, nil, errInvalid("type is required: ?type=data_request.ready (or another of RequestEventTypes)")
	}
	data := map[string]any{}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return 0, nil, errInvalid("read body: " + err.Error())
	}
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &data); err != nil || data == nil {
			return 0, nil, errInvalid("the body must be a JSON object, the event's data")
		}
	}
	if id := q.Get("request"); id != "" {
		data["requestId"] = id
	}
	if _, ok := data["requestId"]; !ok {
		data["requestId"] = fmt.Sprintf("req_emulator_%d", requestSeq.Add(1))
	}
	if _, ok := data["questions"]; !ok && typ == "research_request.question" {
		data["questions"] = []map[string]any{{"id": "q_1", "text": "Which years should the research cover?"}}
	}
	if _, ok := data["answer"]; !ok && typ == "research_request.answered" {
		data["answer"] = "The research covers 2020 to 2026."
	}
	id, err := e.EmitRequestEvent(typ, data)
	if err != nil {
		return 0, nil, err
	}
	return 200, map[string]any{"eventId": id, "type": typ, "requestId": data["requestId"]}, nil
}

func (e *Emulator) ctlFailNext(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	path := q.Get("path")
	if path == "" {
		path = "/v1/**"
	}
	if _, p, ok := strings.Cut(path, " "); !strings.HasPrefix(path, "/") && (!ok || !strings.HasPrefix(p, "/")) {
		return 0, nil, errInvalid("path must be a URL path pattern such as /v1/** or \"GET /v1/feeds/subscriptions/*/events\"")
	}
	status, count := http.StatusServiceUnavailable, 1
	var err error
	if s := q.Get("status"); s != "" {
		if status, err = strconv.Atoi(s); err != nil || status < 100 || status > 599 {
			return 0, nil, errInvalid("status must be an HTTP status from 100 to 599")
		}
	}
	if s := q.Get("count"); s != "" {
		if count, err = strconv.Atoi(s); err != nil || count < 1 {
			return 0, nil, errInvalid("count must be an integer above zero")
		}
	}
	e.FailNext(path, status, count)
	return 200, map[string]any{"path": path, "status": status, "count": count}, nil
}
