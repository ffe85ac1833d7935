package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
)

// A server written from the docs, not our emulator, may send what the docs
// and docs/wire.md allow and our emulator never does ("A client built on
// this page must still be tolerant: ignore unknown fields, accept a field
// that is absent where this page says it may be"). tolerantProxy stands in
// front of the emulator and reshapes every JSON answer of the API that way;
// the file host is left alone (its links point at it directly).

// reshape is one doc-allowed change to a decoded JSON answer; path is the
// request's URL path.
type reshape func(path string, v any) any

// tolerantProxy serves em's API through the reshapes, in order, and reads
// the event log two events a page whatever limit the client asks for.
func tolerantProxy(tb testing.TB, em *emulator.Emulator, reshapes ...reshape) string {
	tb.Helper()
	target, _ := url.Parse(em.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	director := proxy.Director
	proxy.Director = func(r *http.Request) {
		director(r)
		// A server may answer fewer events than the limit asked for while
		// more follow: the walk must go by nextCursor, not by page size.
		if strings.HasSuffix(r.URL.Path, "/events") {
			q := r.URL.Query()
			q.Set("limit", "2")
			r.URL.RawQuery = q.Encode()
		}
	}
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			return nil
		}
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if v, err := decodeOrdered(raw); err == nil {
			for _, f := range reshapes {
				v = f(resp.Request.URL.Path, v)
			}
			if b, err := encodeOrdered(v); err == nil {
				raw = b
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		resp.ContentLength = int64(len(raw))
		resp.Header.Set("Content-Length", strconv.Itoa(len(raw)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// Objects keep the order of their keys as the server sent them, so that a
// JSON value in a row (a json column) goes on as it came; keys a reshape
// adds go last.

// orderKey is the key of an object in keyOrder: a pointer kept in the
// object itself under a key no JSON text can hold.
const orderKey = "\x00order"

// decodeOrdered decodes JSON as json.Unmarshal into any does (numbers
// kept as json.Number), remembering each object's key order.
func decodeOrdered(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

func decodeValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		var order []string
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			m[k.(string)] = v
			order = append(order, k.(string))
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		m[orderKey] = order
		return m, nil
	case json.Delim('['):
		l := []any{}
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		return l, nil
	}
	return tok, nil
}

// encodeOrdered writes v back, each object's keys in the order it came
// with, then those a reshape added (sorted).
func encodeOrdered(v any) ([]byte, error) {
	var b bytes.Buffer
	err := encodeValue(&b, v)
	return b.Bytes(), err
}

func encodeValue(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		order, _ := x[orderKey].([]string)
		var keys []string
		seen := map[string]bool{}
		for _, k := range order {
			if _, ok := x[k]; ok {
				keys, seen[k] = append(keys, k), true
			}
		}
		var added []string
		for k := range x {
			if k != orderKey && !seen[k] {
				added = append(added, k)
			}
		}
		sort.Strings(added)
		b.WriteByte('{')
		for i, k := range append(keys, added...) {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			if err := encodeValue(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, c := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeValue(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		e, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(e)
	}
	return nil
}

// opaqueKeys hold values a reshape never touches: cursors are opaque,
// rows and changes' rows are the dataset's own values, maps of counts have
// no fixed keys.
var opaqueKeys = map[string]bool{"cursor": true, "nextCursor": true, "eventCursor": true, "asOf": true,
	"rows": true, "row": true, "datasetCounts": true, "byTopic": true, "byPlace": true, "answer": true}

// walkObjects calls f on every JSON object in v outside opaqueKeys, inner
// objects first.
func walkObjects(v any, f func(m map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if !opaqueKeys[k] {
				walkObjects(c, f)
			}
		}
		f(x)
	case []any:
		for _, c := range x {
			walkObjects(c, f)
		}
	}
}

// unknownFields adds a field no version of the docs names to every object.
func unknownFields(_ string, v any) any {
	walkObjects(v, func(m map[string]any) {
		m["zzFuture"] = map[string]any{"note": "a field a newer API adds", "n": []any{1, "x", nil}}
	})
	return v
}

var utcTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)

// offsetTimes writes every time as the same instant at +05:30 with
// milliseconds: RFC 3339 all the same.
func offsetTimes(_ string, v any) any {
	zone := time.FixedZone("", 5*3600+1800)
	walkObjects(v, func(m map[string]any) {
		for k, c := range m {
			s, ok := c.(string)
			if !ok || !utcTime.MatchString(s) {
				continue
			}
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				m[k] = t.In(zone).Format("2006-01-02T15:04:05.000Z07:00")
			}
		}
	})
	return v
}

// dropOptional leaves out what the contract says may be absent: a file's
// bytes and sha256 ("bytes and sha256 may be absent"), and fields the
// docs show but no rule of the client needs (linksExpireAt, generatedAt,
// refresh, description, dataAtlasId, source).
func dropOptional(_ string, v any) any {
	walkObjects(v, func(m map[string]any) {
		if _, ok := m["url"]; ok {
			delete(m, "bytes")
			delete(m, "sha256")
		}
		for _, k := range []string{"linksExpireAt", "generatedAt", "refresh", "description", "dataAtlasId", "source"} {
			delete(m, k)
		}
	})
	return v
}

// topLevelLinks moves each event's links from data to the event
// (docs/wire.md 3: "a client also accepts it at the top level").
func topLevelLinks(path string, v any) any {
	if !strings.HasSuffix(path, "/events") {
		return v
	}
	page, _ := v.(map[string]any)
	events, _ := page["events"].([]any)
	for _, e := range events {
		ev, _ := e.(map[string]any)
		if data, ok := ev["data"].(map[string]any); ok && data["links"] != nil {
			ev["links"] = data["links"]
			delete(data, "links")
		}
	}
	return v
}

// futureEvents puts, before each page's first event, an event of a feed
// type the docs do not name yet, for the same dataset: a newer API's event
// that this client must pass over (it is in the log, so it has an id and
// the cursor moves past it).
func futureEvents(n *atomic.Int64) reshape {
	return func(path string, v any) any {
		if !strings.HasSuffix(path, "/events") {
			return v
		}
		page, _ := v.(map[string]any)
		events, _ := page["events"].([]any)
		if len(events) == 0 {
			return v
		}
		first, _ := events[0].(map[string]any)
		data, _ := first["data"].(map[string]any)
		future := map[string]any{"id": fmt.Sprintf("evt_future_%d", n.Add(1)), "type": "feed.dataset.archived",
			"timestamp": first["timestamp"], "subscriptionId": first["subscriptionId"],
			"data": map[string]any{"datasetId": data["datasetId"], "version": 999999, "reason": "archived_at_source"}}
		page["events"] = append([]any{future}, events...)
		return v
	}
}

// A server may send every JSON answer with unknown fields, times at another
// offset, optional fields left out, links at the events' top level and
// events of types the docs do not name: a replica synced through it ends
// exactly where one synced from the emulator directly does, through a MINOR
// schema change, a MAJOR one held and released, and plain updates.
func TestSync_TolerantOfWhatTheDocsAllow(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	var n atomic.Int64
	proxy := tolerantProxy(t, em, unknownFields, offsetTimes, dropOptional, topLevelLinks, futureEvents(&n))
	odd := mustOpen(t, em, sub, "", func(o *Options) { o.APIURL = proxy })
	plain := mustOpen(t, em, sub, "")
	both := func() {
		t.Helper()
		mustSync(t, odd)
		mustSync(t, plain)
	}
	both()
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	cols := append(append([]emulator.Column{}, permitCols...), emulator.Column{Name: "units", Type: "integer"})
	_, err = em.Publish(ctx, "ds_permits", withUnits(permits(2), 4), emulator.WithSchema(cols, []string{"permit"}))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	both()
	// A MAJOR change (a column removed): Ploti holds it, then releases it;
	// the replica holds it for review until released here.
	major := parcels(2)
	for _, row := range major {
		delete(row, "uses")
	}
	_, err = em.Publish(ctx, "ds_parcels", major, emulator.WithSchema([]emulator.Column{
		{Name: "parcel", Type: "string"}, {Name: "acres", Type: "number"}, {Name: "units", Type: "integer"},
		{Name: "geometry", Type: "geometry"}}, []string{"parcel"}))
	must(t, err)
	both()
	if _, err := em.ReleaseHeld("ds_parcels"); err != nil {
		t.Fatal(err)
	}
	both()
	for _, r := range []*Replica{odd, plain} {
		if err := r.Release(ctx, "ds_parcels"); err != nil {
			t.Fatal(err)
		}
	}
	both()
	if n.Load() == 0 {
		t.Fatal("the proxy put no event of an unknown type in the log")
	}
	assertMatchesTruth(t, odd, em, "ds_permits", 3)
	assertMatchesTruth(t, odd, em, "ds_parcels", 0)
	if got, want := snapshotRegistry(t, odd), snapshotRegistry(t, plain); got != want {
		t.Fatalf("registry through the reshaping server:\n%s\nwant (straight from the emulator):\n%s", got, want)
	}
	st, err := odd.Status(ctx)
	must(t, err)
	for _, d := range st.Datasets {
		if d.Status != "current" {
			t.Errorf("%s: %s (%s)", d.DatasetID, d.Status, d.Reason)
		}
	}
}

// rowsReshaped changes the rows of rows and changes answers as docs/wire.md
// 9 allows: a null value left out ("a missing key or null is NULL"), a
// UTC time written as the same instant at -03:30 with milliseconds (RFC
// 3339 all the same), no row key on a removed change, and no nextCursor
// key on a last page.
func rowsReshaped(path string, v any) any {
	if !strings.HasSuffix(path, "/rows") && !strings.HasSuffix(path, "/changes") {
		return v
	}
	page, _ := v.(map[string]any)
	if page == nil {
		return v
	}
	if page["nextCursor"] == nil {
		delete(page, "nextCursor")
	}
	row := func(r map[string]any) {
		for k, c := range r {
			switch x := c.(type) {
			case nil:
				delete(r, k)
			case string:
				if utcTime.MatchString(x) {
					if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
						r[k] = t.In(time.FixedZone("", -(3*3600 + 1800))).Format("2006-01-02T15:04:05.000Z07:00")
					}
				}
			}
		}
	}
	rows, _ := page["rows"].([]any)
	for _, r := range rows {
		if m, ok := r.(map[string]any); ok {
			row(m)
		}
	}
	changes, _ := page["changes"].([]any)
	for _, c := range changes {
		ch, _ := c.(map[string]any)
		if r, ok := ch["row"].(map[string]any); ok {
			row(r)
		} else if ch != nil {
			delete(ch, "row")
		}
		if ch != nil && ch["previousRecordId"] == nil {
			delete(ch, "previousRecordId")
		}
	}
	return v
}

// The watch API through a server that sends what docs/wire.md 9 allows and
// the emulator does not: the watched dataset ends equal to the truth after
// a first read, a one-version merge with renames and a walk back over
// three versions.
func TestWatch_TolerantOfWhatTheDocsAllow(t *testing.T) {
	em := mustEmulator(t)
	v1 := seedWatched(t, em, 40)
	var n atomic.Int64
	proxy := tolerantProxy(t, em, unknownFields, offsetTimes, dropOptional, rowsReshaped, futureEvents(&n))
	r := mustOpenWatches(t, em, "", func(o *Options) { o.APIURL = proxy })
	mustSync(t, r)
	assertWatched(t, r, em, dsWatched, v1)
	var old string
	if err := r.DB().QueryRow("SELECT min(_ploti_record_id) FROM " + datasetRow(t, r, dsWatched).Table + " WHERE k = 'k0010'").Scan(&old); err != nil {
		t.Fatal(err)
	}
	v2 := mustPublishRows(t, em, dsWatched, watchRows(1, 40), emulator.WithRenames(old)).PlotiVersion
	if res := mustSync(t, r); res.WatchMerges != 1 {
		t.Fatalf("sync = %+v, want a merge", res)
	}
	assertWatched(t, r, em, dsWatched, v1, v2)
	for round := 2; round <= 4; round++ {
		mustPublishRows(t, em, dsWatched, watchRows(round, 40))
	}
	if res := mustSync(t, r); res.WatchMerges != 1 || res.WatchReloads != 0 {
		t.Fatalf("sync = %+v, want one merge", res)
	}
	assertWatched(t, r, em, dsWatched, v1, v2, latestPloti(t, em, dsWatched))
}

// A version with no changes files (a server that sends none) is loaded from
// its snapshot, and the sync counts it as a snapshot loaded, not as a
// merge: the counts say what ran.
func TestSync_AnUpdatedWithNoChangesFilesIsCountedAsALoad(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	noChanges := func(path string, v any) any {
		if m, ok := v.(map[string]any); ok && strings.Contains(path, "/versions/") {
			if files, ok := m["files"].(map[string]any); ok {
				files["changes"] = []any{}
			}
		}
		return v
	}
	r := mustOpen(t, em, sub, "", func(o *Options) { o.APIURL = tolerantProxy(t, em, noChanges) })
	mustSync(t, r)
	rel, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 1 || res.ChangesMerged != 0 {
		t.Fatalf("a version with no changes files loads its snapshot: want 1 loaded and 0 merged, got %+v", res)
	}
	assertMatchesTruth(t, r, em, "ds_permits", rel.Version)
}
