package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ploti-replica/ploti-replica/replica"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// readerReport is what TestHelperReadPublished saw.
type readerReport struct {
	Opens    int      `json:"opens"`
	Failed   int      `json:"failed"`   // opens or queries that failed
	NotWhole int      `json:"notWhole"` // copies that were not one whole sync
	Examples []string `json:"examples"` // the first few of either
	Versions []int    `json:"versions"` // the versions seen, in order, each once
}

func (r *readerReport) bad(count *int, what string) {
	*count++
	if len(r.Examples) < 5 {
		r.Examples = append(r.Examples, what)
	}
}

// TestHelperReadPublished is not a test: TestSync_publish runs the test
// binary again with PLOTI_TEST_READ set, and this opens that path
// read-only in a loop, as a dashboard would (no retry, no wait), until
// PLOTI_TEST_READ_STOP holds the last version and it has seen that one
// (or 20 s have passed). Each open must see one whole sync: every
// dataset at the same version (each sync of the demo brings all three to
// the next one), each table holding the rows its registry row counts, and
// no version older than one seen before. It prints a readerReport.
func TestHelperReadPublished(t *testing.T) {
	path := os.Getenv("PLOTI_TEST_READ")
	if path == "" {
		t.Skip("a helper process for TestSync_publish")
	}
	stop := os.Getenv("PLOTI_TEST_READ_STOP")
	rep := readerReport{Examples: []string{}, Versions: []int{}}
	fmt.Println("reading")
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(stop); err == nil {
			last := 0
			fmt.Sscan(string(b), &last)
			if len(rep.Versions) > 0 && rep.Versions[len(rep.Versions)-1] >= last {
				break
			}
			if soon := time.Now().Add(20 * time.Second); soon.Before(deadline) {
				deadline = soon
			}
		}
		if _, err := os.Stat(path); err != nil {
			time.Sleep(5 * time.Millisecond) // not published yet
			continue
		}
		rep.Opens++
		v, torn, err := readWhole(path)
		switch {
		case err != nil:
			rep.bad(&rep.Failed, err.Error())
		case torn != "":
			rep.bad(&rep.NotWhole, torn)
		case len(rep.Versions) > 0 && v < rep.Versions[len(rep.Versions)-1]:
			rep.bad(&rep.NotWhole, fmt.Sprintf("version %d after %d", v, rep.Versions[len(rep.Versions)-1]))
		case len(rep.Versions) == 0 || v != rep.Versions[len(rep.Versions)-1]:
			rep.Versions = append(rep.Versions, v)
		}
	}
	b, _ := json.Marshal(rep)
	fmt.Printf("report %s\n", b)
}

// readWhole opens path read-only once and tells the datasets' common
// version, or why the copy is not one whole sync.
func readWhole(path string) (version int, torn string, err error) {
	ctx := context.Background()
	db, err := backends.Open(ctx, path, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return 0, "", err
	}
	defer db.Close()
	rows, err := db.SQL().QueryContext(ctx, "SELECT table_name, version, row_count FROM _ploti.datasets ORDER BY 1")
	if err != nil {
		return 0, "", err
	}
	type ds struct {
		table        string
		version, cnt int
	}
	var all []ds
	for rows.Next() {
		var d ds
		if err := rows.Scan(&d.table, &d.version, &d.cnt); err != nil {
			rows.Close()
			return 0, "", err
		}
		all = append(all, d)
	}
	rows.Close()
	if len(all) != 3 {
		return 0, fmt.Sprintf("%d datasets, want 3", len(all)), nil
	}
	for _, d := range all {
		var n int
		if err := db.SQL().QueryRowContext(ctx, "SELECT count(*) FROM main."+storage.Ident(d.table)).Scan(&n); err != nil {
			return 0, "", err
		}
		if n != d.cnt || d.version != all[0].version {
			return 0, fmt.Sprintf("%s at version %d with %d rows (registry %d), %s at version %d", d.table, d.version, n, d.cnt, all[0].table, all[0].version), nil
		}
	}
	return all[0].version, "", nil
}

// "Dashboards beside a running sync": with --publish PATH, a
// process that opens PATH read-only in a loop, without retrying, never
// fails (it never meets the writer's lock) and always sees one whole sync,
// while syncs run back to back.
func TestSync_publish(t *testing.T) {
	_, d, vars := demoWorld(t)
	dir := t.TempDir()
	pub := filepath.Join(dir, "dashboards.duckdb")
	stop := filepath.Join(dir, "stop")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReadPublished$", "-test.v")
	cmd.Env = append(os.Environ(), "PLOTI_TEST_READ="+pub, "PLOTI_TEST_READ_STOP="+stop)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && sc.Text() != "reading" {
	}
	const rounds = 8
	for round := 1; round <= rounds; round++ {
		if round > 1 {
			if err := d.Next(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		code, stdout, stderr := cli(t, vars, "sync", "--publish", pub, "--json")
		var res replica.SyncResult
		if code != exitOK || json.Unmarshal([]byte(stdout), &res) != nil || res.Published == nil || res.Published.Path != pub {
			t.Fatalf("sync %d: exit %d\n%s\n%s", round, code, stdout, stderr)
		}
	}
	if err := os.WriteFile(stop, []byte(fmt.Sprint(rounds)), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep readerReport
	for sc.Scan() {
		if b, ok := strings.CutPrefix(sc.Text(), "report "); ok {
			if err := json.Unmarshal([]byte(b), &rep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reader: %v", err)
	}
	t.Logf("reader: %d opens, versions seen %v", rep.Opens, rep.Versions)
	if rep.Failed > 0 || rep.NotWhole > 0 {
		t.Fatalf("reader of the published copy: %d of %d opens failed, %d saw no whole sync: %q",
			rep.Failed, rep.Opens, rep.NotWhole, rep.Examples)
	}
	// The reader must have watched the copy change under it, or it proves
	// nothing.
	if len(rep.Versions) < 3 || rep.Versions[len(rep.Versions)-1] != rounds {
		t.Fatalf("reader saw versions %v in %d opens, want several up to %d", rep.Versions, rep.Opens, rounds)
	}
}

// --publish must name a path readers open: not the --db file, in a folder
// that is there.
func TestSync_publishUsage(t *testing.T) {
	_, _, vars := demoWorld(t)
	for _, tc := range []struct{ name, path, says string }{
		{"the db file", vars["PLOTI_DB"], "it is the --db file itself"},
		{"no folder", filepath.Join(t.TempDir(), "missing", "p.duckdb"), "no such folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := cli(t, vars, "sync", "--publish", tc.path)
			if code != exitUsage || !strings.Contains(stderr, tc.says) {
				t.Fatalf("exit %d, stderr %q; want %d saying %q", code, stderr, exitUsage, tc.says)
			}
		})
	}
}

// serve --publish writes the copy after each sync: the copy follows the
// versions while serve runs, and the log says what each publish took.
func TestServe_publish(t *testing.T) {
	w := newServeWorld(t)
	pub := filepath.Join(t.TempDir(), "dashboards.duckdb")
	w.start(t, time.Second, "--poll", "200ms", "--publish", pub)
	w.publish(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		db, err := backends.Open(context.Background(), pub, storage.Options{ReadOnly: true, LockTimeout: -1})
		if err != nil {
			t.Fatalf("open the published copy while serve runs: %v", err)
		}
		d, err := db.Dataset(context.Background(), serveDataset)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d.Version == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the published copy stayed at version %d", d.Version)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := w.shutdown(t); err != nil {
		t.Fatal(err)
	}
	if logs := w.logs.String(); !strings.Contains(logs, `"published":"`+pub+`"`) || !strings.Contains(logs, `"publish_ms":`) {
		t.Fatalf("serve's log does not tell the publish:\n%s", logs)
	}
}
