//go:build !unix

package duckdb

import "os"

// sysStamp has no device, inode or change time to give here: the stamp is
// the file's size and modification time.
func sysStamp(os.FileInfo) (dev, ino uint64, chgNano int64) { return 0, 0, 0 }
