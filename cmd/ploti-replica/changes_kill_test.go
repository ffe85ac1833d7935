package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestHelperCLI is not a test: tests run the test binary again with
// PLOTI_TEST_CLI set to a JSON list of arguments, and this runs the
// command line in that process, on its own stdout, as a consumer's shell
// would run ploti-replica.
func TestHelperCLI(t *testing.T) {
	spec := os.Getenv("PLOTI_TEST_CLI")
	if spec == "" {
		t.Skip("a helper process: the command line in a process of its own")
	}
	var args []string
	if err := json.Unmarshal([]byte(spec), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(run(t.Context(), &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}, args))
}

// cliProcess starts the command line in a process of its own, its stdout
// a pipe the caller reads.
func cliProcess(t *testing.T, vars map[string]string, args ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	spec, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$")
	cmd.Env = append(os.Environ(), "PLOTI_TEST_CLI="+string(spec))
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, out
}

// Done when: "a consumer that reads, dies before --advance, and
// reads again gets the same rows; after --advance, only newer ones". The
// consumer is a real process, `changes --mark agent --json --advance`,
// whose reader takes the first part of its output and stops reading: the
// process blocks writing the rest, and is killed (SIGKILL) there, before
// it could move the mark. Run again to the end, it prints the same bytes
// and moves the mark; then a new version lists only what it changed.
func TestChanges_ConsumerKilledBeforeAdvance(t *testing.T) {
	t.Run("history", func(t *testing.T) { testConsumerKilled(t, "--history", "all") })
	t.Run("log", func(t *testing.T) { testConsumerKilled(t) })
}

func testConsumerKilled(t *testing.T, syncArgs ...string) {
	w := newCrashWorld(t)
	vars := map[string]string{"PLOTI_API_URL": w.em.URL(), "PLOTI_API_KEY": w.em.APIKey(), "PLOTI_SUBSCRIPTION": w.sub,
		"PLOTI_DB": filepath.Join(t.TempDir(), "feeds.duckdb")}
	sync := func() {
		t.Helper()
		if code, out, errs := cli(t, vars, append([]string{"sync"}, syncArgs...)...); code != exitOK {
			t.Fatalf("sync: %d\n%s%s", code, out, errs)
		}
	}
	sync()
	if cs := changesJSON(t, vars, "--mark", "agent", "--advance"); countChanges(cs) != 0 {
		t.Fatalf("a new mark on a first sync: %+v", cs)
	}
	w.publish(t, "ds_permits", permitsAt(1))
	w.publish(t, "ds_parcels", parcelsAt(1, true))
	sync()
	code, want, errs := cli(t, vars, "changes", "--mark", "agent", "--json")
	if code != exitOK || len(want) < 256<<10 {
		// The kill below needs the consumer blocked on a full pipe.
		t.Fatalf("changes: exit %d, %d bytes (want more than a pipe holds)\n%s", code, len(want), errs)
	}

	// The consumer reads 16 KiB and stops; its process blocks on the full
	// pipe and is killed.
	cmd, out := cliProcess(t, vars, "changes", "--mark", "agent", "--json", "--advance")
	head := make([]byte, 16<<10)
	if _, err := io.ReadFull(out, head); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix([]byte(want), head) {
		t.Fatalf("the killed consumer's first bytes are not the changes':\n%s", head)
	}
	time.Sleep(300 * time.Millisecond) // let it fill the pipe
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the consumer ended before it was killed: %v", cmd.ProcessState)
	}

	// Read again, in a process of its own, to the end: the same bytes.
	cmd, out = cliProcess(t, vars, "changes", "--mark", "agent", "--json", "--advance")
	again, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("changes --advance: %v", err)
	}
	if string(again) != want {
		t.Fatalf("after the kill, the changes differ (%d bytes, then %d)", len(want), len(again))
	}
	if cs := changesJSON(t, vars, "--mark", "agent"); countChanges(cs) != 0 {
		t.Fatalf("after --advance, changes remain: %d", countChanges(cs))
	}

	// Only newer ones: the next version's changes, as many of each kind
	// as the emulator's release counts.
	rel := w.publish(t, "ds_parcels", parcelsAt(2, true))
	sync()
	next := changesJSON(t, vars, "--mark", "agent")
	for _, d := range next.Datasets {
		if d.DatasetID != "ds_parcels" {
			if len(d.Changes) != 0 || d.FromVersion != d.ToVersion {
				t.Fatalf("%s did not move, yet lists %d changes from v%d to v%d", d.DatasetID, len(d.Changes), d.FromVersion, d.ToVersion)
			}
			continue
		}
		c := d.Counts
		if d.FromVersion != 2 || d.ToVersion != 3 || int64(c.Added) != rel.Added || int64(c.Changed) != rel.Changed || int64(c.Removed) != rel.Removed || c.Renamed != 0 {
			t.Fatalf("parcels after the advance: v%d to v%d, %+v; want v2 to v3, the release's %d added, %d changed, %d removed",
				d.FromVersion, d.ToVersion, c, rel.Added, rel.Changed, rel.Removed)
		}
	}
}
