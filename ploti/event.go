package ploti

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Feed event types (feed-events.txt, "Event types").
const (
	EventAdded          = "feed.dataset.added"
	EventUpdated        = "feed.dataset.updated"
	EventResyncRequired = "feed.dataset.resync_required"
	EventSchemaChanged  = "feed.dataset.schema_changed"
	EventRemoved        = "feed.dataset.removed"
	EventStale          = "feed.dataset.stale"
	EventDelayed        = "feed.dataset.delayed"
	EventPing           = "ping"
)

// Resync reasons, in the docs' order of precedence ("When several apply,
// the first of these wins").
const (
	ReasonRecordIDsChanged    = "record_ids_changed"
	ReasonFirstVersion        = "first_version"
	ReasonPreviousUnavailable = "previous_unavailable"
	ReasonKeyColumnsChanged   = "key_columns_changed"
	ReasonSchemaChanged       = "schema_changed"
)

// Removal reasons.
const (
	RemovedLeftCoverage        = "left_coverage"
	RemovedPlanChanged         = "plan_changed"
	RemovedSubscriptionChanged = "subscription_changed"
	RemovedNoLongerDeliverable = "no_longer_deliverable"
)

// Delay reasons.
const (
	DelaySchemaReview = "schema_review"
	DelayDataCheck    = "data_check"
	DelayProcessing   = "processing"
)

// Links are the absolute API URLs an event carries.
type Links struct {
	Version string `json:"version,omitempty"`
	Dataset string `json:"dataset,omitempty"`
}

// EventData is the union of the data fields of every feed event type
// (docs/wire.md section 3). Fields a type does not carry stay zero.
type EventData struct {
	DatasetID       string        `json:"datasetId"`
	Version         *int          `json:"version"`
	PreviousVersion *int          `json:"previousVersion"`
	SchemaVersion   string        `json:"schemaVersion,omitempty"`
	Reason          string        `json:"reason,omitempty"`
	SchemaChange    *SchemaChange `json:"schemaChange,omitempty"`
	LastCheckedAt   *time.Time    `json:"lastCheckedAt,omitempty"`
	NextCheckBy     *time.Time    `json:"nextCheckBy,omitempty"`
	Since           *time.Time    `json:"since,omitempty"`
	Links           *Links        `json:"links,omitempty"`
}

// Event is one feed event, from the log or a webhook body.
type Event struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	Timestamp      time.Time       `json:"timestamp"`
	SubscriptionID string          `json:"subscriptionId,omitempty"`
	Data           EventData       `json:"-"`
	RawData        json.RawMessage `json:"data"`
	// Links at the top level are accepted too (docs/wire.md section 3).
	Links *Links `json:"links,omitempty"`
	// DecodeErr is set when the event's id, type and datasetId could be
	// read but another field could not: the event is then its dataset's
	// bad input, not the whole page's (Validate returns it).
	DecodeErr error `json:"-"`
}

// UnmarshalJSON decodes an event and, for feed events, its data. An event
// whose fields past id, type and data.datasetId do not decode is kept with
// DecodeErr set, so that one odd event fails its dataset, not the page.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		var min struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				DatasetID string `json:"datasetId"`
			} `json:"data"`
		}
		if json.Unmarshal(b, &min) != nil || min.ID == "" {
			return err
		}
		*e = Event{ID: min.ID, Type: min.Type, DecodeErr: fmt.Errorf("decode event %s (%s): %w", min.ID, min.Type, err)}
		e.Data.DatasetID = min.Data.DatasetID
		return nil
	}
	*e = Event(p)
	if e.IsFeed() && len(e.RawData) > 0 && string(e.RawData) != "null" {
		if err := json.Unmarshal(e.RawData, &e.Data); err != nil {
			var min struct {
				DatasetID string `json:"datasetId"`
			}
			json.Unmarshal(e.RawData, &min)
			e.Data = EventData{DatasetID: min.DatasetID}
			e.DecodeErr = fmt.Errorf("decode data of event %s (%s): %w", e.ID, e.Type, err)
		}
	}
	if e.Data.Links == nil && e.Links != nil {
		e.Data.Links = e.Links
	}
	return nil
}

// MarshalJSON writes the event with its decoded data.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	p := plain(e)
	if e.IsFeed() {
		b, err := json.Marshal(e.Data)
		if err != nil {
			return nil, err
		}
		p.RawData = b
	}
	return json.Marshal(p)
}

// IsFeed reports whether the event is a feed event (the feed. prefix);
// pings and other webhook events are never applied.
func (e *Event) IsFeed() bool { return strings.HasPrefix(e.Type, "feed.") }

// Validate checks what every feed event must carry.
func (e *Event) Validate() error {
	if e.DecodeErr != nil {
		return e.DecodeErr
	}
	if e.ID == "" {
		return fmt.Errorf("event without id (type %q)", e.Type)
	}
	if e.IsFeed() && e.Data.DatasetID == "" {
		return fmt.Errorf("event %s (%s) has no data.datasetId", e.ID, e.Type)
	}
	switch e.Type {
	case EventUpdated, EventResyncRequired, EventSchemaChanged:
		if e.Data.Version == nil {
			return fmt.Errorf("event %s (%s) for %s has no data.version", e.ID, e.Type, e.Data.DatasetID)
		}
	}
	return nil
}

// EventPage is one page of the event log.
type EventPage struct {
	Events     []Event `json:"events"`
	NextCursor string  `json:"nextCursor"`
}

// Int returns a pointer to v, for building events in tests and code.
func Int(v int) *int { return &v }
