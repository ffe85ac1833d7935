package emulator

import (
	"encoding/base64"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Preview sorts and the values of matchedBy (subscriptions-manifest-files.txt,
// "Preview before you subscribe": "Narrow it with q (title search), place,
// topic (none for no topic), matchedBy and sort (place, title or updated)").
// matchedBy names the fields of the body that select a dataset: "places"
// (through a place, within topics) and "datasetIds" (named on its own); a
// dataset can be matched by both.
const (
	matchedByPlaces   = "places"
	matchedByDatasets = "datasetIds"
)

// previewSub answers POST /v1/feeds/subscriptions/preview: what a
// subscription with the body's places, topics and datasetIds would deliver
// now. total, byTopic and byPlace count every such dataset; datasets is one
// page of those left after q, place, topic and matchedBy, in sort's order;
// matching counts them; nextCursor pages on (the query's limit, 100 by
// default, at most 200).
func (e *Emulator) previewSub(r *http.Request) (int, any, error) {
	b, err := readSubBody(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 100, 200)
	if err != nil {
		return 0, nil, err
	}
	offset, err := pageOffset(q.Get("cursor"), "pv:")
	if err != nil {
		return 0, nil, err
	}
	if mb := q.Get("matchedBy"); mb != "" && mb != matchedByPlaces && mb != matchedByDatasets {
		return 0, nil, errInvalid("matchedBy must be " + matchedByPlaces + " or " + matchedByDatasets)
	}
	if s := q.Get("sort"); s != "" && s != "place" && s != "title" && s != "updated" {
		return 0, nil, errInvalid("sort must be place, title or updated")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(b.spec.Places) == 0 && len(b.spec.DatasetIDs) == 0 {
		return 0, nil, errInvalid("name at least one place or dataset")
	}
	if err := e.checkSpec(b.spec); err != nil {
		return 0, nil, err
	}
	tmp := &subscription{places: b.spec.Places, topics: b.spec.Topics, datasetIDs: b.spec.DatasetIDs}
	byTopic, byPlace := map[string]int{}, map[string]int{} // "" for none
	var match []*dataset
	total := 0
	for _, id := range e.dsOrder {
		d := e.datasets[id]
		if e.leaveReason(tmp, d) != "" {
			continue
		}
		total++
		byTopic[d.spec.Topic]++
		byPlace[e.filedPlace(d)]++
		if e.previewKeeps(q, tmp, d) {
			match = append(match, d)
		}
	}
	e.sortPreview(match, q.Get("sort"))
	out := []map[string]any{}
	for i := offset; i < len(match) && len(out) < limit; i++ {
		dj := e.datasetJSON(match[i])
		dj["matchedBy"] = e.matchedBy(tmp, match[i])
		out = append(out, dj)
	}
	var next any
	if offset+limit < len(match) {
		next = base64.RawURLEncoding.EncodeToString([]byte("pv:" + strconv.Itoa(offset+limit)))
	}
	return 200, map[string]any{"total": total, "byTopic": countList("topic", byTopic), "byPlace": countList("place", byPlace), "datasets": out,
		"matching": len(match), "nextCursor": next}, nil
}

// countList is byTopic or byPlace: "byTopic and byPlace count the same
// datasets, by primary topic (null for none) and by the place each is
// filed under". A JSON object cannot key a count by null, so each is a
// list of {"<field>": id or null, "count": n}, the largest count first,
// then by id, none last among equals (docs/wire.md 7).
func countList(field string, counts map[string]int) []map[string]any {
	ids := slices.Collect(maps.Keys(counts))
	slices.SortFunc(ids, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		switch {
		case a == "":
			return 1
		case b == "":
			return -1
		}
		return strings.Compare(a, b)
	})
	out := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		out = append(out, map[string]any{field: nullIfEmpty(id), "count": counts[id]})
	}
	return out
}

// previewKeeps applies the preview's narrowing parameters to a dataset the
// subscription would deliver.
func (e *Emulator) previewKeeps(q url.Values, s *subscription, d *dataset) bool {
	get := q.Get
	if t := get("q"); t != "" && !strings.Contains(strings.ToLower(d.spec.Title), strings.ToLower(t)) {
		return false
	}
	if p := get("place"); p != "" && !e.placeMatches(p, d) {
		return false
	}
	if q.Has("topic") && !topicIs(d, get("topic")) {
		return false
	}
	if mb := get("matchedBy"); mb != "" && !slices.Contains(e.matchedBy(s, d), mb) {
		return false
	}
	return true
}

// matchedBy names the body's fields that select d: its places (within its
// topics) and its datasetIds.
func (e *Emulator) matchedBy(s *subscription, d *dataset) []string {
	out := []string{}
	byPlace := len(s.topics) == 0 || slices.Contains(s.topics, d.spec.Topic)
	if byPlace && slices.ContainsFunc(s.places, func(p string) bool { return e.placeMatches(p, d) }) {
		out = append(out, matchedByPlaces)
	}
	if slices.Contains(s.datasetIDs, d.spec.ID) {
		out = append(out, matchedByDatasets)
	}
	return out
}

// sortPreview orders a preview's datasets: by place id, by title, or by
// when their current version was released (newest first, datasets with no
// release last); the dataset list's order otherwise.
func (e *Emulator) sortPreview(match []*dataset, by string) {
	switch by {
	case "title":
		slices.SortStableFunc(match, func(a, b *dataset) int { return strings.Compare(a.spec.Title, b.spec.Title) })
	case "place":
		slices.SortStableFunc(match, func(a, b *dataset) int { return strings.Compare(e.filedPlace(a), e.filedPlace(b)) })
	case "updated":
		slices.SortStableFunc(match, func(a, b *dataset) int {
			ca, cb := a.current(), b.current()
			switch {
			case ca == nil && cb == nil:
				return 0
			case ca == nil:
				return 1
			case cb == nil:
				return -1
			}
			return cb.publishedAt.Compare(ca.publishedAt)
		})
	}
}

// pageOffset reads a paging cursor ("<prefix><offset>", base64): "" is 0.
func pageOffset(c, prefix string) (int, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), prefix))
	if err != nil || err2 != nil || !strings.HasPrefix(string(b), prefix) || n < 0 {
		return 0, errInvalid("bad cursor")
	}
	return n, nil
}

// filedPlace is the place id a dataset and its rows name: the county it is
// filed under or, when it is filed under none, the first county it covers
// (subscriptions-manifest-files.txt, "Places": "Its place.id and its rows'
// _ploti_place_id still name one county: the county the dataset is filed
// under or, when it is filed under none, the first county it covers").
// Empty when it names none.
func (e *Emulator) filedPlace(d *dataset) string {
	if d.spec.PlaceID != "" {
		return d.spec.PlaceID
	}
	for _, id := range d.spec.AlsoCovers {
		if p := e.placeByID(id); p != nil && p.Kind == "county" {
			return id
		}
	}
	return ""
}
