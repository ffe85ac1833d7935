//go:build linux

package duckdb

import (
	"os"

	"golang.org/x/sys/unix"
)

// cloneFile makes dst share src's blocks (FICLONE: Btrfs, XFS, bcachefs);
// other filesystems refuse, and the caller copies instead.
func cloneFile(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}
