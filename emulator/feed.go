package emulator

import (
	"net/http"
	"strings"
	"time"
)

func (e *Emulator) getEvents(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 100, 500)
	if err != nil {
		return 0, nil, err
	}
	var types map[string]bool
	if t := q.Get("types"); t != "" {
		types = map[string]bool{}
		for _, x := range strings.Split(t, ",") {
			types[strings.TrimSpace(x)] = true
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.lookupSub(r)
	if err != nil {
		return 0, nil, err
	}
	var seq int64
	if c := q.Get("cursor"); c != "" {
		n, ok := parseCursor(s.id, c)
		switch {
		case !ok:
			return 0, nil, errInvalid("the cursor is not one this subscription gave")
		case n > s.lastSeq():
			return 0, nil, errInvalid("the cursor is past the subscription's newest event")
		case n < s.pruned:
			return 0, nil, errExpired("events after the cursor were pruned: reload from the manifest")
		}
		seq = n
	} else if s.pruned > 0 {
		return 0, nil, errExpired("the first events have aged out: start from a manifest's eventCursor")
	}
	base := e.apiBase(r)
	out := []map[string]any{}
	i := seq - s.pruned
	end := min(i+int64(limit), int64(len(s.events)))
	for ; i < end; i++ {
		ev := s.events[i]
		if types == nil || types[ev.typ] {
			out = append(out, ev.render(s.id, base))
		}
	}
	return 200, map[string]any{"events": out, "nextCursor": Cursor(s.id, s.pruned+end)}, nil
}

func errExpired(msg string) error { return &apiError{http.StatusGone, "expired", msg} }

func (e *Emulator) getManifest(r *http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.lookupSub(r)
	if err != nil {
		return 0, nil, err
	}
	if e.planDown {
		return 0, nil, &apiError{http.StatusServiceUnavailable, "plan_unavailable", "the workspace's plan cannot be read just now: try again in a minute"}
	}
	l := e.newLinker(e.fileBase(r))
	asOf := r.URL.Query().Get("asOf")
	if asOf == "" {
		e.recomputeLocked(s)
		return 200, e.manifestNow(s, l), nil
	}
	n, ok := parseCursor(s.id, asOf)
	switch {
	case !ok:
		return 0, nil, errInvalid("asOf is not a cursor this subscription gave")
	case n > s.lastSeq():
		return 0, nil, errInvalid("asOf is past the subscription's newest event")
	case s.pruned > 0:
		return 0, nil, errExpired("events up to asOf were pruned")
	}
	return e.manifestAsOf(s, n, l)
}

func (e *Emulator) manifestEntry(d *dataset, v *version, l linker) map[string]any {
	return map[string]any{
		"datasetId": d.spec.ID, "version": v.num, "schemaVersion": v.schema.Version,
		"keyed": len(v.schema.Key) > 0, "keyColumns": nonNil(v.schema.Key), "rowCount": v.rowCount,
		"files": map[string]any{
			"snapshot": l.list(v.snapshot), "schema": l.obj(v.schemaFile), "attachments": l.attachments(d.attachments),
		},
		"linksExpireAt": l.expires.Format(time.RFC3339),
	}
}

func (e *Emulator) manifestNow(s *subscription, l linker) map[string]any {
	listed, unavailable := []map[string]any{}, []map[string]any{}
	for _, id := range e.dsOrder {
		d := e.datasets[id]
		if s.members[id] == nil {
			continue
		}
		switch v := d.released; {
		case v == nil:
			unavailable = append(unavailable, map[string]any{"datasetId": id, "reason": e.statusLocked(d)})
		case d.rebuilding:
			unavailable = append(unavailable, map[string]any{"datasetId": id, "version": v.num, "reason": "rebuilding"})
		default:
			listed = append(listed, e.manifestEntry(d, v, l))
		}
	}
	return map[string]any{
		"subscriptionId": s.id, "eventCursor": Cursor(s.id, s.lastSeq()),
		"generatedAt": e.nowLocked().Format(time.RFC3339), "datasets": listed, "unavailable": unavailable,
	}
}

// manifestAsOf rebuilds the datasets and versions as of an event by
// replaying the log up to it, listing only datasets still delivered.
func (e *Emulator) manifestAsOf(s *subscription, n int64, l linker) (int, any, error) {
	held := map[string]int{} // dataset → version held as of n (0: none yet)
	var order []string
	for _, ev := range s.events[:n-s.pruned] {
		switch ev.typ {
		case "feed.dataset.added", "feed.dataset.updated", "feed.dataset.resync_required":
			if _, ok := held[ev.datasetID]; !ok {
				order = append(order, ev.datasetID)
			}
			held[ev.datasetID] = 0
			if ev.version != nil {
				held[ev.datasetID] = *ev.version
			}
		case "feed.dataset.removed":
			delete(held, ev.datasetID)
		}
	}
	listed, unavailable := []map[string]any{}, []map[string]any{}
	for _, id := range order {
		num, ok := held[id]
		d := e.datasets[id]
		if !ok || s.members[id] == nil || d == nil {
			continue
		}
		if num == 0 {
			unavailable = append(unavailable, map[string]any{"datasetId": id, "reason": "building"})
			continue
		}
		v := d.versionNum(num)
		if v == nil || v.filesGone || v.reReleased {
			return 0, nil, errExpired("a version listed as of asOf is past retention or was released again")
		}
		listed = append(listed, e.manifestEntry(d, v, l))
	}
	return 200, map[string]any{
		"subscriptionId": s.id, "eventCursor": Cursor(s.id, n),
		"generatedAt": e.nowLocked().Format(time.RFC3339), "datasets": listed, "unavailable": unavailable,
	}, nil
}

func (d *dataset) versionNum(n int) *version {
	for _, v := range d.versions {
		if v.num == n {
			return v
		}
	}
	return nil
}
