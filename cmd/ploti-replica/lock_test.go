package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// TestHelperHoldFile is not a test: TestSync_waitsForAnotherProcess runs
// the test binary again with PLOTI_TEST_HOLD_FILE set, and this holds that
// DuckDB file open read-only (as an analyst's `duckdb -readonly` would) for
// PLOTI_TEST_HOLD_FOR, after printing "holding".
func TestHelperHoldFile(t *testing.T) {
	path := os.Getenv("PLOTI_TEST_HOLD_FILE")
	if path == "" {
		t.Skip("a helper process for TestSync_waitsForAnotherProcess")
	}
	hold, err := time.ParseDuration(os.Getenv("PLOTI_TEST_HOLD_FOR"))
	if err != nil {
		t.Fatal(err)
	}
	// PLOTI_TEST_HOLD_WRITE: open it for writing, as a running sync does.
	write := os.Getenv("PLOTI_TEST_HOLD_WRITE") != ""
	db, err := backends.Open(context.Background(), path, storage.Options{ReadOnly: !write, LockTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.SQL().QueryRow("SELECT count(*) FROM _ploti.datasets").Scan(&n); err != nil {
		t.Fatal(err)
	}
	fmt.Println("holding")
	time.Sleep(hold)
	db.Close()
}

// holdFile starts a helper process that holds path for d; it returns once
// the file is held, with the helper's pid.
func holdFile(t *testing.T, path string, d time.Duration) (pid int, done <-chan error) {
	t.Helper()
	return holdFileAs(t, path, d, "")
}

// holdFileAs is holdFile; write non-empty opens the file for writing.
func holdFileAs(t *testing.T, path string, d time.Duration, write string) (pid int, done <-chan error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldFile$", "-test.v")
	cmd.Env = append(os.Environ(), "PLOTI_TEST_HOLD_FILE="+path, "PLOTI_TEST_HOLD_FOR="+d.String(), "PLOTI_TEST_HOLD_WRITE="+write)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "holding" {
			ch := make(chan error, 1)
			go func() {
				for sc.Scan() {
				}
				ch <- cmd.Wait()
			}()
			return cmd.Process.Pid, ch
		}
	}
	t.Fatalf("the helper process did not hold %s: %v", path, cmd.Wait())
	return 0, nil
}

// "Other readers" and docs/design.md ("waits (with backoff, and says
// so) while a reader holds it"): while another process holds the file,
// `sync` says once which process it is, waits up to --lock-timeout, and
// then gives up with exit code 4; when the holder lets go within the
// timeout, the sync goes on and succeeds.
func TestSync_waitsForAnotherProcess(t *testing.T) {
	_, _, vars := demoWorld(t)
	path := vars["PLOTI_DB"]
	if code, out, errs := cli(t, vars, "sync"); code != exitOK {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errs)
	}
	waiting := func(stderr string) []string {
		var lines []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, "waiting for the file") {
				lines = append(lines, l)
			}
		}
		return lines
	}

	t.Run("gives up after --lock-timeout", func(t *testing.T) {
		pid, _ := holdFile(t, path, time.Minute)
		start := time.Now()
		code, _, errs := cli(t, vars, "sync", "--lock-timeout", "1500ms", "--log-format", "json")
		took := time.Since(start)
		if code != exitLocked {
			t.Fatalf("exit %d, want %d (locked)\n%s", code, exitLocked, errs)
		}
		holder := "(PID " + strconv.Itoa(pid) + ")"
		if w := waiting(errs); len(w) != 1 || !strings.Contains(w[0], "Conflicting lock") || !strings.Contains(w[0], holder) {
			t.Fatalf("want one warning naming the holder %s, got %q", holder, w)
		}
		last := strings.TrimSpace(errs[strings.LastIndex(strings.TrimSpace(errs), "\n")+1:])
		for _, want := range []string{"ploti-replica: open " + path, "gave up after 1.5s", "locked by another process", holder} {
			if !strings.Contains(last, want) {
				t.Fatalf("last line %q does not say %q", last, want)
			}
		}
		if strings.Contains(last, "read-only mode") {
			t.Fatalf("last line %q passes on DuckDB's hint to open read-only, which sync cannot", last)
		}
		if took < 1400*time.Millisecond || took > 5*time.Second {
			t.Fatalf("gave up after %s, want about the 1.5s of --lock-timeout", took)
		}
	})
	t.Run("goes on when the holder lets go", func(t *testing.T) {
		_, done := holdFile(t, path, 2*time.Second)
		start := time.Now()
		code, out, errs := cli(t, vars, "sync", "--lock-timeout", "3s", "--log-format", "json")
		took := time.Since(start)
		if code != exitOK {
			t.Fatalf("exit %d, want 0 once the holder closed the file after 2s\n%s%s", code, out, errs)
		}
		if err := <-done; err != nil {
			t.Fatalf("the helper: %v", err)
		}
		if w := waiting(errs); len(w) != 1 {
			t.Fatalf("want the wait told once, got %q", w)
		}
		if took < 1500*time.Millisecond {
			t.Fatalf("synced after %s while the file was held for 2s", took)
		}
	})
}
