package main

// "The CLI": each behaviour a user meets at the shell, tested
// against the built binary (items 5 to 16; item 13 is in manage_test.go).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

var shellBin struct {
	once sync.Once
	path string
	err  error
}

// TestMain removes the binary shellBinary built, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if shellBin.path != "" {
		os.RemoveAll(filepath.Dir(shellBin.path))
	}
	os.Exit(code)
}

// shellBinary builds ploti-replica once for the package's tests that run
// it as a child process (the shell tests, the crash harnesses).
func shellBinary(t *testing.T) string {
	t.Helper()
	shellBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "ploti-shell-")
		if err != nil {
			shellBin.err = err
			return
		}
		shellBin.path = filepath.Join(dir, "ploti-replica")
		out, err := exec.Command("go", "build", "-o", shellBin.path, ".").CombinedOutput()
		if err != nil {
			shellBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if shellBin.err != nil {
		t.Fatal(shellBin.err)
	}
	return shellBin.path
}

// shellRun is one run of the binary.
type shellRun struct {
	code           int
	stdout, stderr string
}

// sh runs the binary with only vars (and a private HOME) in its
// environment, so that nothing of the developer's shell leaks in.
func sh(t *testing.T, vars map[string]string, args ...string) shellRun {
	t.Helper()
	cmd := exec.Command(shellBinary(t), args...)
	cmd.Env = shellEnv(t, vars)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return shellRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

func shellEnv(t *testing.T, vars map[string]string) []string {
	env := []string{"PATH=" + os.Getenv("PATH")}
	if _, ok := vars["HOME"]; !ok {
		env = append(env, "HOME="+t.TempDir())
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

func (r shellRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// lines counts the non-empty lines of s.
func lines(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// syncedFile syncs the demo world into a new file with the binary.
func syncedFile(t *testing.T) (*emulator.Emulator, *emulator.Demo, map[string]string) {
	t.Helper()
	em, d, vars := demoWorld(t)
	if r := sh(t, vars, "sync"); r.code != exitOK {
		t.Fatalf("sync: %s", r)
	}
	return em, d, vars
}

func mustDuckDB(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// demo --db replaced any file with no word.
// A --db in a folder that does not exist is refused before the demo starts
// (no emulator, no output), naming the folder, not with DuckDB's own "No
// such file or directory" at the end of the walk-through.
func TestDemo_intoAMissingFolderSaysSoFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-made-yet")
	r := sh(t, nil, "demo", "--db", filepath.Join(dir, "demo.duckdb"))
	if r.code != exitFailure || !strings.Contains(r.stderr, dir+" does not exist") || r.stdout != "" {
		t.Fatalf("demo into a missing folder must fail first, naming the folder: %s", r)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("demo made the folder")
	}
}

func TestDemo_replacesOnlyItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("my notes\n"), 0o644)
	user := filepath.Join(dir, "mine.duckdb")
	mustDuckDB(t, user, "CREATE TABLE precious AS SELECT 42 AS answer")
	_, _, vars := syncedFile(t)
	replicaFile := vars["PLOTI_DB"]
	for _, path := range []string{text, user, replicaFile} {
		before, _ := os.ReadFile(path)
		r := sh(t, nil, "demo", "--db", path)
		after, _ := os.ReadFile(path)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--force") || !bytes.Equal(before, after) {
			t.Fatalf("demo over %s must refuse and leave it as it was (changed: %v): %s", path, !bytes.Equal(before, after), r)
		}
	}
	demo := filepath.Join(dir, "demo.duckdb")
	if r := sh(t, nil, "demo", "--db", demo); r.code != exitOK {
		t.Fatalf("demo into a new file: %s", r)
	}
	if r := sh(t, nil, "demo", "--db", demo); r.code != exitOK {
		t.Fatalf("demo over an earlier demo file: %s", r)
	}
	if r := sh(t, nil, "demo", "--db", text, "--force"); r.code != exitOK {
		t.Fatalf("demo --force over a text file: %s", r)
	}
	if r := sh(t, nil, "status", "--db", text); r.code != exitOK {
		t.Fatalf("the forced demo file should be a replica: %s", r)
	}
}

// A stored wrong API URL must not stick for good. A file follows the
// server it records, so PLOTI_API_URL alone does not move it (it names
// both); --api-url on the command line does, and is recorded.
func TestSync_keepsTheAPIURLOfTheLastSuccessfulRun(t *testing.T) {
	em, d, vars := syncedFile(t)
	dead := "http://127.0.0.1:1"
	mustDuckDB(t, vars["PLOTI_DB"], "UPDATE _ploti.subscription SET api_url = '"+dead+"'")
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, vars, "sync"); r.code != exitUsage || !strings.Contains(r.stderr, dead) || !strings.Contains(r.stderr, "--api-url "+em.URL()) {
		t.Fatalf("sync with another URL in PLOTI_API_URL only: %s", r)
	}
	if r := sh(t, vars, "sync", "--api-url", em.URL()); r.code != exitOK {
		t.Fatalf("sync with the right URL in --api-url: %s", r)
	}
	r := sh(t, vars, "status", "--json")
	var st struct {
		APIURL string `json:"apiUrl"`
	}
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &st) != nil || st.APIURL != em.URL() {
		t.Fatalf("status should show the URL of the last successful sync, %s: %s", em.URL(), r)
	}
	noURL := map[string]string{"PLOTI_API_KEY": vars["PLOTI_API_KEY"], "PLOTI_DB": vars["PLOTI_DB"]}
	if err := d.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, noURL, "sync"); r.code != exitOK || !strings.Contains(r.stdout, "3 changes file(s) merged") {
		t.Fatalf("a sync without --api-url should use the stored, working URL: %s", r)
	}
}

// Commands that only read or edit state created an empty file.
func TestCommands_createNoFileExceptSync(t *testing.T) {
	em, d, vars := demoWorld(t)
	missing := filepath.Join(t.TempDir(), "missing.duckdb")
	for _, args := range [][]string{
		{"status"}, {"status", "--behind"}, {"holds", "list"}, {"holds", "release", emulator.DemoPermits},
	} {
		v := map[string]string{"PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": em.APIKey(), "PLOTI_SUBSCRIPTION": d.SubscriptionID, "PLOTI_DB": missing}
		r := sh(t, v, args...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "no such file") || lines(r.stderr) != 1 {
			t.Fatalf("%v on a missing file: want one line saying no such file: %s", args, r)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v created %s", args, missing)
		}
	}
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error": {"code": "not_found", "message": "no such route"}}`))
	}))
	defer notFound.Close()
	for name, v := range map[string]map[string]string{
		"wrong key": {"PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": "wrong", "PLOTI_SUBSCRIPTION": d.SubscriptionID},
		"wrong URL": {"PLOTI_API_URL": notFound.URL, "PLOTI_API_KEY": em.APIKey(), "PLOTI_SUBSCRIPTION": d.SubscriptionID},
		"wrong id":  {"PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": em.APIKey(), "PLOTI_SUBSCRIPTION": "sub_nope"},
	} {
		v["PLOTI_DB"] = missing
		if r := sh(t, v, "sync"); r.code == exitOK {
			t.Fatalf("sync with a %s succeeded: %s", name, r)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("sync with a %s left %s behind", name, missing)
		}
	}
	vars["PLOTI_DB"] = missing
	if r := sh(t, vars, "sync"); r.code != exitOK {
		t.Fatalf("sync with the right key creates the file: %s", r)
	}
}

// A SQLite file made DuckDB fetch sqlite_scanner into ~/.duckdb.
func TestSQLiteFile_isRefusedInWordsWithoutADownload(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(t.TempDir(), "app.db")
	head := append([]byte("SQLite format 3\x00"), make([]byte, 4080)...)
	binary.BigEndian.PutUint16(head[16:], 4096)
	os.WriteFile(path, head, 0o644)
	em, d, _ := demoWorld(t)
	vars := map[string]string{"HOME": home, "PLOTI_DB": path, "PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": em.APIKey(), "PLOTI_SUBSCRIPTION": d.SubscriptionID}
	for _, args := range [][]string{{"status"}, {"holds", "list"}, {"sync"}} {
		r := sh(t, vars, args...)
		if r.code == exitOK || !strings.Contains(r.stderr, "not a DuckDB file (it is a SQLite database)") {
			t.Fatalf("%v on a SQLite file: %s", args, r)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".duckdb")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("~/.duckdb was created: DuckDB tried to install an extension")
	}
}

// --lock-timeout 0 waited the default 30 s, -1s printed "gave up after -1s".
func TestLockTimeout_zeroDoesNotWait(t *testing.T) {
	_, _, vars := syncedFile(t)
	holdFile(t, vars["PLOTI_DB"], 20*time.Second)
	start := time.Now()
	r := sh(t, vars, "sync", "--lock-timeout", "0")
	if r.code != exitLocked || !strings.Contains(r.stderr, "told not to wait") || time.Since(start) > 15*time.Second {
		t.Fatalf("sync --lock-timeout 0 on a held file should give up at once with exit 4 (took %s): %s", time.Since(start), r)
	}
	r = sh(t, vars, "status", "--lock-timeout", "-1s")
	if r.code != exitUsage || !strings.Contains(r.stderr, "want 0 (do not wait) or more") {
		t.Fatalf("a negative --lock-timeout is a usage error: %s", r)
	}
	if r := sh(t, nil, "sync", "--help"); !strings.Contains(r.stdout, "0: do not wait") {
		t.Fatalf("--help should say what 0 means: %s", r)
	}
}

// Usage errors exit 2 with one line.
func TestExitCodes_usageErrorsExit2WithOneLine(t *testing.T) {
	_, _, vars := demoWorld(t)
	for _, args := range [][]string{
		{"frobnicate"},
		{"holds", "frobnicate"},
		{"status", "extra"},
		{"holds", "release"},
		{"holds", "release", "a", "b"},
		{"sync", "--api-url", "not a url"},
		{"sync", "--api-url", "ftp://example.org"},
		{"sync", "--memory-limit", "lots"},
		{"sync", "--log-level", "loud"},
		{"status", "--log-level", "loud"},
		{"holds", "list", "--log-level", ""},
		{"changes", "--mark", "m", "--log-format", "fancy"},
		{"status", "--no-such-flag"},
	} {
		r := sh(t, vars, args...)
		if r.code != exitUsage || lines(r.stderr) != 1 {
			t.Fatalf("%v: want exit 2 and one line on stderr: %s", args, r)
		}
	}
}

// SIGINT and SIGTERM during a sync exit 130 and 143 with one line.
func TestExitCodes_signalsDuringASync(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(signalName(sig), func(t *testing.T) {
			em, _, vars := demoWorld(t)
			em.Inject(emulator.Fault{Match: "GET /v1/feeds/subscriptions/*/manifest", Kind: emulator.FaultSlow, Delay: 30 * time.Second})
			cmd := exec.Command(shellBinary(t), "sync")
			cmd.Env = shellEnv(t, vars)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // the manifest request is under way
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("sync did not stop on %s", signalName(sig))
			}
			want := exitSignal + int(sig)
			if code := cmd.ProcessState.ExitCode(); code != want || lines(errb.String()) > 2 ||
				!strings.Contains(errb.String(), "stopped by "+signalName(sig)+"; the last committed state stays") {
				t.Fatalf("want exit %d and one clear line, got exit %d:\n%s", want, code, errb.String())
			}
		})
	}
}

// Status on a DuckDB file that is not a replica showed a catalog error.
func TestStatus_onAFileThatIsNotAReplica(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.duckdb")
	mustDuckDB(t, plain, "CREATE TABLE t AS SELECT 1 AS x")
	unmigrated := filepath.Join(dir, "unmigrated.duckdb")
	mustDuckDB(t, unmigrated, "CREATE SCHEMA _ploti; CREATE TABLE _ploti.schema_migrations (version INTEGER, applied_at TIMESTAMPTZ)")
	for path, want := range map[string]string{
		plain:      "not a ploti-replica file: it is a DuckDB file without the _ploti schema",
		unmigrated: "not a ploti-replica file: its _ploti migrations never ran",
	} {
		for _, args := range [][]string{{"status"}, {"holds", "list"}} {
			r := sh(t, map[string]string{"PLOTI_DB": path}, args...)
			if r.code != exitFailure || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "Catalog Error") {
				t.Fatalf("%v on %s: want %q: %s", args, filepath.Base(path), want, r)
			}
		}
	}
}

// Help showed flags a command never reads.
func TestHelp_showsEachCommandsOwnFlags(t *testing.T) {
	for _, c := range []struct {
		args      []string
		has, lack []string
	}{
		{[]string{"webhooks", "list"}, []string{"--api-key", "--json"}, []string{"--on-major", "--db", "--page-size", "--lock-timeout"}},
		{[]string{"subscriptions", "list"}, []string{"--api-url"}, []string{"--on-major", "--keep-changes", "--db"}},
		{[]string{"holds", "list"}, []string{"--db", "--lock-timeout"}, []string{"--api-key", "--on-major"}},
		{[]string{"status"}, []string{"--db", "--behind", "--api-key"}, []string{"--on-major", "--id-ref", "--memory-limit"}},
		{[]string{"sync"}, []string{"--db", "--on-major", "--id-ref", "--page-size", "--keep-changes", "--memory-limit"}, nil},
	} {
		r := sh(t, nil, append(c.args, "--help")...)
		for _, f := range c.has {
			if !strings.Contains(r.stdout, f) {
				t.Errorf("%v --help lacks %s", c.args, f)
			}
		}
		for _, f := range c.lack {
			if strings.Contains(r.stdout, f+" ") {
				t.Errorf("%v --help shows %s, which it does not read", c.args, f)
			}
		}
	}
}

// Serve needed a webhook secret, listened on every interface and
// took the emulator's port.
func TestServe_pollsOnlyWithoutASecretOnLoopback(t *testing.T) {
	if r := sh(t, nil, "serve", "--help"); !strings.Contains(r.stdout, `"127.0.0.1:8790"`) {
		t.Fatalf("serve's default listen address should be loopback, off the emulator's 8080/8081: %s", r)
	}
	_, _, vars := demoWorld(t)
	if r := sh(t, vars, "serve", "--poll", "0"); r.code != exitUsage || !strings.Contains(r.stderr, "nothing would start a sync") {
		t.Fatalf("serve with neither a secret nor polling: %s", r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(shellBinary(t), "serve", "--listen", addr, "--poll", "1s")
	cmd.Env = shellEnv(t, vars)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve without a secret never became healthy:\n%s", errb.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	resp, err := http.Post("http://"+addr+"/ploti", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("without a secret the webhook path should not exist: %d", resp.StatusCode)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	// Log fields carry their unit.
	for _, want := range []string{`"duration_ms":`, `"poll_ms":1000`} {
		if !strings.Contains(errb.String(), want) {
			t.Fatalf("serve's JSON log lacks %s:\n%s", want, errb.String())
		}
	}
}

// One JSON convention.
func TestJSON_oneConvention(t *testing.T) {
	_, _, vars := demoWorld(t)
	r := sh(t, vars, "sync", "--json")
	var res map[string]any
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &res) != nil {
		t.Fatalf("sync --json: %s", r)
	}
	if _, ok := res["durationSeconds"].(float64); !ok {
		t.Errorf("sync --json: want durationSeconds as a number: %v", res)
	}
	if f, ok := res["failed"].([]any); !ok || len(f) != 0 {
		t.Errorf("sync --json: want failed as []: %v", res)
	}
	r = sh(t, vars, "status", "--json")
	var st map[string]any
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &st) != nil {
		t.Fatalf("status --json: %s", r)
	}
	if _, ok := st["behind"]; ok {
		t.Errorf("status --json without --behind: behind should be absent, not -1: %v", st["behind"])
	}
	checkCamel(t, "sync --json", res)
	checkCamel(t, "status --json", st)
}

// checkCamel fails on a key that is not camelCase, at any depth (but
// under "detail", which holds Ploti's own JSON).
func checkCamel(t *testing.T, what string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "" || k[0] < 'a' || k[0] > 'z' || strings.ContainsAny(k, "_- ") {
				t.Errorf("%s: key %q is not camelCase", what, k)
			}
			if k != "detail" {
				checkCamel(t, what, e)
			}
		}
	case []any:
		for _, e := range x {
			checkCamel(t, what, e)
		}
	case nil:
	}
}

// --version.
func TestVersion(t *testing.T) {
	r := sh(t, nil, "--version")
	if r.code != exitOK || !strings.Contains(r.stdout, "ploti-replica ") || !strings.Contains(r.stdout, "commit ") ||
		!strings.Contains(r.stdout, "DuckDB "+backends.DuckDBVersion) {
		t.Fatalf("--version: %s", r)
	}
}

// The storage-version guard.
func TestStorageVersion_guard(t *testing.T) {
	_, _, vars := syncedFile(t)
	r := sh(t, vars, "status")
	if !strings.Contains(r.stdout, "storage version 64, readable by DuckDB 0.10 and later (storage v1.0.0)") {
		t.Fatalf("status should show the storage version and its readers: %s", r)
	}
	// A file a DuckDB 1.5 wrote in its own storage: still ours to sync,
	// and status says who can read it.
	v15 := filepath.Join(t.TempDir(), "v15.duckdb")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("ATTACH '" + v15 + "' AS f (STORAGE_VERSION 'v1.5.0'); CREATE TABLE f.mine AS SELECT 1 AS x; DETACH f"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	vars15 := map[string]string{}
	for k, v := range vars {
		vars15[k] = v
	}
	vars15["PLOTI_DB"] = v15
	if r := sh(t, vars15, "sync"); r.code != exitOK {
		t.Fatalf("sync into a v1.5 storage file: %s", r)
	}
	if r := sh(t, vars15, "status"); !strings.Contains(r.stdout, "storage version 68, readable by DuckDB 1.5 and later") {
		t.Fatalf("status of a v1.5 storage file: %s", r)
	}
	// A file a newer DuckDB wrote (2.0's storage version 69): refused in
	// words, untouched.
	b, err := os.ReadFile(vars["PLOTI_DB"])
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[12:20], 69)
	newer := filepath.Join(t.TempDir(), "newer.duckdb")
	os.WriteFile(newer, b, 0o644)
	vars["PLOTI_DB"] = newer
	for _, args := range [][]string{{"sync"}, {"status"}} {
		r := sh(t, vars, args...)
		after, _ := os.ReadFile(newer)
		if r.code == exitOK || !strings.Contains(r.stderr, "storage version 69") || !strings.Contains(r.stderr, "rebuild the replica into a new --db file") || !bytes.Equal(after, b) {
			t.Fatalf("%v on a storage version 69 file: %s", args, r)
		}
	}
}

// An earlier demo's file that cannot be removed stops the demo with an
// error naming the files it was removing, not only the one that failed.
// The folder is made immutable (chattr +i), which binds root too; the test
// skips where the filesystem or the container refuses chattr.
func TestDemo_cannotClearAnEarlierDemoNamesWhatItWasRemoving(t *testing.T) {
	dir := t.TempDir()
	demo := filepath.Join(dir, "demo.duckdb")
	if r := sh(t, nil, "demo", "--db", demo); r.code != exitOK {
		t.Fatalf("demo into a new file: %s", r)
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	r := sh(t, nil, "demo", "--db", demo)
	if r.code == exitOK || !strings.Contains(r.stderr, "earlier demo's files") ||
		!strings.Contains(r.stderr, demo+".wal") || !strings.Contains(r.stderr, "remove "+demo) {
		t.Fatalf("a demo that cannot remove the earlier demo's file must say which files it was removing: %s", r)
	}
}
