package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// asUnprivileged runs the binary as a user the file modes hold back: this
// user, or nobody (65534) when the tests run as root, whom modes do not
// hold back.
func asUnprivileged(t *testing.T, bin string, vars map[string]string, args ...string) shellRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(bin)}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return shellRun{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// A file or folder the system refuses is said in the project's words,
// with the path and what to do, not DuckDB's "IO Error: Cannot open file
// … Permission denied" or "TransactionContext Error: Failed to commit: …
// .wal".
func TestSync_permissionDeniedInWords(t *testing.T) {
	_, _, vars := demoWorld(t)
	base, err := os.MkdirTemp("", "ploti-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.WalkDir(base, func(p string, _ os.DirEntry, _ error) error { return os.Chmod(p, 0o755) })
		os.RemoveAll(base)
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(base, 0o755))
	bin := filepath.Join(base, "ploti-replica")
	copyFile(t, shellBinary(t), bin)
	must(os.Chmod(bin, 0o755))
	dir := filepath.Join(base, "replicas")
	must(os.Mkdir(dir, 0o777))
	must(os.Chmod(dir, 0o777))
	file := filepath.Join(dir, "feeds.duckdb")
	vars["PLOTI_DB"] = file
	mustCLI(t, vars, "sync")
	os.Remove(backends.SummaryPath(file)) // status reads the file itself

	raw := []string{"IO Error", "TransactionContext", "Failed to commit", "database/sql/driver"}
	check := func(name string, r shellRun, want ...string) {
		t.Helper()
		for _, w := range want {
			if r.code == exitOK || !strings.Contains(r.stderr, w) {
				t.Errorf("%s: want a failure saying %q:\n%s", name, w, r)
			}
		}
		for _, w := range raw {
			if strings.Contains(r.stderr, w) {
				t.Errorf("%s: DuckDB's words %q:\n%s", name, w, r)
			}
		}
	}

	must(os.Chmod(file, 0o444))
	check("read-only file", asUnprivileged(t, bin, vars, "sync"),
		"permission denied: "+file+" is read-only to this process", "give ", "write permission on it", "only read the file")
	if r := asUnprivileged(t, bin, vars, "status"); r.code != exitOK {
		t.Errorf("status of a read-only file reads it:\n%s", r)
	}

	must(os.Chmod(file, 0o666))
	must(os.Chmod(dir, 0o555))
	check("read-only folder", asUnprivileged(t, bin, vars, "sync"),
		"permission denied: the folder "+dir+" is read-only to this process", "feeds.duckdb.wal", "write permission on the folder")
	fresh := map[string]string{}
	for k, v := range vars {
		fresh[k] = v
	}
	fresh["PLOTI_DB"] = filepath.Join(dir, "new.duckdb")
	check("new file in a read-only folder", asUnprivileged(t, bin, fresh, "sync"), "cannot create "+fresh["PLOTI_DB"], "the folder "+dir)

	must(os.Chmod(dir, 0o777))
	must(os.Chmod(file, 0o000))
	check("unreadable file", asUnprivileged(t, bin, vars, "status"), "permission denied: "+file+" is not readable by this process", "read permission")
}
