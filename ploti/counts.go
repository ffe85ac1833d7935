package ploti

import (
	"bytes"
	"encoding/json"
	"strings"
)

// NoneKey is the Counts key of the datasets with no topic (or filed under
// no place).
const NoneKey = ""

// Counts is a preview's byTopic or byPlace: how many datasets each topic
// or place has, NoneKey for none. subscriptions-manifest-files.txt says
// only "byTopic and byPlace count the same datasets, by primary topic (null
// for none) and by the place each is filed under", not the JSON shape, and
// a JSON object cannot key by null; so Counts reads every shape that can
// carry it and never fails the preview over it:
//
//   - a list of objects, each with the id under "topic", "place", "id" or
//     "key" (a string, or null for none) and the count under "count",
//     "datasetCount" or "n" (the emulator's shape: {"topic": null, "count": 2});
//   - a list of [id, count] pairs;
//   - an object of counts by id, where "null" and "none" stand for none.
//
// Entries of any other shape are left out, and a value of another shape
// altogether (a number, a string) reads as no counts.
type Counts map[string]int

// UnmarshalJSON reads any shape Counts describes; it never fails.
func (c *Counts) UnmarshalJSON(b []byte) error {
	out := Counts{}
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = nil
		return nil
	case len(b) > 0 && b[0] == '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) == nil {
			for k, v := range m {
				if n, ok := countOf(v); ok {
					out[countKey(&k)] += n
				}
			}
		}
	case len(b) > 0 && b[0] == '[':
		var list []json.RawMessage
		if json.Unmarshal(b, &list) == nil {
			for _, e := range list {
				if k, n, ok := countEntry(e); ok {
					out[k] += n
				}
			}
		}
	}
	*c = out
	return nil
}

// countEntry reads one entry of a list: an object or an [id, count] pair.
func countEntry(e json.RawMessage) (string, int, bool) {
	var pair []json.RawMessage
	if json.Unmarshal(e, &pair) == nil && len(pair) == 2 {
		id, ok := idOf(pair[0])
		n, okN := countOf(pair[1])
		return id, n, ok && okN
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(e, &obj) != nil {
		return "", 0, false
	}
	id, n, okID, okN := "", 0, false, false
	for _, f := range []string{"topic", "place", "id", "key"} {
		if v, has := obj[f]; has && !okID {
			id, okID = idOf(v)
		}
	}
	for _, f := range []string{"count", "datasetCount", "n"} {
		if v, has := obj[f]; has && !okN {
			n, okN = countOf(v)
		}
	}
	return id, n, okID && okN
}

// idOf reads an id: a string, or null for none.
func idOf(v json.RawMessage) (string, bool) {
	var s *string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return countKey(s), true
}

// countKey is the Counts key of an id: NoneKey for null, "", "null" and
// "none" (the word the preview's topic filter takes for no topic).
func countKey(s *string) string {
	if s == nil {
		return NoneKey
	}
	switch k := strings.TrimSpace(*s); k {
	case "", "null", "none":
		return NoneKey
	default:
		return k
	}
}

// countOf reads a count: a whole number of zero or more.
func countOf(v json.RawMessage) (int, bool) {
	var n int
	if json.Unmarshal(v, &n) != nil || n < 0 {
		return 0, false
	}
	return n, true
}
