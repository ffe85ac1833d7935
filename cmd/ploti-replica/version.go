package main

import (
	"fmt"
	"runtime/debug"

	"github.com/ploti-replica/ploti-replica/replica"
)

// commit may be set at build time (-ldflags "-X main.commit=…") where the
// toolchain stamps no VCS information (GOFLAGS=-buildvcs=false).
var commit string

// versionLine is what --version prints: the module's version, the commit
// it was built from (with "+dirty" for uncommitted changes), and the
// DuckDB release it embeds, which decides what files it reads and writes.
func versionLine() string {
	version, rev := "(devel)", commit
	if rev == "" {
		rev = "unknown: build with -buildvcs=true"
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
				if len(rev) > 12 {
					rev = rev[:12]
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty {
			rev += "+dirty"
		}
	}
	return fmt.Sprintf("ploti-replica %s (commit %s), DuckDB %s, writes DuckDB storage version %d, storage %s (read by %s)",
		version, rev, replica.DuckDBVersion, replica.StorageV1_0, replica.StorageName(replica.StorageV1_0), replica.StorageReaders(replica.StorageV1_0))
}
