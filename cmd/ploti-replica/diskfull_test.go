package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/emulator"
	"github.com/ploti-replica/ploti-replica/storage"
	"github.com/ploti-replica/ploti-replica/storage/backends"
)

// Disk full: a sync whose file's folder, or whose spool
// folder, runs out of space fails in words that say the disk is full and
// where, keeps every table at its last good version, leaves no partial
// spool file, and the next sync after space is freed completes.

// mountTmpfs mounts a tmpfs of size (e.g. "48m") on a new folder for the
// test; it skips the test unless it runs as root (CI does).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the disk-full tests mount a size-limited tmpfs, which needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): the disk-full tests need one", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file that leaves about free bytes on dir's filesystem.
func fill(t *testing.T, dir string, free int64) string {
	t.Helper()
	out, err := exec.Command("df", "-B1", "--output=avail", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	avail, err := strconv.ParseInt(lines[len(lines)-1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for left := avail - free; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), left)]); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// bigAt is a dataset whose second version is some megabytes of Parquet.
func bigAt(round, rows int) string {
	return `SELECT 'R-' || lpad(i::VARCHAR, 8, '0') AS record_no, md5(i::VARCHAR || '-' || ` + strconv.Itoa(round) + `) AS digest, i AS n
FROM range(` + strconv.Itoa(rows) + `) t(i)`
}

// diskWorld is an emulator with ds_big at version 1 (2,000 rows) and a
// sync that has loaded it into db.
func diskWorld(t *testing.T, db, spool string) (*emulator.Emulator, map[string]string, []string) {
	t.Helper()
	em, err := emulator.New(emulator.Options{NoRateLimit: true, DuckDBThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { em.Close() })
	if err := em.Start(); err != nil {
		t.Fatal(err)
	}
	em.AddPlace(emulator.Place{ID: "fl-orange", Name: "Orange County, FL", Kind: "county", State: "fl"})
	if err := em.AddDataset(emulator.DatasetSpec{ID: "ds_big", Title: "Big", PlaceID: "fl-orange", KeyColumns: []string{"record_no"},
		Columns: []emulator.Column{{Name: "record_no", Type: "string"}, {Name: "digest", Type: "string"}, {Name: "n", Type: "integer"}}}); err != nil {
		t.Fatal(err)
	}
	sub, err := em.CreateSubscription(emulator.SubscriptionSpec{DatasetIDs: []string{"ds_big"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := em.PublishQuery(context.Background(), "ds_big", bigAt(0, 2000)); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PLOTI_API_URL": em.URL(), "PLOTI_API_KEY": em.APIKey(), "PLOTI_SUBSCRIPTION": sub, "PLOTI_DB": db}
	args := []string{"sync", "--log-format", "json"}
	if spool != "" {
		args = append(args, "--spool", spool)
	}
	if code, out, errs := cli(t, vars, args...); code != exitOK {
		t.Fatalf("first sync: exit %d\n%s%s", code, out, errs)
	}
	if _, err := em.PublishQuery(context.Background(), "ds_big", bigAt(1, 150_000)); err != nil {
		t.Fatal(err)
	}
	return em, vars, args
}

// heldVersion is the version the registry says ds_big holds.
func heldVersion(t *testing.T, db string) int {
	t.Helper()
	s, err := backends.Open(context.Background(), db, storage.Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		t.Fatalf("open %s after the failed sync: %v", db, err)
	}
	defer s.Close()
	d, err := s.Dataset(context.Background(), "ds_big")
	if err != nil {
		t.Fatal(err)
	}
	return d.Version
}

// spoolFiles lists what a spool folder holds.
func spoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func checkDiskFull(t *testing.T, em *emulator.Emulator, vars map[string]string, args []string, where, filler, spool string) {
	t.Helper()
	db := vars["PLOTI_DB"]
	code, out, errs := cli(t, vars, args...)
	if code == exitOK {
		t.Fatalf("the sync on a full disk succeeded:\n%s%s", out, errs)
	}
	if !strings.Contains(errs, "disk is full") || !strings.Contains(errs, where) {
		t.Fatalf("the error should say the disk is full and where (%s): exit %d\n%s", where, code, errs)
	}
	t.Logf("the sync on a full disk said (exit %d): %s", code, lastLine(errs))
	if v := heldVersion(t, db); v != 1 {
		t.Fatalf("after the failed sync ds_big holds version %d, want its last good version 1", v)
	}
	if bad := truthMismatches(t, db, em); len(bad) > 0 {
		t.Fatalf("after the failed sync the table differs from version 1:\n%s", strings.Join(bad, "\n"))
	}
	if left := spoolFiles(t, filepath.Join(spool, filepath.Base(db)+".spool")); len(left) > 0 {
		t.Fatalf("partial spool files left: %v", left)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, vars, args...); code != exitOK {
		t.Fatalf("the sync after space was freed: exit %d\n%s%s", code, out, errs)
	}
	if v := heldVersion(t, db); v != 2 {
		t.Fatalf("after space was freed ds_big holds version %d, want 2", v)
	}
	if bad := truthMismatches(t, db, em); len(bad) > 0 {
		t.Fatalf("after space was freed the table differs from the truth:\n%s", strings.Join(bad, "\n"))
	}
}

// The file's folder fills up while DuckDB writes the new version (the
// spool is elsewhere, with room).
func TestDiskFull_fileFolder(t *testing.T) {
	disk := mountTmpfs(t, "64m")
	spool := t.TempDir()
	db := filepath.Join(disk, "feeds.duckdb")
	em, vars, args := diskWorld(t, db, spool)
	filler := fill(t, disk, 3<<20)
	checkDiskFull(t, em, vars, args, disk, filler, spool)
}

// The spool folder fills up while the new version downloads (the file's
// folder has room).
func TestDiskFull_spoolFolder(t *testing.T) {
	spool := mountTmpfs(t, "32m")
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	em, vars, args := diskWorld(t, db, spool)
	filler := fill(t, spool, 1<<20)
	checkDiskFull(t, em, vars, args, spool, filler, spool)
}

// A verify whose spool folder is full downloads no snapshot: it verified
// nothing, and says so with a failure's exit code and the disk-full
// words, not 0; with room, it verifies.
func TestDiskFull_verifyWithAFullSpool(t *testing.T) {
	spool := mountTmpfs(t, "4m")
	db := filepath.Join(t.TempDir(), "feeds.duckdb")
	_, vars, _ := diskWorld(t, db, "")
	filler := fill(t, spool, 0)
	code, out, errs := cli(t, vars, "verify", "--spool", spool)
	if code != exitFailure || !strings.Contains(errs, "no dataset could be verified") || !strings.Contains(errs, "disk is full") {
		t.Fatalf("verify on a full spool: exit %d, want %d saying no dataset could be verified, and the disk is full\n%s%s", code, exitFailure, out, errs)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, vars, "verify", "--spool", spool); code != exitOK {
		t.Fatalf("verify with room: exit %d\n%s%s", code, out, errs)
	}
}
