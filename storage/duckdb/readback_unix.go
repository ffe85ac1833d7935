//go:build unix

package duckdb

import (
	"os"
	"syscall"
)

// sysStamp is the file's device, inode and change time.
func sysStamp(st os.FileInfo) (dev, ino uint64, chgNano int64) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return uint64(s.Dev), uint64(s.Ino), s.Ctim.Sec*1e9 + s.Ctim.Nsec
}
