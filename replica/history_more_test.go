package replica

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// "record_ids_changed and watch renames keep a record's history under its
// new id (the id map links them)": either id tells the whole story.
func TestHistory_StoryFollowsRenames(t *testing.T) {
	onlyInAFile(t, "history")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, _, parcels := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.History = []string{"ds_parcels"} })
	mustSync(t, r)
	old := renameIDs(t, r, "ds_parcels", 1)[0]
	rows := parcels(1)
	_, err := em.Publish(ctx, "ds_parcels", rows)
	must(t, err)
	mustSync(t, r)
	_, err = em.Publish(ctx, "ds_parcels", parcels(2), emulator.WithRenames(old))
	must(t, err)
	mustSync(t, r)
	var renamed string
	must(t, r.DB().QueryRowContext(ctx, "SELECT to_id FROM _ploti.id_map WHERE dataset_id = 'ds_parcels' AND from_id = ?", old).Scan(&renamed))
	_, err = em.Publish(ctx, "ds_parcels", parcels(3))
	must(t, err)
	mustSync(t, r)
	for _, id := range []string{old, renamed} {
		story, err := r.Story(ctx, "ds_parcels", id)
		must(t, err)
		var ids []string
		for _, s := range story {
			ids = append(ids, fmt.Sprintf("%s@v%d:%s", s.RecordID, s.ValidFrom, s.Change))
		}
		// v1 first, then v3 renamed; v2 and v4 may change it (its acres).
		if len(story) < 2 || story[0].RecordID != old || story[0].Change != storage.HistoryFirst || story[len(story)-1].RecordID != renamed {
			t.Fatalf("story of %s: %v", id, ids)
		}
		sawRename := false
		for _, s := range story {
			if s.Change == storage.HistoryRenamed {
				sawRename = s.RecordID == renamed && s.ValidFrom == 3 && s.OriginID == old
			}
		}
		if !sawRename {
			t.Fatalf("story of %s has no rename to %s at v3: %v", id, renamed, ids)
		}
	}
	// Permits keep no history: asked, the answer says how to start one.
	if _, err := r.Story(ctx, "ds_permits", "x"); !errors.Is(err, storage.ErrNoHistory) {
		t.Fatalf("story of a dataset without history: %v", err)
	}
}

// "Turning history on for a dataset already held starts its history at the
// held version", and a history that was off for some versions records
// what differs at the version held when it is on again.
func TestHistory_TurnedOnLaterStartsAtTheHeldVersion(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	path := filepath.Join(t.TempDir(), "replica.duckdb")
	withHistory := func(on bool) *Replica {
		t.Helper()
		r := mustOpen(t, em, sub, path, func(o *Options) {
			if on {
				o.History = []string{HistoryAll}
			}
		})
		return r
	}
	publish := func(round int) {
		t.Helper()
		_, err := em.Publish(ctx, "ds_permits", permits(round))
		must(t, err)
	}
	r := withHistory(false)
	mustSync(t, r)
	publish(1)
	mustSync(t, r)
	r.Close()

	r = withHistory(true)
	mustSync(t, r) // nothing new: the history starts at v2
	assertHistoryMatchesTruth(t, r, em, "ds_permits", []int{2})
	if _, err := r.Diff(ctx, "ds_permits", 1, 2); !errors.Is(err, ErrVersionNotKept) {
		t.Fatalf("diff from before the history began: %v", err)
	}
	publish(2)
	mustSync(t, r)
	assertHistoryMatchesTruth(t, r, em, "ds_permits", []int{2, 3})
	r.Close()

	// Off for two versions, then on again: v5's differences from v3 are
	// recorded at v5; v4 was never recorded.
	r = withHistory(false)
	publish(3)
	mustSync(t, r)
	publish(4)
	mustSync(t, r)
	r.Close()
	r = withHistory(true)
	mustSync(t, r)
	assertHistoryMatchesTruth(t, r, em, "ds_permits", []int{2, 3, 5})
}

// --history-keep prunes, after a sync, what no kept version can show; a
// mark keeps what it has not seen.
func TestHistory_KeepPrunesOldVersions(t *testing.T) {
	onlyInAFile(t, "history")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	logs := &lockedLog{}
	r := mustOpen(t, em, sub, "", func(o *Options) {
		o.History = []string{"ds_permits"}
		o.HistoryKeep = HistoryKeep{Versions: 2}
		o.Logger = logs.logger()
	})
	mustSync(t, r)
	count := func() (n int) {
		must(t, r.DB().QueryRowContext(ctx, "SELECT count(*) FROM _ploti_history.ds_permits").Scan(&n))
		return n
	}
	for round := 1; round <= 3; round++ {
		_, err := em.Publish(ctx, "ds_permits", permits(round))
		must(t, err)
		mustSync(t, r)
	}
	st, err := r.db.Engine().(storage.HistoryReader).HistoryOf(ctx, "ds_permits", "ds_permits")
	must(t, err)
	if st.Oldest != 3 || st.Last != 4 {
		t.Fatalf("--history-keep 2 keeps v%d..v%d, want v3..v4", st.Oldest, st.Last)
	}
	assertHistoryMatchesTruth(t, r, em, "ds_permits", []int{3, 4})
	if _, err := r.Diff(ctx, "ds_permits", 2, 4); !errors.Is(err, ErrVersionNotKept) {
		t.Fatalf("diff from a pruned version: %v", err)
	}
	before := count()
	must(t, r.Advance(ctx, "slow", mustChanges(t, r, "slow")))
	for round := 4; round <= 5; round++ {
		_, err := em.Publish(ctx, "ds_permits", permits(round))
		must(t, err)
		mustSync(t, r)
	}
	if st, _ := r.db.Engine().(storage.HistoryReader).HistoryOf(ctx, "ds_permits", "ds_permits"); st.Oldest != 4 {
		t.Fatalf("a mark at v4 keeps the history from v4, kept from v%d", st.Oldest)
	}
	if !strings.Contains(logs.String(), `"mark":"slow","dataset":"ds_permits","mark_version":4`) {
		t.Fatalf("the history kept past --history-keep for mark slow without a warning:\n%s", logs)
	}
	assertChangesMatchTruth(t, r, em, datasetChangesOf(t, mustChanges(t, r, "slow", "ds_permits"), "ds_permits"), 4, 6)
	if after := count(); after <= before-5 {
		t.Fatalf("rows %d then %d", before, after)
	}
}

// A reload at the version last recorded (a rebootstrap) changes no
// answer of the history.
func TestHistory_RebootstrapRecordsNothingNew(t *testing.T) {
	onlyInAFile(t, "history")
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	r := mustOpen(t, em, sub, "", func(o *Options) { o.History = []string{HistoryAll} })
	mustSync(t, r)
	_, err := em.Publish(ctx, "ds_permits", permits(1))
	must(t, err)
	mustSync(t, r)
	var rows, ends int
	read := func() (int, int) {
		var a, b int
		must(t, r.DB().QueryRowContext(ctx, "SELECT (SELECT count(*) FROM _ploti_history.ds_permits), (SELECT count(*) FROM _ploti.history_ends)").Scan(&a, &b))
		return a, b
	}
	rows, ends = read()
	if _, err := r.Rebootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if a, b := read(); a != rows || b != ends {
		t.Fatalf("a rebootstrap at the versions held wrote history: rows %d→%d, ends %d→%d", rows, a, ends, b)
	}
	assertHistoryMatchesTruth(t, r, em, "ds_permits", []int{1, 2})
}
