package storagetest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size ("24m") on a new folder for the test, and
// unmounts it after; it skips the test unless it runs as root (CI does).
func Tmpfs(tb testing.TB, size string) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs a size-limited tmpfs, which needs root (CI runs as root)")
	}
	dir := tb.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		tb.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	tb.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// FillDisk writes a file in dir until its file system has no room left,
// and returns its path (remove it to free the room).
func FillDisk(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			tb.Fatal(err)
		}
	}
}
