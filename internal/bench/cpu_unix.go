//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time so far, user and system, all threads:
// DuckDB's work whatever else the machine runs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
