package emulator

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Place is where a dataset applies: a county, a state or the whole us.
type Place struct {
	// ID is the place id, used exactly as given (e.g. "fl-orange").
	ID string
	// Name is the display name (e.g. "Orange County, FL").
	Name string
	// Kind is "county", "state" or "us".
	Kind string
	// State is the lower-case state code of a county or state ("fl"); empty
	// for us.
	State string
}

// Topic is one entry of Ploti's fixed topic list.
type Topic struct {
	// ID is the topic id, such as "development-activity".
	ID string `json:"id"`
	// Name is its display name.
	Name string `json:"name"`
}

// Column is one column of a dataset's schema.
type Column struct {
	// Name is the column name.
	Name string
	// Type is one of string, integer, number, decimal, boolean, date,
	// timestamp, geometry, list, json.
	Type string
	// Items is the element type of a list column (its Name is ignored).
	Items *Column
	// Precision is a decimal column's precision and scale.
	Precision *Precision
	// Geometry describes a geometry column; nil means EPSG:4326, any type.
	Geometry *GeometryInfo
}

// Precision is a decimal column's precision and scale.
type Precision struct {
	Precision int `json:"precision"`
	Scale     int `json:"scale"`
}

// GeometryInfo describes a geometry column.
type GeometryInfo struct {
	// CRS is the coordinate reference system; empty means "EPSG:4326".
	CRS string `json:"crs"`
	// Types lists the geometry types, such as ["Point"].
	Types []string `json:"types"`
}

// Attachment is a file Ploti holds for a dataset, such as a data dictionary.
type Attachment struct {
	// Name is the file name.
	Name string
	// ContentType is its media type.
	ContentType string
	// Data is its content.
	Data []byte
}

// DatasetSpec describes a dataset for AddDataset.
type DatasetSpec struct {
	// ID is the dataset id (e.g. "ds_fl_orange_permits").
	ID string
	// Title is the display title.
	Title string
	// Description may be empty (served as null).
	Description string
	// PlaceID is the place the dataset is filed under; empty for none.
	PlaceID string
	// AlsoCovers lists further places the dataset covers: it is listed under
	// them and joins subscriptions that name them.
	AlsoCovers []string
	// Topic is the dataset's primary topic; empty for none.
	Topic string
	// Publisher and SourceURL describe the source; empty means null.
	Publisher, SourceURL string
	// KeyColumns identify a record; empty for an unkeyed dataset.
	KeyColumns []string
	// Columns is the schema of the first version.
	Columns []Column
	// Attachments are served with every version.
	Attachments []Attachment
	// Kind is "table" (empty means table) or "document", as GET
	// /v1/datasets/{id} shows it; nothing else depends on it.
	Kind string
	// ProvenanceURL says where the values come from (dataset.changed's
	// provenanceUrl); empty means SourceURL, or a ploti.ai address when
	// that is empty too.
	ProvenanceURL string
}

// SubscriptionSpec describes a subscription for CreateSubscription.
type SubscriptionSpec struct {
	// Name is the subscription's display name.
	Name string
	// Places, Topics and DatasetIDs select the datasets it delivers.
	Places, Topics, DatasetIDs []string
}

type dataset struct {
	spec         DatasetSpec
	tag          string // short tag for table, file and record id names ("d1")
	idCounter    int64
	lastNum      int
	versions     []*version // every built version, in order
	released     *version   // the last released version
	held         *version   // the version waiting on staff, if any
	schemaNums   map[string]string
	schemas      []*schemaDoc // schemas of released versions, oldest first, distinct
	forceResync  bool         // after ReRelease: the next version sent is a resync
	matchVersion *version     // after ReRelease: the version new rows are matched to
	status       string       // explicit status while no version is released
	deliverable  bool
	planClosed   bool
	checkedAt    time.Time
	nextCheckBy  time.Time
	staleSent    time.Time // nextCheckBy for which stale was sent
	rebuilding   bool
	attachments  []fileRef
	attachSet    int // SetAttachments calls: each set of files has a folder of its own
	// plotiVersions are the watch side's promoted versions, oldest first
	// (watch.go).
	plotiVersions []*plotiVersion
	// feedFirst is the first version Data Feeds sent, nil until a
	// subscription includes the dataset: "A dataset's files are built
	// only once a subscription includes it" (feedfirst.go).
	feedFirst *version
}

type subscription struct {
	id         string
	name       string
	places     []string
	topics     []string
	datasetIDs []string
	revision   int
	createdAt  time.Time
	updatedAt  time.Time
	events     []*event
	pruned     int64 // events pruned from the front: the first kept has seq pruned+1
	members    map[string]*member
	busy       bool
}

type member struct {
	delayedFor map[int]bool
}

// AddPlace adds a place to the workspace's coverage list. A "<state>-counties"
// place is implied for every state that has counties.
func (e *Emulator) AddPlace(p Place) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, q := range e.places {
		if q.ID == p.ID {
			e.places[i] = &p
			return
		}
	}
	e.places = append(e.places, &p)
	e.recomputeAllLocked()
}

// AddTopic adds a topic to the fixed list GET /v1/topics returns.
func (e *Emulator) AddTopic(id, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.topics = append(e.topics, Topic{ID: id, Name: name})
}

// AddDataset adds a dataset with no version yet. Subscriptions whose places,
// topics or dataset ids match it get feed.dataset.added with version null.
func (e *Emulator) AddDataset(spec DatasetSpec) error {
	if spec.ID == "" {
		return fmt.Errorf("add dataset: %w: empty id", ErrInvalid)
	}
	if err := validateSchema(spec.Columns, spec.KeyColumns); err != nil {
		return fmt.Errorf("add dataset %s: %w", spec.ID, err)
	}
	if spec.Kind != "" && spec.Kind != "table" && spec.Kind != "document" {
		return fmt.Errorf("add dataset %s: %w: kind %q is not table or document", spec.ID, ErrInvalid, spec.Kind)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.datasets[spec.ID]; ok {
		return fmt.Errorf("add dataset %s: %w: already exists", spec.ID, ErrInvalid)
	}
	spec.Columns = cloneColumns(spec.Columns)
	spec.KeyColumns = slices.Clone(spec.KeyColumns)
	d := &dataset{
		spec:        spec,
		tag:         fmt.Sprintf("d%d", len(e.dsOrder)+1),
		schemaNums:  map[string]string{},
		deliverable: true,
	}
	if err := e.writeAttachments(d, spec.Attachments); err != nil {
		return fmt.Errorf("add dataset %s: %w", spec.ID, err)
	}
	e.datasets[spec.ID] = d
	e.dsOrder = append(e.dsOrder, spec.ID)
	e.recomputeAllLocked()
	return nil
}

// CreateSubscription creates a subscription ("sub_1", "sub_2", ...) and sends
// feed.dataset.added for every dataset it delivers.
func (e *Emulator) CreateSubscription(spec SubscriptionSpec) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, err := e.createSubLocked(spec)
	if err != nil {
		return "", err
	}
	return s.id, nil
}

func (e *Emulator) createSubLocked(spec SubscriptionSpec) (*subscription, error) {
	if len(spec.Places) == 0 && len(spec.DatasetIDs) == 0 {
		return nil, fmt.Errorf("create subscription: %w: names no place and no dataset", ErrInvalid)
	}
	if len(e.subs) >= MaxSubscriptions {
		return nil, fmt.Errorf("create subscription: %w: a workspace may have at most %d subscriptions", ErrInvalid, MaxSubscriptions)
	}
	e.nextSub++
	now := e.nowLocked()
	s := &subscription{
		id:         fmt.Sprintf("sub_%d", e.nextSub),
		name:       spec.Name,
		places:     nonNil(spec.Places),
		topics:     nonNil(spec.Topics),
		datasetIDs: nonNil(spec.DatasetIDs),
		revision:   1,
		createdAt:  now,
		updatedAt:  now,
		members:    map[string]*member{},
	}
	e.subs[s.id] = s
	e.subOrder = append(e.subOrder, s.id)
	e.recomputeLocked(s)
	return s, nil
}

// DeleteSubscription deletes a subscription: its events and its webhooks
// stop (they stay listed, turned off), and versions of datasets only it
// delivered answer 409 not_subscribed.
func (e *Emulator) DeleteSubscription(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.subs[id]; !ok {
		return fmt.Errorf("delete subscription %s: %w", id, ErrNotFound)
	}
	e.deleteSubLocked(id)
	return nil
}

// deleteSubLocked deletes a subscription and stops its webhooks at once
// (subscriptions-manifest-files.txt: "Deleting a subscription stops its
// events and its webhooks").
func (e *Emulator) deleteSubLocked(id string) {
	delete(e.subs, id)
	e.subOrder = slices.DeleteFunc(e.subOrder, func(s string) bool { return s == id })
	e.stopSubscriptionWebhooksLocked(id)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

func (e *Emulator) placeByID(id string) *Place {
	for _, p := range e.places {
		if p.ID == id {
			return p
		}
	}
	if id == usPlace.ID {
		us := usPlace
		return &us
	}
	return nil
}

// usPlace is the whole country, a place every workspace with coverage has
// ("GET /v1/places lists the places in your workspace's coverage: its
// counties, their states, each state's counties and us"; "a national one
// with any coverage"), so the emulator has it without being seeded with it.
var usPlace = Place{ID: "us", Name: "United States", Kind: "us"}

// datasetPlaces are the places a dataset is listed under: its own and the
// ones it also covers.
func (d *dataset) datasetPlaces() []string {
	var out []string
	if d.spec.PlaceID != "" {
		out = append(out, d.spec.PlaceID)
	}
	return append(out, d.spec.AlsoCovers...)
}

// placeMatches tells whether a subscription's place names the dataset.
func (e *Emulator) placeMatches(subPlace string, d *dataset) bool {
	for _, id := range d.datasetPlaces() {
		if id == subPlace {
			return true
		}
		if st, ok := strings.CutSuffix(subPlace, "-counties"); ok {
			if p := e.placeByID(id); p != nil && p.Kind == "county" && strings.EqualFold(p.State, st) {
				return true
			}
		}
	}
	return false
}

// matches tells whether the subscription's places, topics and dataset ids
// select the dataset.
func (e *Emulator) matches(s *subscription, d *dataset) bool {
	if slices.Contains(s.datasetIDs, d.spec.ID) {
		return true
	}
	if len(s.topics) > 0 && !slices.Contains(s.topics, d.spec.Topic) {
		return false
	}
	for _, p := range s.places {
		if e.placeMatches(p, d) {
			return true
		}
	}
	return false
}

// leaveReason is why a subscription does not deliver a dataset, or "" when it
// does.
func (e *Emulator) leaveReason(s *subscription, d *dataset) string {
	switch {
	case !e.matches(s, d):
		return "subscription_changed"
	case !d.deliverable:
		return "no_longer_deliverable"
	case !e.inCoverage(d):
		return "left_coverage"
	case d.planClosed:
		return "plan_changed"
	}
	return ""
}

// recomputeAllLocked brings every subscription's datasets up to date.
func (e *Emulator) recomputeAllLocked() {
	for _, id := range e.subOrder {
		e.recomputeLocked(e.subs[id])
	}
}

// recomputeLocked adds and removes datasets of one subscription, sending
// feed.dataset.added and feed.dataset.removed.
func (e *Emulator) recomputeLocked(s *subscription) {
	for _, id := range e.dsOrder {
		d := e.datasets[id]
		reason := e.leaveReason(s, d)
		_, have := s.members[id]
		switch {
		case reason == "" && !have:
			s.members[id] = &member{delayedFor: map[int]bool{}}
			build := e.buildForFeedsLocked(d)
			var v *int
			if cur := d.current(); cur != nil && !build {
				v = &cur.num
			}
			e.appendEvent(s, "feed.dataset.added", d, map[string]any{"version": v})
			if build {
				e.sendFirstVersion(s, d)
			}
			if d.held != nil {
				e.sendDelayed(s, d)
			}
		case reason != "" && have:
			if (reason == "plan_changed" || reason == "left_coverage") && e.planDown {
				continue // docs: "When Ploti cannot read your workspace's plan at that moment, it removes nothing"
			}
			delete(s.members, id)
			e.appendEvent(s, "feed.dataset.removed", d, map[string]any{"reason": reason})
		}
	}
}

// delivered tells whether any subscription delivers the dataset.
func (e *Emulator) deliveredLocked(d *dataset) bool {
	for _, id := range e.subOrder {
		if _, ok := e.subs[id].members[d.spec.ID]; ok {
			return true
		}
	}
	return false
}

// safeName keeps a file name to characters that need no escaping in a URL.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
