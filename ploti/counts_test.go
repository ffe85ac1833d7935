package ploti

import (
	"encoding/json"
	"maps"
	"testing"
)

// subscriptions-manifest-files.txt: "byTopic and byPlace count the same
// datasets, by primary topic (null for none) and by the place each is
// filed under". The docs give no JSON shape, so every shape that can
// carry a null topic reads, and another shape never fails the preview.
func TestCounts_byTopicNullForNone(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Counts
	}{
		{"list of objects, null for none", `[{"topic": "zoning", "count": 2}, {"topic": null, "count": 1}]`,
			Counts{"zoning": 2, NoneKey: 1}},
		{"list of objects, other field names", `[{"place": "fl-orange", "datasetCount": 3}, {"id": "fl", "n": 1}]`,
			Counts{"fl-orange": 3, "fl": 1}},
		{"list of pairs", `[["zoning", 2], [null, 4]]`, Counts{"zoning": 2, NoneKey: 4}},
		{"map, none as a word", `{"zoning": 2, "none": 1}`, Counts{"zoning": 2, NoneKey: 1}},
		{"map, null as a word", `{"zoning": 2, "null": 5}`, Counts{"zoning": 2, NoneKey: 5}},
		{"an entry of another shape is left out", `[{"topic": "zoning", "count": 2}, "odd", {"topic": "x"}]`,
			Counts{"zoning": 2}},
		{"another shape altogether", `"seven"`, Counts{}},
		{"null", `null`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pv Preview
			if err := json.Unmarshal([]byte(`{"total": 3, "byTopic": `+tc.in+`, "matching": 3}`), &pv); err != nil {
				t.Fatalf("the preview failed over byTopic %s: %v", tc.in, err)
			}
			if !maps.Equal(pv.ByTopic, tc.want) || (pv.ByTopic == nil) != (tc.want == nil) || pv.Total != 3 || pv.Matching != 3 {
				t.Fatalf("byTopic %s read as %#v (total %d), want %#v", tc.in, pv.ByTopic, pv.Total, tc.want)
			}
		})
	}
}
