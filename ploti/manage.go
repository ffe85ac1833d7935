package ploti

// The management objects: places, topics, dataset lists, previews and
// subscription changes (docs/wire.md section 7; subscriptions-manifest-files.txt).

// PlaceInfo is one place of GET /v1/places: a county, a state, us, or a
// "<state>-counties" place. Use its id exactly as given.
type PlaceInfo struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	// State is the place's state; null for us.
	State *string `json:"state"`
	// DatasetCount counts the datasets it holds; DatasetCounts the same by
	// primary topic (datasets without a topic are left out of these).
	DatasetCount  int            `json:"datasetCount"`
	DatasetCounts map[string]int `json:"datasetCounts"`
}

// Topic is one entry of Ploti's fixed topic list (GET /v1/topics).
type Topic struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// DatasetPage is one page of GET /v1/feeds/datasets; NextCursor is nil on
// the last page.
type DatasetPage struct {
	Datasets   []Dataset `json:"datasets"`
	NextCursor *string   `json:"nextCursor"`
}

// SubscriptionSpec is what a subscription selects: the body of a create or
// a preview. Marshal it only through Body, which never sends null.
type SubscriptionSpec struct {
	Name       string   `json:"name,omitempty"`
	Places     []string `json:"places"`
	Topics     []string `json:"topics"`
	DatasetIDs []string `json:"datasetIds"`
}

// Body returns the spec with every list non-nil ("null is not accepted:
// send [] to clear a list").
func (s SubscriptionSpec) Body() SubscriptionSpec {
	s.Places, s.Topics, s.DatasetIDs = nonNil(s.Places), nonNil(s.Topics), nonNil(s.DatasetIDs)
	return s
}

// SubscriptionPatch is the body of PATCH /v1/feeds/subscriptions/{id}:
// fields left nil are kept; a list set replaces the subscription's.
type SubscriptionPatch struct {
	Name       *string   `json:"name,omitempty"`
	Places     *[]string `json:"places,omitempty"`
	Topics     *[]string `json:"topics,omitempty"`
	DatasetIDs *[]string `json:"datasetIds,omitempty"`
}

// Empty reports whether the patch changes nothing.
func (p SubscriptionPatch) Empty() bool {
	return p.Name == nil && p.Places == nil && p.Topics == nil && p.DatasetIDs == nil
}

// Body returns the patch with every list it sets non-nil, so that a list
// set to nothing is sent as [] and never as null.
func (p SubscriptionPatch) Body() SubscriptionPatch {
	for _, l := range []**[]string{&p.Places, &p.Topics, &p.DatasetIDs} {
		if *l != nil {
			v := nonNil(**l)
			*l = &v
		}
	}
	return p
}

// Preview is POST /v1/feeds/subscriptions/preview: what a subscription
// would deliver now. Total, ByTopic and ByPlace count every dataset
// (Counts: NoneKey for no topic or place); Datasets is one page of those
// left after the query's narrowing, Matching how many those are.
type Preview struct {
	Total      int              `json:"total"`
	ByTopic    Counts           `json:"byTopic"`
	ByPlace    Counts           `json:"byPlace"`
	Datasets   []PreviewDataset `json:"datasets"`
	Matching   int              `json:"matching"`
	NextCursor *string          `json:"nextCursor"`
}

// PreviewDataset is a dataset of a preview, with the body's fields that
// select it ("places", "datasetIds").
type PreviewDataset struct {
	Dataset
	MatchedBy []string `json:"matchedBy"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
