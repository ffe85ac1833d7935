package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ploti-replica/ploti-replica/fetch"
	"github.com/ploti-replica/ploti-replica/ploti"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// DatasetStatus is one dataset's state in Status.
type DatasetStatus struct {
	DatasetID     string     `json:"datasetId"`
	Table         string     `json:"table"`
	Title         string     `json:"title,omitempty"`
	Source        string     `json:"source"` // feed (Data Feeds version numbers) or watch (Ploti's own)
	PlaceID       string     `json:"placeId,omitempty"`
	Topic         string     `json:"topic,omitempty"`
	Version       int        `json:"version,omitempty"`
	SchemaVersion string     `json:"schemaVersion,omitempty"`
	KeyColumns    []string   `json:"keyColumns,omitempty"`
	Rows          int64      `json:"rows"`
	Status        string     `json:"status"`
	Reason        string     `json:"reason,omitempty"` // a code (the docs' own where they give one), or a failed dataset's error
	Detail        string     `json:"detail,omitempty"` // the reason in words, with what to do`
	Stale         bool       `json:"stale,omitempty"`
	NextCheckBy   *time.Time `json:"nextCheckBy,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	Holds         []Hold     `json:"holds,omitempty"`
	// AttachmentsError is why the attachments of the version held are
	// not all kept (the table is not affected; the next sync tries again).
	AttachmentsError string `json:"attachmentsError,omitempty"`
}

// Hold is a held version: a server delay or a local review hold.
type Hold struct {
	DatasetID string          `json:"datasetId"`
	Version   int             `json:"version,omitempty"`
	Kind      string          `json:"kind"`
	Reason    string          `json:"reason"`
	Since     *time.Time      `json:"since,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"`
}

// Status is the state of the file.
type Status struct {
	SubscriptionID string          `json:"subscriptionId,omitempty"`
	APIURL         string          `json:"apiUrl,omitempty"`
	Cursor         string          `json:"cursor,omitempty"`
	LastSyncAt     *time.Time      `json:"lastSyncAt,omitempty"`
	LastRun        *Run            `json:"lastRun,omitempty"`
	Datasets       []DatasetStatus `json:"datasets"`
	// Behind is the number of events after the cursor, when counted
	// (Replica.Behind); nil otherwise.
	Behind *int `json:"behind,omitempty"`
	// StorageVersion is the file's DuckDB storage version number, and
	// Readers says which DuckDB clients read it.
	StorageVersion uint64 `json:"storageVersion"`
	Readers        string `json:"readableBy"`
	// Geometry is how the tables store geometry columns:
	// GeometryNative, GeometryWKB, or GeometryPostGIS for a database.
	Geometry string `json:"geometry"`
}

// Status reads the file's state; it calls no API.
func (r *Replica) Status(ctx context.Context) (*Status, error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	return readStatus(ctx, r.db)
}

// readStatus reads the state of an open storage file.
func readStatus(ctx context.Context, db *storage.DB) (*Status, error) {
	st := &Status{Datasets: []DatasetStatus{}, Geometry: db.Geometry()}
	if f, ok := db.Engine().(storage.File); ok {
		st.StorageVersion = f.StorageVersion()
		st.Readers = backends.StorageReaders(st.StorageVersion)
	}
	sub, err := db.Subscription(ctx)
	if err != nil {
		return nil, err
	}
	if sub != nil {
		st.SubscriptionID, st.APIURL, st.Cursor, st.LastSyncAt = sub.ID, sub.APIURL, sub.Cursor, sub.LastSyncAt
	} else if st.LastSyncAt, err = db.LastSuccess(ctx); err != nil {
		// A file of watches only: its runs say when it last synced.
		return nil, err
	}
	if st.LastRun, err = db.LastRun(ctx); err != nil {
		return nil, err
	}
	ds, err := db.DatasetStates(ctx)
	if err != nil {
		return nil, err
	}
	holds, err := db.Holds(ctx, "")
	if err != nil {
		return nil, err
	}
	byDS := map[string][]Hold{}
	for _, h := range holds {
		byDS[h.DatasetID] = append(byDS[h.DatasetID], Hold(h))
	}
	attSyncs, err := db.AttachmentSyncs(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		st.Datasets = append(st.Datasets, DatasetStatus{DatasetID: d.ID, Table: d.Table, Title: d.Title, Source: d.Source, PlaceID: d.PlaceID,
			Topic: d.Topic, Version: d.Version, SchemaVersion: d.SchemaVersion, KeyColumns: d.KeyColumns, Rows: d.RowCount,
			Status: d.Status, Reason: d.StatusReason, Stale: d.Status != storage.StatusRemoved && (d.StaleNextCheckBy != nil || d.StaleLastCheckedAt != nil),
			NextCheckBy: d.StaleNextCheckBy, LastError: d.LastError, UpdatedAt: d.UpdatedAt, Holds: byDS[d.ID]})
		if a := attSyncs[d.ID]; a.Error != "" && a.Version == d.Version {
			st.Datasets[len(st.Datasets)-1].AttachmentsError = a.Error
		}
		st.Datasets[len(st.Datasets)-1].Detail = explain(st.Datasets[len(st.Datasets)-1])
	}
	return st, nil
}

// Behind counts the events after the stored cursor (up to limit), reading
// the log without applying anything.
func (r *Replica) Behind(ctx context.Context, limit int) (int, error) {
	if err := r.live(); err != nil {
		return -1, err
	}
	sub, err := r.db.Subscription(ctx)
	if err != nil || sub == nil || sub.Cursor == "" {
		return -1, err
	}
	n, cursor := 0, sub.Cursor
	for n < limit {
		page, err := r.api.Events(ctx, sub.ID, cursor, 500, nil)
		switch {
		case errors.Is(err, fetch.ErrInvalidInput) && cursor == sub.Cursor:
			// Worded as Sync words it: the same log, read the same way.
			return -1, fmt.Errorf("count events behind: read events of %s after cursor %q: %w: %w",
				sub.ID, cursor, ErrForeignCursor, withoutCall(err))
		case err != nil:
			return -1, fmt.Errorf("count events behind: %w", subscriptionGone(sub.ID, err))
		}
		if len(page.Events) == 0 {
			break
		}
		n += len(page.Events)
		cursor = page.NextCursor
	}
	return n, nil
}

// Holds lists the file's holds.
func (r *Replica) Holds(ctx context.Context) ([]Hold, error) {
	if err := r.live(); err != nil {
		return nil, err
	}
	return readHolds(ctx, r.db)
}

// readHolds lists the holds of an open storage file.
func readHolds(ctx context.Context, db *storage.DB) ([]Hold, error) {
	hs, err := db.Holds(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]Hold, len(hs))
	for i, h := range hs {
		out[i] = Hold(h)
		out[i].Detail = withoutNulls(h.Detail)
	}
	return out, nil
}

// withoutNulls is a JSON document with its null members left out, as the
// JSON this package gives leaves out what Ploti left null; a document
// that does not decode is given as it is.
func withoutNulls(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as they are written
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	out, err := json.Marshal(dropNulls(v))
	if err != nil {
		return raw
	}
	return out
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
			} else {
				t[k] = dropNulls(x)
			}
		}
	case []any:
		for i, x := range t {
			t[i] = dropNulls(x)
		}
	}
	return v
}

// Release ends a local review hold: the dataset is reloaded from its
// current version's snapshot and its hold removed in the same transaction.
// A dataset the file does not know is ErrNoDataset; one it holds
// with no local hold (only Ploti's, or none) is ErrNotHeld.
func (r *Replica) Release(ctx context.Context, datasetID string) error {
	done, err := r.exclusive(ctx)
	if err != nil {
		return err
	}
	defer done()
	d, err := r.db.Dataset(ctx, datasetID)
	if err != nil {
		return fmt.Errorf("release %s: %w", datasetID, err)
	}
	holds, err := r.db.Holds(ctx, datasetID)
	if err != nil {
		return err
	}
	local := false
	var server *storage.Hold
	for _, h := range holds {
		local = local || h.Kind == storage.HoldLocal
		if h.Kind == storage.HoldServer {
			server = &h
		}
	}
	switch {
	case !local && server != nil:
		// Ploti's own hold: its version is not sent until Ploti's team
		// release or discard it, and nothing here can bring it sooner.
		return fmt.Errorf("release %s: %w by you: Ploti holds its next version (%s) since it was built, and sends it only once its team releases it; "+
			"the file keeps version %d meanwhile, and the sync after the release brings the new one", datasetID, ErrNotHeld, server.Reason, d.Version)
	case !local:
		return fmt.Errorf("release %s: %w (status %s)", datasetID, ErrNotHeld, d.Status)
	}
	if err := r.reloadCurrent(ctx, d, false); err != nil {
		var ae interface{ Unwrap() error }
		if errors.As(err, &ae) {
			return fmt.Errorf("release %s: %w", datasetID, err)
		}
		return err
	}
	return nil
}

// explain puts a dataset's state in words, with what to do about it.
func explain(d DatasetStatus) string {
	var parts []string
	if s := explainStatus(d); s != "" {
		parts = append(parts, s)
	}
	if s := explainReason(d); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// explainStatus words a removed or failed dataset's state.
func explainStatus(d DatasetStatus) string {
	switch d.Status {
	case storage.StatusRemoved:
		if d.Reason == storage.ReasonUnwatched {
			return "no longer watched; its rows stay and stop updating (`ploti-replica watch add " + d.DatasetID + "` to follow it again)"
		}
		if d.Source == storage.SourceWatch && d.Version == 0 {
			return "watched, but the workspace's coverage or plan does not open it (" + d.Reason + "); nothing is loaded, and each sync tries again"
		}
		if d.Source == storage.SourceWatch {
			return "watched, but the workspace's coverage or plan no longer opens it (" + d.Reason + "); its rows stay and stop updating, and a sync after its next version tries again"
		}
		return "left the subscription (" + d.Reason + "); its rows stay and stop updating"
	case storage.StatusFailed:
		if d.Version == 0 {
			return "failed: " + d.Reason + "; no version loaded yet, and the next sync tries again"
		}
		return "failed: " + d.Reason + "; the last good version stays and the next sync tries again"
	}
	return ""
}

// explainReason words what a dataset waits for, or why it is held.
func explainReason(d DatasetStatus) string {
	switch d.Reason {
	case storage.ReasonAwaitingFirstVersion:
		if d.Source == storage.SourceWatch {
			return "watched, with no version yet; the first sync after its first version reads it"
		}
		return "no released version yet; its first version arrives as resync_required first_version"
	case storage.ReasonMajorSchemaChange:
		s := "held for review after a MAJOR schema change"
		for _, h := range d.Holds {
			var det struct {
				PendingVersion int    `json:"pendingVersion"`
				SchemaVersion  string `json:"schemaVersion"`
			}
			if h.Kind == storage.HoldLocal && json.Unmarshal(h.Detail, &det) == nil && det.PendingVersion > 0 {
				s = fmt.Sprintf("held for review: version %d brings a MAJOR schema change (to %s)", det.PendingVersion, det.SchemaVersion)
			}
		}
		return s + "; review, then `ploti-replica holds release " + d.DatasetID + "`"
	case ploti.DelaySchemaReview, ploti.DelayDataCheck, ploti.DelayProcessing:
		s := "Ploti holds the next version for review (" + d.Reason + ")"
		for _, h := range d.Holds {
			if h.Kind == storage.HoldServer && h.Since != nil {
				s += " since " + h.Since.UTC().Format(time.RFC3339)
			}
		}
		if d.Version > 0 {
			s += fmt.Sprintf("; version %d stays current", d.Version)
		}
		return s
	case storage.ReasonStale:
		s := "stale: Ploti missed a check of the source"
		if d.NextCheckBy != nil {
			s += " (due " + d.NextCheckBy.UTC().Format(time.RFC3339) + ")"
		}
		return s
	case storage.ReasonRebuilding:
		return "Ploti is rebuilding its files; the next sync loads it"
	case storage.ReasonLeftSubscription:
		return "the API says it is no longer delivered; its events are skipped until feed.dataset.removed"
	case storage.ReasonNotLoadedYet:
		return "the manifest lists it, but the bootstrap stopped before loading it; the next sync loads it"
	case storage.ReasonNotInManifest:
		return "no longer in the subscription's manifest; its rows stay"
	case "building", "held", "failed", "awaiting_release":
		return "no released version yet (Ploti: " + d.Reason + ")"
	}
	return ""
}
