package ploti

import (
	"encoding/json"
	"fmt"
	"time"
)

// File is one signed file link. Bytes and SHA256 may be absent; when
// present the client verifies them.
type File struct {
	URL    string `json:"url"`
	Bytes  *int64 `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Attachment is a file Ploti stored with a version, in its own format.
type Attachment struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	URL         string `json:"url"`
	Bytes       *int64 `json:"bytes,omitempty"`
	SHA256      string `json:"sha256,omitempty"`
}

// Files are a version's signed files.
type Files struct {
	Snapshot    FileList     `json:"snapshot"`
	Changes     FileList     `json:"changes"`
	IDMap       *File        `json:"idMap"`
	Schema      *File        `json:"schema"`
	Attachments []Attachment `json:"attachments"`
}

// Version is GET /v1/feeds/datasets/{dataset}/versions/{version}.
type Version struct {
	DatasetID       string     `json:"datasetId"`
	Version         int        `json:"version"`
	PreviousVersion *int       `json:"previousVersion"`
	SchemaVersion   string     `json:"schemaVersion"`
	PublishedAt     time.Time  `json:"publishedAt"`
	RowCount        *int64     `json:"rowCount"`
	ResyncRequired  bool       `json:"resyncRequired"`
	ResyncReason    *string    `json:"resyncReason"`
	Files           Files      `json:"files"`
	LinksExpireAt   *time.Time `json:"linksExpireAt"`
}

// Place is where a dataset applies.
type Place struct {
	ID    *string `json:"id"`
	Name  *string `json:"name"`
	Kind  string  `json:"kind"`
	State *string `json:"state,omitempty"`
}

// Current is a dataset's newest released version.
type Current struct {
	Version       int       `json:"version"`
	PublishedAt   time.Time `json:"publishedAt"`
	SchemaVersion string    `json:"schemaVersion"`
}

// Refresh tells when Ploti last checked the source and the next check.
type Refresh struct {
	LastCheckedAt *time.Time `json:"lastCheckedAt"`
	NextCheckBy   *time.Time `json:"nextCheckBy"`
}

// Source is where a dataset's records come from; either field may be null.
type Source struct {
	Publisher *string `json:"publisher"`
	URL       *string `json:"url"`
}

// Dataset is GET /v1/feeds/datasets/{dataset}.
type Dataset struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description *string  `json:"description"`
	DataAtlasID string   `json:"dataAtlasId,omitempty"`
	Place       *Place   `json:"place"`
	Topic       *string  `json:"topic"`
	Source      *Source  `json:"source"`
	Keyed       bool     `json:"keyed"`
	KeyColumns  []string `json:"keyColumns"`
	Current     *Current `json:"current"`
	Status      string   `json:"status"`
	Refresh     *Refresh `json:"refresh"`
}

// ManifestDataset is one dataset listed in a manifest.
type ManifestDataset struct {
	DatasetID     string     `json:"datasetId"`
	Version       int        `json:"version"`
	SchemaVersion string     `json:"schemaVersion"`
	Keyed         bool       `json:"keyed"`
	KeyColumns    []string   `json:"keyColumns"`
	RowCount      *int64     `json:"rowCount"`
	Files         Files      `json:"files"`
	LinksExpireAt *time.Time `json:"linksExpireAt"`
	// DecodeErr is set when the entry's datasetId could be read but
	// another field could not: the entry is then its dataset's bad input,
	// not the whole manifest's (as an event's DecodeErr is its dataset's).
	DecodeErr error `json:"-"`
}

// UnmarshalJSON decodes a manifest entry; one whose fields past datasetId
// do not decode is kept with DecodeErr set (and its version, when that
// reads), so that one odd entry fails its dataset, not the bootstrap.
func (m *ManifestDataset) UnmarshalJSON(b []byte) error {
	type plain ManifestDataset
	var p plain
	err := json.Unmarshal(b, &p)
	if err == nil {
		*m = ManifestDataset(p)
		return nil
	}
	var min struct {
		DatasetID string          `json:"datasetId"`
		Version   json.RawMessage `json:"version"`
	}
	if json.Unmarshal(b, &min) != nil || min.DatasetID == "" {
		return err
	}
	*m = ManifestDataset{DatasetID: min.DatasetID, DecodeErr: fmt.Errorf("decode manifest entry of %s: %w", min.DatasetID, err)}
	json.Unmarshal(min.Version, &m.Version) // best effort: the version names the failure
	return nil
}

// Unavailable is a dataset a manifest cannot list yet: "rebuilding" (with
// a version) or its status (building, held, failed, awaiting_release).
type Unavailable struct {
	DatasetID string `json:"datasetId"`
	Version   *int   `json:"version"`
	Reason    string `json:"reason"`
}

// Manifest is GET /v1/feeds/subscriptions/{id}/manifest.
type Manifest struct {
	SubscriptionID string            `json:"subscriptionId"`
	EventCursor    string            `json:"eventCursor"`
	GeneratedAt    time.Time         `json:"generatedAt"`
	Datasets       []ManifestDataset `json:"datasets"`
	Unavailable    []Unavailable     `json:"unavailable"`
}

// Subscription is a Data Feeds subscription.
type Subscription struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Places     []string  `json:"places"`
	Topics     []string  `json:"topics"`
	DatasetIDs []string  `json:"datasetIds"`
	Revision   int       `json:"revision"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// UnmarshalJSON decodes a version's files, taking a one-item list where a
// single file object (idMap, schema) is shown, as FileList takes an object
// where a list is shown.
func (f *Files) UnmarshalJSON(b []byte) error {
	type plain Files
	var p struct {
		plain
		IDMap  FileList `json:"idMap"`
		Schema FileList `json:"schema"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = Files(p.plain)
	f.IDMap, f.Schema = nil, nil
	if len(p.IDMap) > 0 {
		f.IDMap = &p.IDMap[0]
	}
	if len(p.Schema) > 0 {
		f.Schema = &p.Schema[0]
	}
	return nil
}

// FileList is one or more file parts. It also accepts a single file object
// where the contract shows a list (a tolerant reader: docs/wire.md asks
// clients to accept what a server may reasonably send).
type FileList []File

// UnmarshalJSON accepts a list of files, one file object, or null.
func (l *FileList) UnmarshalJSON(b []byte) error {
	var list []File
	if err := json.Unmarshal(b, &list); err == nil {
		*l = list
		return nil
	}
	var one File
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*l = FileList{one}
	return nil
}

// WebhookHeader is a header Ploti sends with every POST to a webhook; its
// value is never shown again after create.
type WebhookHeader struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// Webhook is a webhook for a subscription's events (docs/wire.md section 6).
// Secret is set only in the answer to create.
type Webhook struct {
	ID             string         `json:"id"`
	URL            string         `json:"url"`
	Description    string         `json:"description,omitempty"`
	SubscriptionID string         `json:"subscriptionId,omitempty"`
	Events         []string       `json:"events,omitempty"`
	Header         *WebhookHeader `json:"header,omitempty"`
	Enabled        *bool          `json:"enabled,omitempty"`
	Secret         string         `json:"secret,omitempty"`
	CreatedAt      *time.Time     `json:"createdAt,omitempty"`
	// DisabledReason says why a webhook is off (Enabled false): its
	// receiver answered 410, or its subscription was deleted.
	DisabledReason string `json:"disabledReason,omitempty"`
}
