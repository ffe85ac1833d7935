package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Subscription limits (subscriptions-manifest-files.txt: "A workspace may
// have at most 25 subscriptions at a time", "the 500 places a subscription
// may name").
const (
	MaxSubscriptions = 25
	MaxPlaces        = 500
)

type idemEntry struct {
	at     time.Time
	status int
	body   any
}

func (e *Emulator) subJSON(s *subscription) map[string]any {
	return map[string]any{
		"id": s.id, "name": s.name, "places": s.places, "topics": s.topics, "datasetIds": s.datasetIDs,
		"revision": s.revision, "createdAt": s.createdAt.Format(time.RFC3339), "updatedAt": s.updatedAt.Format(time.RFC3339),
	}
}

func etag(s *subscription) map[string]string {
	return map[string]string{"ETag": `"` + strconv.Itoa(s.revision) + `"`}
}

func (e *Emulator) lookupSub(r *http.Request) (*subscription, error) {
	s := e.subs[r.PathValue("id")]
	if s == nil {
		return nil, errNotFound("no such subscription")
	}
	return s, nil
}

func (e *Emulator) listSubs(*http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{}
	for _, id := range e.subOrder {
		out = append(out, e.subJSON(e.subs[id]))
	}
	return 200, map[string]any{"subscriptions": out}, nil
}

func (e *Emulator) getSub(r *http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.lookupSub(r)
	if err != nil {
		return 0, nil, err
	}
	return 200, headered{etag(s), e.subJSON(s)}, nil
}

// subBody is a create, patch or preview body; a field sent as null is an
// error, one left out is kept.
type subBody struct {
	fields map[string]json.RawMessage
	spec   SubscriptionSpec
	rev    *int
}

func readSubBody(r *http.Request) (*subBody, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return nil, errInvalid("the body must be a JSON object")
	}
	b := &subBody{}
	if err := json.Unmarshal(raw, &b.fields); err != nil || b.fields == nil {
		return nil, errInvalid("the body must be a JSON object")
	}
	for k, v := range b.fields {
		if string(bytes.TrimSpace(v)) == "null" {
			return nil, errInvalid(k + " may not be null: send [] to clear a list")
		}
	}
	var typed struct {
		Name       string   `json:"name"`
		Places     []string `json:"places"`
		Topics     []string `json:"topics"`
		DatasetIDs []string `json:"datasetIds"`
		Revision   *int     `json:"revision"`
	}
	if err := json.Unmarshal(raw, &typed); err != nil {
		return nil, errInvalid("malformed body: " + err.Error())
	}
	b.spec = SubscriptionSpec{Name: typed.Name, Places: typed.Places, Topics: typed.Topics, DatasetIDs: typed.DatasetIDs}
	b.rev = typed.Revision
	return b, nil
}

func (b *subBody) has(k string) bool { _, ok := b.fields[k]; return ok }

// checkSpec checks the places and datasets a subscription names.
func (e *Emulator) checkSpec(spec SubscriptionSpec) error {
	if e.planDown {
		return &apiError{http.StatusServiceUnavailable, "plan_unavailable", "the workspace's plan cannot be read just now"}
	}
	if len(spec.Places) > MaxPlaces {
		return errInvalid("a subscription may name at most " + strconv.Itoa(MaxPlaces) + " places; a <state>-counties place names all of a state's counties as one")
	}
	known := map[string]bool{}
	for _, p := range e.places {
		known[p.ID] = true
	}
	inCov := map[string]bool{}
	for _, p := range e.placeList() {
		inCov[p.ID] = true
	}
	for _, p := range spec.Places {
		switch {
		case inCov[p]:
		case known[p] || strings.HasSuffix(p, "-counties"):
			return &apiError{http.StatusConflict, "outside_coverage", "place " + p + " is outside the workspace's coverage"}
		default:
			return errInvalid("unknown place " + strconv.Quote(p))
		}
	}
	for _, t := range spec.Topics {
		if !slices.ContainsFunc(e.topics, func(k Topic) bool { return k.ID == t }) {
			return errInvalid("unknown topic " + strconv.Quote(t) + ": GET /v1/topics lists them")
		}
	}
	for _, id := range spec.DatasetIDs {
		d := e.datasets[id]
		if d == nil {
			return errInvalid("unknown dataset " + strconv.Quote(id))
		}
		if !e.listable(d) {
			return &apiError{http.StatusConflict, "not_deliverable", "dataset " + id + " cannot be delivered to this workspace"}
		}
	}
	return nil
}

// adminOnly: "Creating, changing and deleting one takes a workspace admin".
func adminOnly(r *http.Request, what string) error {
	return needs(r, what+" a subscription takes a workspace admin's API key", PermissionAdmin)
}

func (e *Emulator) postSub(r *http.Request) (int, any, error) {
	if err := adminOnly(r, "creating"); err != nil {
		return 0, nil, err
	}
	b, err := readSubBody(r)
	if err != nil {
		return 0, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	if ie, ok := e.idem[key]; ok && key != "" && e.nowLocked().Sub(ie.at) < 24*time.Hour {
		return ie.status, headered{map[string]string{"Idempotent-Replayed": "true"}, ie.body}, nil
	}
	if len(b.spec.Places) == 0 && len(b.spec.DatasetIDs) == 0 {
		return 0, nil, errInvalid("a subscription names at least one place or dataset")
	}
	if err := e.checkSpec(b.spec); err != nil {
		return 0, nil, err
	}
	if len(e.subs) >= MaxSubscriptions {
		// The docs give the limit but no code for it: 409 like the
		// watch and webhook limits of docs/wire.md section 9.
		return 0, nil, &apiError{http.StatusConflict, "subscription_limit",
			"a workspace may have at most " + strconv.Itoa(MaxSubscriptions) + " subscriptions at a time: delete one to make room"}
	}
	s, err := e.createSubLocked(b.spec)
	if err != nil {
		return 0, nil, errInvalid(err.Error())
	}
	body := e.subJSON(s)
	if key != "" {
		e.idem[key] = idemEntry{at: e.nowLocked(), status: http.StatusCreated, body: body}
	}
	return http.StatusCreated, headered{etag(s), body}, nil
}

func (e *Emulator) patchSub(r *http.Request) (int, any, error) {
	if err := adminOnly(r, "changing"); err != nil {
		return 0, nil, err
	}
	b, err := readSubBody(r)
	if err != nil {
		return 0, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.lookupSub(r)
	if err != nil {
		return 0, nil, err
	}
	rev := b.rev
	if rev == nil {
		if im := strings.Trim(strings.TrimPrefix(r.Header.Get("If-Match"), "W/"), `"`); im != "" {
			n, err := strconv.Atoi(im)
			if err != nil {
				return 0, nil, errInvalid("If-Match must be the subscription's revision")
			}
			rev = &n
		}
	}
	if rev == nil {
		return 0, nil, errInvalid("send the revision as If-Match or as revision in the body")
	}
	if *rev != s.revision {
		return 0, nil, &apiError{http.StatusPreconditionFailed, "precondition_failed", "the subscription changed since revision " + strconv.Itoa(*rev) + ": read it again and resend"}
	}
	next := SubscriptionSpec{Name: s.name, Places: s.places, Topics: s.topics, DatasetIDs: s.datasetIDs}
	if b.has("name") {
		next.Name = b.spec.Name
	}
	if b.has("places") {
		next.Places = nonNil(b.spec.Places)
	}
	if b.has("topics") {
		next.Topics = nonNil(b.spec.Topics)
	}
	if b.has("datasetIds") {
		next.DatasetIDs = nonNil(b.spec.DatasetIDs)
	}
	if len(next.Places) == 0 && len(next.DatasetIDs) == 0 {
		return 0, nil, errInvalid("the change would leave no places and no datasets: delete the subscription instead")
	}
	if err := e.checkSpec(next); err != nil {
		return 0, nil, err
	}
	e.patchLocked(s, next)
	return 200, headered{etag(s), e.subJSON(s)}, nil
}

func (e *Emulator) patchLocked(s *subscription, next SubscriptionSpec) {
	s.name, s.places, s.topics, s.datasetIDs = next.Name, next.Places, next.Topics, next.DatasetIDs
	s.revision++
	s.updatedAt = e.nowLocked()
	e.recomputeLocked(s)
}

// PatchSubscription changes a subscription as PATCH does (fields replaced,
// revision bumped) and sends added and removed events.
func (e *Emulator) PatchSubscription(id string, spec SubscriptionSpec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.subs[id]
	if s == nil {
		return fmt.Errorf("patch subscription %s: %w", id, ErrNotFound)
	}
	if len(spec.Places) == 0 && len(spec.DatasetIDs) == 0 {
		return fmt.Errorf("patch subscription %s: %w: no places and no datasets", id, ErrInvalid)
	}
	spec.Places, spec.Topics, spec.DatasetIDs = nonNil(spec.Places), nonNil(spec.Topics), nonNil(spec.DatasetIDs)
	e.patchLocked(s, spec)
	return nil
}

func (e *Emulator) deleteSub(r *http.Request) (int, any, error) {
	if err := adminOnly(r, "deleting"); err != nil {
		return 0, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.lookupSub(r)
	if err != nil {
		return 0, nil, err
	}
	if s.busy {
		return 0, nil, &apiError{http.StatusConflict, "busy", "the subscription's datasets are changing: try again in a moment"}
	}
	e.deleteSubLocked(s.id)
	return 200, map[string]any{"deleted": true}, nil
}
