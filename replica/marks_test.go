package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/apply"
	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

func datasetChangesOf(tb testing.TB, cs *ChangeSet, id string) DatasetChanges {
	tb.Helper()
	for _, d := range cs.Datasets {
		if d.DatasetID == id {
			return d
		}
	}
	tb.Fatalf("changes of mark %s have no dataset %s", cs.Mark, id)
	return DatasetChanges{}
}

func mustChanges(tb testing.TB, r *Replica, mark string, datasets ...string) *ChangeSet {
	tb.Helper()
	cs, err := r.Changes(context.Background(), mark, ChangesOptions{Datasets: datasets})
	if err != nil {
		tb.Fatalf("changes of mark %s: %v", mark, err)
	}
	return cs
}

// assertChangesMatchTruth checks a dataset's changes since a mark against
// the emulator's truths of the two versions, and that each row given is
// the record's row now.
func assertChangesMatchTruth(tb testing.TB, r *Replica, em *emulator.Emulator, dc DatasetChanges, from, to int) {
	tb.Helper()
	if dc.FromVersion != from || dc.ToVersion != to {
		tb.Fatalf("%s: changes from v%d to v%d, want v%d to v%d", dc.DatasetID, dc.FromVersion, dc.ToVersion, from, to)
	}
	want := loggedTruthChanges(tb, r.DB(), em, dc.DatasetID, from, to)
	if dc.FromHistory { // values known: a record changed and changed back did not change
		want = truthChanges(truthRows(tb, r.DB(), em, dc.DatasetID, from), truthRows(tb, r.DB(), em, dc.DatasetID, to), true)
	}
	if got := changeKinds(dc.Changes); !sameKinds(got, want) {
		tb.Fatalf("%s v%d→v%d: changes differ from the truths': %s", dc.DatasetID, from, to, kindsDiff(got, want))
	}
	for _, c := range dc.Changes {
		var row map[string]any
		if c.Change == storage.ChangeRemoved {
			if c.Row != nil || dc.FromHistory && c.Before == nil {
				tb.Fatalf("removed %s comes with a row: %s", c.RecordID, c.Row)
			}
			continue
		}
		if err := json.Unmarshal(c.Row, &row); err != nil || row[storage.ColRecordID] != c.RecordID {
			tb.Fatalf("%s %s: row %s is not its row (%v)", c.Change, c.RecordID, c.Row, err)
		}
	}
}

// "moves it only with --advance, after the output is written, so
// a consumer that dies in between sees the same changes again".
func TestMarks_ReadDieReadAgainThenAdvance(t *testing.T) {
	onlyInAFile(t, "marks")
	t.Run("log", func(t *testing.T) { testMarksReadDieRead(t, nil) })
	t.Run("history", func(t *testing.T) { testMarksReadDieRead(t, []string{HistoryAll}) })
}

func testMarksReadDieRead(t *testing.T, history []string) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.History = history })
	mustSync(t, r)

	// A mark never seen starts before the oldest change kept: a first
	// load logs none.
	cs := mustChanges(t, r, "agent")
	if len(cs.Datasets) != 2 {
		t.Fatalf("a new mark covers every dataset held: %+v", cs)
	}
	for _, d := range cs.Datasets {
		if !d.NewMark || len(d.Changes) != 0 || d.FromVersion != 1 || d.ToVersion != 1 || d.FromHistory != (history != nil) {
			t.Fatalf("%s: a new mark on a file with no change logged: %+v", d.DatasetID, d)
		}
	}
	must(t, r.Advance(ctx, "agent", cs))

	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	_, err = em.Publish(ctx, "ds_parcels", parcels(1))
	must(t, err)
	mustSync(t, r)

	first := mustChanges(t, r, "agent")
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, first, "ds_permits"), 1, 2)
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, first, "ds_parcels"), 1, 2)
	// The consumer dies before advancing: it reads the same again.
	again := mustChanges(t, r, "agent")
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("a read without advance moved the mark:\n%+v\nthen\n%+v", first, again)
	}
	must(t, r.Advance(ctx, "agent", again))
	after := mustChanges(t, r, "agent")
	for _, d := range after.Datasets {
		if d.FromVersion != 2 || len(d.Changes) != 0 || d.NewMark {
			t.Fatalf("%s after advance: %+v", d.DatasetID, d)
		}
	}

	// Only newer: a version after the advance, and a sync between a read
	// and its advance: the mark moves to what was read, not past it.
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	mustSync(t, r)
	read := mustChanges(t, r, "agent")
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, read, "ds_permits"), 2, 3)
	if d := datasetChangesOf(t, read, "ds_parcels"); len(d.Changes) != 0 {
		t.Fatalf("parcels did not move: %+v", d)
	}
	_, err = em.Publish(ctx, "ds_permits", permits(3))
	must(t, err)
	mustSync(t, r)
	must(t, r.Advance(ctx, "agent", read))
	next := mustChanges(t, r, "agent", "ds_permits")
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, next, "ds_permits"), 3, 4)

	// Another mark is its own: never seen, it starts before the oldest
	// change kept (v2's), or where the history began.
	other := mustChanges(t, r, "dashboard", "ds_permits")
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, other, "ds_permits"), 1, 4)
	if history == nil {
		return
	}
	for _, c := range datasetChangesOf(t, other, "ds_permits").Changes {
		if c.Change != storage.ChangeAdded && c.Before == nil || c.Change == storage.ChangeChanged && len(c.Columns) == 0 {
			t.Fatalf("from the history, %s %s comes without its row before or its columns: %+v", c.Change, c.RecordID, c)
		}
	}
}

// Without history, a reload logs what it changed once the file has a mark
// (the mark would otherwise miss it): a replacement of ids (renamed, the
// id map linking the old id) and a MAJOR reload compared with the held rows.
func TestMarks_SeeReloads(t *testing.T) {
	onlyInAFile(t, "marks")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.OnMajor = apply.OnMajorReload })
	mustSync(t, r)
	must(t, r.Advance(ctx, "m", mustChanges(t, r, "m")))

	rows := permits(1)
	rel, err := em.Publish(ctx, "ds_permits", rows, emulator.WithRenames(renameIDs(t, r, "ds_permits", 3)...))
	must(t, err)
	if !rel.ResyncRequired || rel.ResyncReason != "record_ids_changed" {
		t.Fatalf("emulator: want a record_ids_changed resync, got %+v", rel)
	}
	res := mustSync(t, r)
	if res.SnapshotsLoaded != 1 {
		t.Fatalf("want a reload: %+v", res)
	}
	cs := mustChanges(t, r, "m", "ds_permits")
	dc := datasetChangesOf(t, cs, "ds_permits")
	assertChangesMatchTruth(t, r, em, dc, 1, 2)
	if dc.Counts.Renamed != 3 {
		t.Fatalf("3 records renamed, changes say %+v", dc.Counts)
	}
	for _, c := range dc.Changes {
		if c.Change == storage.ChangeRenamed && c.PreviousRecordID == "" {
			t.Fatalf("renamed %s without the id it had: %+v", c.RecordID, c)
		}
	}
	must(t, r.Advance(ctx, "m", cs))

	// A MAJOR change reloaded (a column removed): the held rows against
	// the new ones, by id and value.
	cols := []emulator.Column{{Name: "permit", Type: "string"}, {Name: "valuation", Type: "decimal", Precision: &emulator.Precision{Precision: 14, Scale: 2}},
		{Name: "issued", Type: "date"}, {Name: "final", Type: "boolean"}, {Name: "geometry", Type: "geometry"}}
	major := permits(2)
	for _, row := range major {
		delete(row, "updated_at")
	}
	rel, err = em.Publish(ctx, "ds_permits", major, emulator.WithSchema(cols, []string{"permit"}), emulator.SkipReview())
	must(t, err)
	if rel.SchemaBump != "major" {
		t.Fatalf("emulator: want a MAJOR change, got %+v", rel)
	}
	mustSync(t, r)
	assertMatchesTruth(t, r, em, "ds_permits", 3)
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, mustChanges(t, r, "m", "ds_permits"), "ds_permits"), 2, 3)
}

// renameIDs picks n record ids a dataset's table holds (the last ones: the
// seeds' next rounds keep them).
func renameIDs(tb testing.TB, r *Replica, datasetID string, n int) []string {
	tb.Helper()
	d := datasetRow(tb, r, datasetID)
	rows, err := r.DB().QueryContext(context.Background(), "SELECT _ploti_record_id FROM main."+storage.Ident(d.Table)+" ORDER BY 1 DESC LIMIT ?", n)
	must(tb, err)
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		must(tb, rows.Scan(&id))
		ids = append(ids, id)
	}
	return ids
}

// "--keep-changes N never prunes past the oldest mark without saying so":
// the versions a mark has not seen stay, and each sync that keeps them
// warns naming the mark; once it moves, they go, and a mark never seen
// "starts before the oldest change kept".
func TestMarks_KeepChangesKeepsWhatAMarkHasNotSeen(t *testing.T) {
	onlyInAFile(t, "marks")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	logs := &lockedLog{}
	r := mustOpen(t, em, sub, "", func(o *Options) {
		o.KeepChanges = 1
		o.Logger = logs.logger()
	})
	mustSync(t, r)
	must(t, r.Advance(ctx, "slow", mustChanges(t, r, "slow")))
	const said = `"mark":"slow","dataset":"ds_permits","mark_version":1`
	for round := 1; round <= 3; round++ {
		_, err := em.Publish(ctx, "ds_permits", permits(round))
		must(t, err)
		mustSync(t, r)
		// From the second version on, the count alone would prune.
		if n := strings.Count(logs.String(), said); n != round-1 {
			t.Fatalf("after %d versions, %d warnings that mark slow keeps the log, want %d:\n%s", round, n, round-1, logs)
		}
	}
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, mustChanges(t, r, "slow", "ds_permits"), "ds_permits"), 1, 4)
	must(t, r.Advance(ctx, "slow", mustChanges(t, r, "slow")))
	mustSync(t, r) // prunes what the mark has now seen
	span, err := r.db.ChangeLogSpan(ctx, "ds_permits")
	must(t, err)
	if span.Oldest != 4 || span.Newest != 4 {
		t.Fatalf("after the mark moved, --keep-changes 1 keeps v%d..v%d, want v4 only", span.Oldest, span.Newest)
	}
	if strings.Count(logs.String(), `"mark":"slow"`) != 2 {
		t.Fatalf("a warning after the mark moved:\n%s", logs)
	}
	dc := datasetChangesOf(t, mustChanges(t, r, "new", "ds_permits"), "ds_permits")
	if !dc.NewMark {
		t.Fatalf("mark new was never moved: %+v", dc)
	}
	assertChangesMatchTruth(t, r, em, dc, 3, 4)
}

// README: "the changes come from _ploti.changes and the rows the tables
// hold now, netted per record (a record added and removed again is left
// out)". A record the mark saw, renamed by a reload and then removed, is
// not one added and removed again: it is removed, under the id the mark
// saw.
func TestMarks_ARecordRenamedThenRemovedIsRemoved(t *testing.T) {
	onlyInAFile(t, "marks")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "")
	mustSync(t, r)
	must(t, r.Advance(ctx, "m", mustChanges(t, r, "m")))

	renamed := renameIDs(t, r, "ds_permits", 2)
	gone := map[string]bool{}
	for _, id := range renamed {
		var permit string
		must(t, r.DB().QueryRowContext(ctx, "SELECT permit FROM main."+storage.Ident(datasetRow(t, r, "ds_permits").Table)+
			" WHERE _ploti_record_id = ?", id).Scan(&permit))
		gone[permit] = true
	}
	_, err := em.Publish(ctx, "ds_permits", permits(0), emulator.WithRenames(renamed...))
	must(t, err)
	mustSync(t, r)
	var rows []emulator.Row
	for _, row := range permits(0) {
		if !gone[row["permit"].(string)] {
			rows = append(rows, row)
		}
	}
	_, err = em.Publish(ctx, "ds_permits", rows)
	must(t, err)
	mustSync(t, r)

	dc := datasetChangesOf(t, mustChanges(t, r, "m", "ds_permits"), "ds_permits")
	var removed []string
	for _, c := range dc.Changes {
		if c.Change == storage.ChangeRemoved {
			removed = append(removed, c.RecordID)
		}
	}
	slices.Sort(removed)
	slices.Sort(renamed)
	if !slices.Equal(removed, renamed) || dc.Counts.Removed != len(renamed) || dc.Counts.Renamed != 0 {
		t.Fatalf("records the mark saw as %v, renamed then removed: changes say removed %v (%+v)", renamed, removed, dc.Counts)
	}
}

// tableRows is a dataset table's rows by record id, each as JSON.
func tableRows(tb testing.TB, r *Replica, id string) map[string]string {
	tb.Helper()
	rows, err := r.DB().QueryContext(context.Background(), fmt.Sprintf(
		"SELECT %[1]s, to_json(t)::VARCHAR FROM main.%[2]s t", storage.ColRecordID, storage.Ident(datasetRow(tb, r, id).Table)))
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var k, v string
		must(tb, rows.Scan(&k, &v))
		got[k] = v
	}
	must(tb, rows.Err())
	return got
}

// assertChangesBetween checks a dataset's changes since a mark against
// its rows as the mark saw them (seen) and now: each record added, changed
// or removed in between is reported so (a record changed and changed back
// may be reported changed: the log does not know values); and something
// did change.
func assertChangesBetween(tb testing.TB, dc DatasetChanges, seen, now map[string]string) {
	tb.Helper()
	got := map[string]string{}
	for _, c := range dc.Changes {
		got[c.RecordID] = c.Change
	}
	n := 0
	for id, row := range now {
		before, ok := seen[id]
		switch {
		case !ok && got[id] != storage.ChangeAdded:
			tb.Errorf("%s, added since the mark: %q", id, got[id])
		case ok && before != row && got[id] != storage.ChangeChanged:
			tb.Errorf("%s, changed since the mark: %q", id, got[id])
		}
		if !ok || before != row {
			n++
		}
	}
	for id := range seen {
		if _, ok := now[id]; !ok {
			n++
			if got[id] != storage.ChangeRemoved {
				tb.Errorf("%s, removed since the mark: %q", id, got[id])
			}
		}
	}
	if n == 0 {
		tb.Fatal("nothing changed after the mark: the test tests nothing")
	}
}

// README: "Ploti's own version numbers (the watch's) and Data Feeds' are
// never compared". A mark set on a watched dataset that the feed then
// takes over sees what changed after it, not "nothing new" until the
// feed's numbers pass the watch's.
func TestMarks_FollowTheFeedTakingOverAWatchedDataset(t *testing.T) {
	onlyInAFile(t, "marks")
	ctx := context.Background()
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	path := filepath.Join(t.TempDir(), "both.duckdb")
	w := mustOpenWatches(t, em, path)
	mustSync(t, w)
	mustPublishRows(t, em, dsWatched, watchRows(1, 30))
	mustSync(t, w)
	must(t, w.Advance(ctx, "m", mustChanges(t, w, "m")))
	seen := tableRows(t, w, dsWatched)
	w.Close()

	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	r := mustOpen(t, em, sub, path, func(o *Options) { o.Watch = true })
	mustSync(t, r)
	if d := datasetRow(t, r, dsWatched); d.Source != storage.SourceFeed {
		t.Fatalf("in the subscription: source %s, want feed", d.Source)
	}
	mustPublishRows(t, em, dsWatched, watchRows(2, 30))
	mustPublishRows(t, em, dsWatched, watchRows(3, 30))
	mustSync(t, r)
	now := tableRows(t, r, dsWatched)

	dc := datasetChangesOf(t, mustChanges(t, r, "m", dsWatched), dsWatched)
	assertChangesBetween(t, dc, seen, now)
	if d := datasetRow(t, r, dsWatched); dc.ToVersion != d.Version {
		t.Errorf("changes to v%d, want the feed's v%d", dc.ToVersion, d.Version)
	}
	// The mark moves on in the feed's numbers.
	must(t, r.Advance(ctx, "m", mustChanges(t, r, "m")))
	mustPublishRows(t, em, dsWatched, watchRows(4, 30))
	mustSync(t, r)
	dc = datasetChangesOf(t, mustChanges(t, r, "m", dsWatched), dsWatched)
	if d := datasetRow(t, r, dsWatched); dc.FromVersion != d.Version-1 || len(dc.Changes) == 0 {
		t.Fatalf("after advancing past the takeover: v%d → v%d, %d changes; want the feed's last version", dc.FromVersion, dc.ToVersion, len(dc.Changes))
	}
}

// The other way round: a mark set while the feed kept a dataset that
// leaves the subscription and stays watched reads the watch's versions
// after it (README: the two numberings "are never compared").
func TestMarks_FollowTheWatchTakingOverAFeedDataset(t *testing.T) {
	onlyInAFile(t, "marks")
	ctx := context.Background()
	em := mustEmulator(t)
	seedWatched(t, em, 30)
	em.AddPlace(emulator.Place{ID: "fl-leon", Name: "Leon County, FL", Kind: "county", State: "fl"})
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{Places: []string{"fl-orange"}})
	must(t, err)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.Watch = true })
	for i := range 3 {
		mustPublishRows(t, em, dsWatched, watchRows(i+1, 30))
		mustSync(t, r)
	}
	must(t, r.Advance(ctx, "m", mustChanges(t, r, "m")))
	seen := tableRows(t, r, dsWatched)
	must(t, em.PatchSubscription(sub, emulator.SubscriptionSpec{Places: []string{"fl-leon"}}))
	mustPublishRows(t, em, dsWatched, watchRows(5, 30))
	mustSync(t, r)
	d := datasetRow(t, r, dsWatched)
	if d.Source != storage.SourceWatch {
		t.Fatalf("out of the subscription, watched: source %s, want watch", d.Source)
	}
	// The mark is in the watch's numbers now: just before the version the
	// watch took over at (the emulator's Ploti numbers run ahead of its
	// Data Feeds numbers, so the changes below would read right either way).
	marks, err := r.db.Marks(ctx, "m")
	must(t, err)
	if len(marks) != 1 || marks[0].Version != d.Version-1 {
		t.Fatalf("mark m after the watch took over at v%d: %+v, want v%d", d.Version, marks, d.Version-1)
	}
	now := tableRows(t, r, dsWatched)
	dc := datasetChangesOf(t, mustChanges(t, r, "m", dsWatched), dsWatched)
	assertChangesBetween(t, dc, seen, now)
}
