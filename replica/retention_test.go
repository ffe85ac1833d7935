package replica

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
)

// feed-events.txt: "A cursor older than retention ... returns 410 expired
// ... Reload from the subscription's manifest". The reload jumps over a
// record_ids_changed version whose files are past retention by then: the
// id map that --id-ref columns would follow cannot be read. The reload
// goes on, says so, and the columns keep the ids they had (decision 46);
// it used to fail the dataset, and every repair after it.
func TestScenario_ExpiredCursorPastAnIDMap(t *testing.T) {
	ctx := context.Background()
	em := mustEmulator(t)
	sub, permits, _ := seedTwo(t, em)
	logs := &lockedLog{}
	refs := []IDRef{{Table: "my_notes", Column: "permit_record", DatasetID: "ds_permits"}}
	r := mustOpen(t, em, sub, "", func(o *Options) {
		o.IDReferences = refs
		o.Logger = logs.logger()
	})
	mustSync(t, r)
	_, err := r.DB().Exec(`CREATE TABLE my_notes AS SELECT _ploti_record_id AS permit_record, permit FROM ds_permits`)
	must(t, err)
	rel, err := em.Publish(ctx, "ds_permits", permits(1), emulator.WithReplacedIDs(0.5))
	must(t, err)
	if rel.ResyncReason != "record_ids_changed" {
		t.Fatalf("emulator: %+v", rel)
	}
	em.Advance(91 * 24 * time.Hour)
	_, err = em.Publish(ctx, "ds_permits", permits(2))
	must(t, err)
	res := mustSync(t, r)
	if !res.Bootstrapped {
		t.Fatalf("want a reload from the manifest after 410: %+v", res)
	}
	if d := datasetRow(t, r, "ds_permits"); d.Status != storage.StatusCurrent {
		t.Fatalf("ds_permits %s: %s", d.Status, d.StatusReason)
	}
	assertMatchesTruth(t, r, em, "ds_permits", 3)
	if !strings.Contains(logs.String(), `"dataset":"ds_permits","version":2,"held":1`) {
		t.Fatalf("no warning that v2's id map is past retention:\n%s", logs)
	}
	var stale int
	must(t, r.DB().QueryRow(`SELECT count(*) FROM my_notes n JOIN ds_permits p ON p.permit = n.permit WHERE p._ploti_record_id <> n.permit_record`).Scan(&stale))
	if stale == 0 {
		t.Fatal("the notes followed ids through a map nobody could read?")
	}
}
