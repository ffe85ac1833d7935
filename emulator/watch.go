package emulator

// Dataset watches (watch-and-webhooks.txt; docs/wire.md section 9): Ploti's
// general API, open on any plan. Each released version of a dataset is
// promoted to a Ploti version with a number of its own, whether or not any
// subscription delivers the dataset; a member watches up to MaxWatches
// datasets and its member webhooks get dataset.changed for each promotion.

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Limits and numbers of the watch API.
const (
	// MaxWatches is how many datasets the member may watch (docs: "A
	// member may watch 100 datasets").
	MaxWatches = 100
	// PlotiVersionStart and PlotiVersionStep number a dataset's Ploti
	// versions: 11, 14, 17, ... They are deliberately unlike Data Feeds
	// version numbers (1, 2, 3, ...), so that a client that mixes the two
	// up fails, and never consecutive, so that only previousVersion links
	// them.
	PlotiVersionStart = 11
	PlotiVersionStep  = 3
	// RowsCursorLife is how long a rows cursor keeps working after its
	// version was superseded (docs/wire.md section 9).
	RowsCursorLife = time.Hour
)

// The changeLog kinds of the docs.
const (
	ChangeLogRecorded    = "recorded"
	ChangeLogCountsOnly  = "counts_only"
	ChangeLogIDsChanged  = "ids_changed"
	ChangeLogFullRefresh = "full_refresh"
	ChangeLogFirst       = "first"
)

// watchCounts are a Ploti version's totals.
type watchCounts struct {
	added, changed, removed, renamed int64
}

// watchBuild is what a build worked out for the watch side, promoted with
// the version when it is released.
type watchBuild struct {
	changeLog string
	prev      *plotiVersion // the Ploti version it is measured from; nil: none
	counts    watchCounts
	changes   *fileRef // the change list of a recorded version
	entries   int64    // its entries
}

// plotiVersion is one promoted version of a dataset on the watch side.
type plotiVersion struct {
	num          int
	prev         *int
	feed         *version // the Data Feeds version whose rows it has
	promotedAt   time.Time
	supersededAt time.Time // when the next one was promoted; zero while latest
	watchBuild
	rows rowsCache
}

// rowsCache is a Ploti version's rows as JSON lines, written on the first
// whole read.
type rowsCache struct {
	mu   sync.Mutex
	rel  string // "" until written, and again once evicted
	used int64  // a counter of the last use, for eviction
}

// watch is one dataset a member watches.
type watch struct {
	datasetID string
	member    string
	watchedAt time.Time
}

// WatchInfo is one watch, as Watch and Watches report it.
type WatchInfo struct {
	DatasetID string
	Title     string
	WatchedAt time.Time
	// Version is the dataset's current Ploti version, 0 when it has none;
	// PromotedAt when that version went live.
	Version    int
	PromotedAt time.Time
}

// PlotiVersion describes one promoted version of a dataset, as
// PlotiVersions reports it.
type PlotiVersion struct {
	// Version is Ploti's number; PreviousVersion the one it is measured
	// from (0 for none).
	Version, PreviousVersion int
	// FeedVersion is the Data Feeds version with the same rows.
	FeedVersion int
	PromotedAt  time.Time
	// ChangeLog is what the changes answer says was recorded.
	ChangeLog string
	// Added, Changed, Removed and Renamed are its counts.
	Added, Changed, Removed, Renamed int64
}

// latestPloti is a dataset's current Ploti version, or nil.
func (d *dataset) latestPloti() *plotiVersion {
	if n := len(d.plotiVersions); n > 0 {
		return d.plotiVersions[n-1]
	}
	return nil
}

func (d *dataset) plotiNum(n int) *plotiVersion {
	for _, pv := range d.plotiVersions {
		if pv.num == n {
			return pv
		}
	}
	return nil
}

// promoteLocked promotes a released Data Feeds version to the dataset's
// next Ploti version and tells the member's webhooks.
func (e *Emulator) promoteLocked(d *dataset, v *version) {
	wb := v.watch
	if wb == nil {
		wb = &watchBuild{changeLog: ChangeLogFullRefresh}
	}
	now := e.nowLocked()
	pv := &plotiVersion{num: PlotiVersionStart, feed: v, promotedAt: now, watchBuild: *wb}
	if last := d.latestPloti(); last != nil {
		pv.num = last.num + PlotiVersionStep
		last.supersededAt = now
	}
	if wb.prev != nil {
		pv.prev = vp(wb.prev.num)
	}
	d.plotiVersions = append(d.plotiVersions, pv)
	v.ploti = pv.num
	e.sendDatasetChangedLocked(d, pv)
}

// openErr is why the workspace's coverage or plan does not open a dataset
// to the watch API, or nil. Data Feeds deliverability does not matter:
// watching is separate from Data Feeds.
func (e *Emulator) openErr(d *dataset) error {
	switch {
	case !e.inCoverage(d):
		return ErrOutsideCoverage
	case d.planClosed:
		return ErrNotDeliverable
	}
	return nil
}

func (e *Emulator) watchInfoLocked(w *watch) WatchInfo {
	d := e.datasets[w.datasetID]
	info := WatchInfo{DatasetID: w.datasetID, WatchedAt: w.watchedAt}
	if d != nil {
		info.Title = d.spec.Title
		if pv := d.latestPloti(); pv != nil {
			info.Version, info.PromotedAt = pv.num, pv.promotedAt
		}
	}
	return info
}

// Watch makes DefaultMember watch a dataset and returns the watch (WatchAs).
func (e *Emulator) Watch(datasetID string) (WatchInfo, error) {
	return e.WatchAs(DefaultMember, datasetID)
}

// WatchAs makes a member watch a dataset and returns the watch. Watching
// twice changes nothing (the same WatchedAt). It returns ErrNotFound for an
// unknown dataset or a member who left, ErrOutsideCoverage or
// ErrNotDeliverable when the workspace's coverage or plan does not open
// it, and ErrWatchLimit past MaxWatches of the member's.
func (e *Emulator) WatchAs(member, datasetID string) (WatchInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.datasets[datasetID]
	switch {
	case e.membersGone[member]:
		return WatchInfo{}, fmt.Errorf("watch %s: member %s left the workspace: %w", datasetID, member, ErrNotFound)
	case d == nil:
		return WatchInfo{}, fmt.Errorf("watch %s: %w", datasetID, ErrNotFound)
	}
	if err := e.openErr(d); err != nil {
		return WatchInfo{}, fmt.Errorf("watch %s: %w", datasetID, err)
	}
	k := watchKey(member, datasetID)
	if w := e.watches[k]; w != nil {
		return e.watchInfoLocked(w), nil
	}
	if len(e.watchKeysOf(member)) >= MaxWatches {
		return WatchInfo{}, fmt.Errorf("watch %s: a member may watch %d datasets: %w", datasetID, MaxWatches, ErrWatchLimit)
	}
	w := &watch{datasetID: datasetID, member: member, watchedAt: e.nowLocked()}
	e.watches[k] = w
	e.watchOrder = append(e.watchOrder, k)
	return e.watchInfoLocked(w), nil
}

// Unwatch stops DefaultMember watching a dataset (UnwatchAs).
func (e *Emulator) Unwatch(datasetID string) error { return e.UnwatchAs(DefaultMember, datasetID) }

// UnwatchAs stops a member watching a dataset; it is no error when it was
// not watched. It returns ErrNotFound for a dataset that is neither
// watched nor known.
func (e *Emulator) UnwatchAs(member, datasetID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := watchKey(member, datasetID)
	if e.watches[k] == nil {
		if e.datasets[datasetID] == nil {
			return fmt.Errorf("unwatch %s: %w", datasetID, ErrNotFound)
		}
		return nil
	}
	e.dropWatchLocked(k)
	return nil
}

// Watches lists DefaultMember's watches (WatchesOf).
func (e *Emulator) Watches() []WatchInfo { return e.WatchesOf(DefaultMember) }

// WatchesOf lists a member's watches, oldest first, each with its
// dataset's current Ploti version.
func (e *Emulator) WatchesOf(member string) []WatchInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := e.watchKeysOf(member)
	out := make([]WatchInfo, 0, len(keys))
	for _, k := range keys {
		out = append(out, e.watchInfoLocked(e.watches[k]))
	}
	return out
}

// watchKey keys a member's watch of a dataset.
func watchKey(member, datasetID string) string { return member + "\x00" + datasetID }

// watchKeysOf is a member's watch keys, oldest first.
func (e *Emulator) watchKeysOf(member string) []string {
	var out []string
	for _, k := range e.watchOrder {
		if e.watches[k].member == member {
			out = append(out, k)
		}
	}
	return out
}

func (e *Emulator) dropWatchLocked(k string) {
	delete(e.watches, k)
	e.watchOrder = slices.DeleteFunc(e.watchOrder, func(x string) bool { return x == k })
}

// endWatchesLocked ends every watch of a member who left.
func (e *Emulator) endWatchesLocked(member string) {
	for _, k := range e.watchKeysOf(member) {
		e.dropWatchLocked(k)
	}
}

// watchersLocked lists the members who watch a dataset, in the order
// they started.
func (e *Emulator) watchersLocked(datasetID string) []string {
	var out []string
	for _, k := range e.watchOrder {
		if w := e.watches[k]; w.datasetID == datasetID {
			out = append(out, w.member)
		}
	}
	return out
}

// PlotiVersions lists a dataset's promoted versions, oldest first (nil for
// an unknown dataset).
func (e *Emulator) PlotiVersions(datasetID string) []PlotiVersion {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.datasets[datasetID]
	if d == nil {
		return nil
	}
	out := make([]PlotiVersion, 0, len(d.plotiVersions))
	for _, pv := range d.plotiVersions {
		out = append(out, pv.public())
	}
	return out
}

func (pv *plotiVersion) public() PlotiVersion {
	out := PlotiVersion{Version: pv.num, FeedVersion: pv.feed.num, PromotedAt: pv.promotedAt, ChangeLog: pv.changeLog,
		Added: pv.counts.added, Changed: pv.counts.changed, Removed: pv.counts.removed, Renamed: pv.counts.renamed}
	if pv.prev != nil {
		out.PreviousVersion = *pv.prev
	}
	return out
}

// watchDataset finds a dataset for the watch API: 404 when unknown, 409
// when the workspace's coverage or plan does not open it.
func (e *Emulator) watchDataset(r *http.Request) (*dataset, error) {
	d := e.datasets[r.PathValue("dataset")]
	if d == nil {
		return nil, errNotFound("no such dataset")
	}
	if err := e.openErr(d); err != nil {
		return nil, asAPIError(err)
	}
	return d, nil
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Format(time.RFC3339)
}

func versionOrNil(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// provenanceURL is where a dataset's values come from.
func (d *dataset) provenanceURL() string {
	switch {
	case d.spec.ProvenanceURL != "":
		return d.spec.ProvenanceURL
	case d.spec.SourceURL != "":
		return d.spec.SourceURL
	}
	return "https://ploti.ai/datasets/" + d.spec.ID + "/provenance"
}

// columnsNow are a dataset's columns and key as of its current Ploti
// version (the spec's before the first).
func (d *dataset) columnsNow() ([]Column, []string) {
	if pv := d.latestPloti(); pv != nil {
		return pv.feed.schema.Columns, pv.feed.schema.Key
	}
	return d.spec.Columns, d.spec.KeyColumns
}

func (e *Emulator) getWatchDataset(r *http.Request) (int, any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d, err := e.watchDataset(r)
	if err != nil {
		return 0, nil, err
	}
	var place any
	if d.spec.PlaceID != "" {
		p := e.placeByID(d.spec.PlaceID)
		if p == nil {
			p = &Place{ID: d.spec.PlaceID}
		}
		place = map[string]any{"id": p.ID, "name": nullIfEmpty(p.Name), "kind": nullIfEmpty(p.Kind)}
	}
	kind := d.spec.Kind
	if kind == "" {
		kind = "table"
	}
	cols, key := d.columnsNow()
	num, at := 0, time.Time{}
	if pv := d.latestPloti(); pv != nil {
		num, at = pv.num, pv.promotedAt
	}
	return 200, map[string]any{
		"id": d.spec.ID, "title": d.spec.Title, "kind": kind, "place": place, "topic": nullIfEmpty(d.spec.Topic),
		"version": versionOrNil(num), "promotedAt": timeOrNil(at), "provenanceUrl": d.provenanceURL(),
		"keyColumns": nonNil(key), "columns": columnsJSON(cols, false),
	}, nil
}

func (e *Emulator) postWatch(r *http.Request) (int, any, error) {
	w, err := e.WatchAs(callerOf(r).member, r.PathValue("dataset"))
	if err != nil {
		return 0, nil, asAPIError(err)
	}
	return 200, map[string]any{"datasetId": w.DatasetID, "watchedAt": w.WatchedAt.Format(time.RFC3339),
		"version": versionOrNil(w.Version)}, nil
}

func (e *Emulator) deleteWatch(r *http.Request) (int, any, error) {
	id := r.PathValue("dataset")
	if err := e.UnwatchAs(callerOf(r).member, id); err != nil {
		return 0, nil, asAPIError(err)
	}
	return 200, map[string]any{"datasetId": id, "watching": false}, nil
}

func (e *Emulator) listWatches(r *http.Request) (int, any, error) {
	out := []map[string]any{}
	for _, w := range e.WatchesOf(callerOf(r).member) {
		out = append(out, map[string]any{"datasetId": w.DatasetID, "title": w.Title,
			"watchedAt": w.WatchedAt.Format(time.RFC3339), "version": versionOrNil(w.Version), "promotedAt": timeOrNil(w.PromotedAt)})
	}
	return 200, map[string]any{"watches": out}, nil
}
