package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeHold starts a helper process that writes path for d (as a running
// sync does), and returns its pid once it holds the file.
func writeHold(t *testing.T, path string, d time.Duration) int {
	t.Helper()
	pid, _ := holdFileAs(t, path, d, "write")
	return pid
}

// lineWatch is an io.Writer that hands on each write as it comes.
type lineWatch struct {
	lines chan string
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.lines <- string(p)
	return len(p), nil
}

// A reader waiting for another process's lock says so at once on stderr,
// naming the process, instead of sitting silent up to --lock-timeout; with
// --lock-timeout 0 it does not wait, and its error says who holds it.
func TestStatus_saysAtOnceItWaitsForTheLock(t *testing.T) {
	_, _, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	path := vars["PLOTI_DB"]
	for _, args := range [][]string{{"status", "--lock-timeout", "20s"}, {"holds", "list", "--lock-timeout", "20s"}} {
		pid := writeHold(t, path, 3*time.Second)
		w := &lineWatch{lines: make(chan string, 16)}
		done := make(chan int, 1)
		start := time.Now()
		go func() {
			env := &Env{Stdout: &strings.Builder{}, Stderr: w, Getenv: func(k string) string { return vars[k] }}
			done <- run(context.Background(), env, args)
		}()
		select {
		case line := <-w.lines:
			want := "ploti-replica: waiting for " + path + ": held by PID " + strconv.Itoa(pid)
			if !strings.HasPrefix(line, want) || !strings.Contains(line, "up to 20s (--lock-timeout)") || time.Since(start) > 2*time.Second {
				t.Errorf("%v: after %s: %q; want at once %q", args, time.Since(start), line, want)
			}
		case code := <-done:
			t.Fatalf("%v: exit %d before saying it waited", args, code)
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: nothing said while waiting", args)
		}
		if code := <-done; code != exitOK {
			t.Fatalf("%v: exit %d once the writer let go", args, code)
		}
	}
	writeHold(t, path, 3*time.Second)
	code, _, errs := cli(t, vars, "status", "--lock-timeout", "0")
	if code != exitLocked || strings.Contains(errs, "waiting for") || !strings.Contains(errs, "PID") {
		t.Fatalf("status --lock-timeout 0: exit %d, %q; want %d naming the holder, without waiting", code, errs, exitLocked)
	}
}

// A file follows the API server it records: another one from
// PLOTI_API_URL is refused, naming both, until --api-url says so on the
// command line.
func TestSync_refusesAnotherAPIServerUnlessTold(t *testing.T) {
	_, _, vars := demoWorld(t)
	mustCLI(t, vars, "sync")
	other := map[string]string{}
	for k, v := range vars {
		other[k] = v
	}
	const elsewhere = "http://127.0.0.1:9"
	other["PLOTI_API_URL"] = elsewhere
	for _, args := range [][]string{{"sync"}, {"status", "--behind"}, {"serve", "--listen", "127.0.0.1:0"}} {
		// Bounded: a serve that took the other server would run on.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var errb strings.Builder
		code := run(ctx, &Env{Stdout: &strings.Builder{}, Stderr: &errb, Getenv: func(k string) string { return other[k] }}, args)
		cancel()
		errs := errb.String()
		if code != exitUsage || !strings.Contains(errs, vars["PLOTI_API_URL"]) || !strings.Contains(errs, elsewhere+" (PLOTI_API_URL)") ||
			!strings.Contains(errs, "--api-url "+elsewhere) {
			t.Errorf("%v with PLOTI_API_URL=%s: exit %d, %q; want %d naming both servers", args, elsewhere, code, errs, exitUsage)
		}
	}
	// Told on the command line: the sync goes there (and fails to
	// connect, as nothing listens).
	if code, _, errs := cli(t, other, "sync", "--api-url", elsewhere, "--max-attempts", "1"); code != exitFailure || strings.Contains(errs, "follows the API") {
		t.Fatalf("sync --api-url %s: exit %d, %q; want it tried", elsewhere, code, errs)
	}
	// The same server, written with a slash, is the same.
	other["PLOTI_API_URL"] = vars["PLOTI_API_URL"] + "/"
	mustCLI(t, other, "sync")
}

// --geometry converting an existing file's tables says so on stderr
// before it starts; a file already so, or a new one, says nothing.
func TestSync_geometryConversionIsSaid(t *testing.T) {
	_, _, vars := demoWorld(t)
	code, _, errs := cli(t, vars, "sync", "--geometry", "wkb")
	if code != exitOK || strings.Contains(errs, "converts") {
		t.Fatalf("a new file: exit %d, %q", code, errs)
	}
	if _, _, errs := cli(t, vars, "sync", "--geometry", "wkb"); strings.Contains(errs, "converts") {
		t.Fatalf("a file already wkb: %q", errs)
	}
	code, _, errs = cli(t, vars, "sync", "--geometry", "geometry")
	want := "ploti-replica: " + vars["PLOTI_DB"] + " stores geometry as wkb: --geometry geometry converts the geometry columns of its 3 table(s) now"
	if code != exitOK || !strings.Contains(errs, want) {
		t.Fatalf("converting: exit %d, %q; want %q", code, errs, want)
	}
}
