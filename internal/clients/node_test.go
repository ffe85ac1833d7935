package clients

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	// requireNode, when set, turns the skip without node, npm or npm's
	// registry into a failure: CI must run this test.
	requireNode = "PLOTI_REQUIRE_NODE"
	// clientsDirEnv names the folder the clients are installed under,
	// one folder per lock file, instead of the user's cache folder.
	clientsDirEnv = "PLOTI_NODE_CLIENTS_DIR"
	// installedMark is written into an install's folder once npm ci has
	// finished there; it holds the lock file's SHA-256.
	installedMark = ".ploti-installed"
)

// npmUnreachable are the words npm's errors use when the registry did not
// answer, or answered that it is down, as opposed to an install that
// failed on its own account.
var npmUnreachable = regexp.MustCompile(`\b(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|ESOCKETTIMEDOUT|EPROXY|E50[0-4])\b|network timeout|request-timeout|body-timeout`)

// errUnreachable marks an npm run that failed because the registry is
// out of reach.
var errUnreachable = errors.New("npm's registry is out of reach")

// setupNode finds node and npm and the pinned clients installed from
// testdata/package-lock.json, installing them with npm ci when they are
// not installed yet. It returns node and the folder whose node_modules
// holds the clients. Without node, npm or the registry the test skips,
// saying why, or fails when PLOTI_REQUIRE_NODE is set.
func setupNode(t *testing.T) (node, clientsDir string) {
	t.Helper()
	node, nerr := exec.LookPath("node")
	_, perr := exec.LookPath("npm")
	if nerr != nil || perr != nil {
		unavailable(t, "node and npm are not on PATH: reading the files with other DuckDB clients needs them (Debian: apt-get install nodejs npm)")
	}
	lock, err := os.ReadFile(filepath.Join("testdata", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	root, err := clientsRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, hex.EncodeToString(sum[:]))
	if installed(dir, sum) {
		return node, dir
	}
	if err := installClients(t, root, dir, sum); errors.Is(err, errUnreachable) {
		unavailable(t, err.Error())
	} else if err != nil {
		t.Fatal(err)
	}
	return node, dir
}

// unavailable skips the test for want of node, npm or the registry, or
// fails it when PLOTI_REQUIRE_NODE is set.
func unavailable(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv(requireNode) != "" {
		t.Fatalf("%s is set, so this test must run: %s", requireNode, msg)
	}
	t.Skip(msg)
}

// clientsRoot is the folder that holds one install per lock file:
// PLOTI_NODE_CLIENTS_DIR, or ploti-replica/node-clients in the user's
// cache folder, outside the repository.
func clientsRoot() (string, error) {
	if dir := os.Getenv(clientsDirEnv); dir != "" {
		return filepath.Abs(dir)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no folder to install the DuckDB clients in (set %s): %w", clientsDirEnv, err)
	}
	return filepath.Join(cache, "ploti-replica", "node-clients"), nil
}

// installed says whether dir holds a finished install of the lock file
// whose SHA-256 is sum.
func installed(dir string, sum [32]byte) bool {
	have, err := os.ReadFile(filepath.Join(dir, installedMark))
	return err == nil && string(have) == hex.EncodeToString(sum[:])
}

// installClients runs npm ci with testdata's package.json and lock file in
// a new folder under root and renames it to dir once it has finished, so
// that an install that was killed half way never looks finished. It asks
// the registry first, briefly, so that a registry out of reach is told
// quickly.
func installClients(t *testing.T, root, dir string, sum [32]byte) error {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	removeStaleInstalls(root, filepath.Base(dir))
	if err := probeRegistry(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(root, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone by then when renamed
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return err
		}
	}
	t.Logf("installing the DuckDB clients with npm ci into %s", dir)
	// No install scripts: the clients' native builds are packages of
	// their own (@duckdb/node-bindings-<platform>), which npm picks by
	// platform from the lock file.
	if err := runNPM(tmp, 10*time.Minute, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error",
		"--fetch-retries=0", "--fetch-timeout=120000"); err != nil {
		return fmt.Errorf("npm ci with testdata/package-lock.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, installedMark), []byte(hex.EncodeToString(sum[:])), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if installed(dir, sum) { // another run installed it meanwhile
			return nil
		}
		return err
	}
	return nil
}

// probeRegistry asks npm's registry for the first client's metadata, as
// npm ci does first, within seconds.
func probeRegistry() error {
	b, err := os.ReadFile(filepath.Join("testdata", "package.json"))
	if err != nil {
		return err
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return fmt.Errorf("testdata/package.json: %w", err)
	}
	if len(pkg.Dependencies) == 0 {
		return errors.New("testdata/package.json names no client")
	}
	names := make([]string, 0, len(pkg.Dependencies))
	for name := range pkg.Dependencies {
		names = append(names, name)
	}
	sort.Strings(names)
	spec := strings.TrimPrefix(pkg.Dependencies[names[0]], "npm:")
	if err := runNPM("testdata", 30*time.Second, "view", spec, "version", "--fetch-retries=0", "--fetch-timeout=15000"); err != nil {
		return fmt.Errorf("npm view %s: %w", spec, err)
	}
	return nil
}

// runNPM runs npm in dir within limit. An error that npm's output or the
// time limit shows to be the registry's is errUnreachable.
func runNPM(dir string, limit time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w: no answer within %s (npm %s)\n%s", errUnreachable, limit, args[0], out)
	case npmUnreachable.Match(out):
		return fmt.Errorf("%w: %v\n%s", errUnreachable, err, firstLines(out, 4))
	}
	return fmt.Errorf("%v\n%s", err, out)
}

// removeStaleInstalls removes what installs of the same lock file that
// were killed left behind: their folders, an hour old or more (an install
// ends within ten minutes).
func removeStaleInstalls(root, name string) {
	old, _ := filepath.Glob(filepath.Join(root, "."+name+".tmp-*"))
	for _, dir := range old {
		if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(dir)
		}
	}
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
