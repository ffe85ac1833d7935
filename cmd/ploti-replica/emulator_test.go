package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/replica"
)

// startEmulatorCmd runs `ploti-replica emulator` in-process with args
// until the test ends, and returns the variables its banner prints.
func startEmulatorCmd(t *testing.T, args ...string) (map[string]string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	env := &Env{Stdout: out, Stderr: out, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	// The folder is made here, not in the goroutine: its removal, registered
	// first, then runs after the cleanup below has stopped the emulator.
	dir := t.TempDir()
	go func() {
		done <- run(ctx, env, append([]string{"emulator", "--listen", "127.0.0.1:0", "--files-listen", "127.0.0.1:0", "--dir", dir}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("emulator: exit %d\n%s", code, out)
		}
	})
	export := regexp.MustCompile(`export PLOTI_API_URL=(\S+) PLOTI_API_KEY=(\S+) PLOTI_SUBSCRIPTION=(\S+)`)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := export.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), "Ctrl-C") {
			return map[string]string{"PLOTI_API_URL": m[1], "PLOTI_API_KEY": m[2], "PLOTI_SUBSCRIPTION": m[3],
				"PLOTI_DB": filepath.Join(t.TempDir(), "try.duckdb")}, out
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("emulator ended: exit %d\n%s", code, out)
		default:
		}
	}
	t.Fatalf("no banner:\n%s", out)
	return nil, nil
}

func syncJSON(t *testing.T, vars map[string]string) replica.SyncResult {
	t.Helper()
	code, out, errs := cli(t, vars, "sync", "--json")
	var res replica.SyncResult
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errs)
	}
	return res
}

// The standalone emulator serves the demo's world, the watched dataset
// included, and with --publish-every moves on by itself: a sync a few
// seconds after another applies new versions of every dataset. (By hand:
// --publish-every 3s and syncs 8 s apart.)
func TestEmulatorCommand_publishEvery(t *testing.T) {
	vars, out := startEmulatorCmd(t, "--publish-every", "1s")
	for _, want := range []string{"ploti-replica emulator publish", "fail-next", emulator.ControlPrefix + "hold", "Publishing a round every 1s",
		"watch add " + emulator.DemoWatched} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the banner lacks %q:\n%s", want, out)
		}
	}
	if code, o, errs := cli(t, vars, "watch", "add", emulator.DemoWatched); code != exitOK {
		t.Fatalf("watch add %s: exit %d\n%s\n%s", emulator.DemoWatched, code, o, errs)
	}
	first := syncJSON(t, vars)
	if len(first.Moves) != 4 {
		t.Fatalf("the first sync moved %+v, want the 3 subscribed datasets and the watched one", first.Moves)
	}
	time.Sleep(3 * time.Second)
	second := syncJSON(t, vars)
	moved := map[string]bool{}
	for _, m := range second.Moves {
		moved[m.DatasetID] = m.To > m.From && m.From > 0
	}
	for _, id := range []string{emulator.DemoPermits, emulator.DemoParcels, emulator.DemoInspections, emulator.DemoWatched} {
		if !moved[id] {
			t.Errorf("the second sync did not move %s to a newer version: %+v", id, second.Moves)
		}
	}
	if !strings.Contains(out.String(), " published "+emulator.DemoPermits+" v") {
		t.Fatalf("the emulator printed no round:\n%s", out)
	}
}

// Each control command reaches the running emulator and does what its
// method does: a sync or the emulator's Go API sees it.
func TestEmulatorCommand_control(t *testing.T) {
	em, _, vars := demoWorldSeeded(t, emulator.SeedDemoWorld)
	syncJSON(t, vars)
	ctl := func(want string, args ...string) {
		t.Helper()
		code, out, errs := cli(t, vars, append([]string{"emulator"}, args...)...)
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("emulator %s: exit %d, want %q\n%s\n%s", strings.Join(args, " "), code, want, out, errs)
		}
	}
	ctl(emulator.DemoParcels+" v2 updated", "publish", emulator.DemoParcels)
	ctl(emulator.DemoPermits+" v2 held for review (row_drop)", "hold", emulator.DemoPermits)
	ctl("resync_required (record_ids_changed)", "rename-ids", emulator.DemoInspections)
	res := syncJSON(t, vars)
	moves := map[string]int{}
	for _, m := range res.Moves {
		moves[m.DatasetID] = m.To
	}
	held := len(res.Holds) == 1 && res.Holds[0].DatasetID == emulator.DemoPermits && res.Holds[0].Kind == replica.HoldServer
	if moves[emulator.DemoParcels] != 2 || moves[emulator.DemoInspections] != 2 || moves[emulator.DemoPermits] != 0 || !held {
		t.Fatalf("after publish, hold and rename-ids the sync moved %v and holds %+v; want parcels and inspections at 2, the permits held by Ploti", moves, res.Holds)
	}
	ctl(emulator.DemoPermits+" v2 updated", "release", emulator.DemoPermits)
	if res := syncJSON(t, vars); len(res.Moves) != 1 || res.Moves[0].DatasetID != emulator.DemoPermits || len(res.Holds) != 0 {
		t.Fatalf("after release the sync moved %+v, holds %+v; want the permits to v2 and no hold", res.Moves, res.Holds)
	}
	ctl("sent data_request.ready", "request-event", "data_request.ready", "--request", "req_7")
	mev := em.MemberEvents()
	if last := mev[len(mev)-1]; last.Type != "data_request.ready" || last.Data["requestId"] != "req_7" {
		t.Fatalf("the last member event is %s %v, want data_request.ready for req_7", last.Type, last.Data)
	}
	ctl("the next 1 request(s) matching /v1/places answer 500", "fail-next", "--status", "500", "--path", "/v1/places")
	if code, _, _ := cli(t, vars, "places", "--max-attempts", "1"); code == exitOK || em.FaultHits()[emulator.FaultStatus] != 1 {
		t.Fatalf("places after fail-next: exit %d, fault hits %v; want a failure and one hit", code, em.FaultHits())
	}
	code, _, errs := cli(t, vars, "emulator", "publish", "--api-key", "not_the_key")
	if code != exitFailure || !strings.Contains(errs, "refused the key (401)") {
		t.Fatalf("publish with another key: exit %d, %s", code, errs)
	}
}
