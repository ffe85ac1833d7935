//go:build unix

package bench

import (
	"os"
	"syscall"
	"time"
)

// settle writes every dirty page to disk before a measurement starts, so
// that no step pays for the write-back of the one before it (an fsync on
// ext4 can wait for other files' data), and has DuckDB's allocator give
// back what the work before it freed (freeDuckDB).
func settle() {
	syscall.Sync()
	freeDuckDB()
}

// cpuTime is the process's CPU time so far, user and system, all threads:
// DuckDB's work whatever else the machine runs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// kernelNow is the process's kernel CPU time and minor page faults so far.
func kernelNow() kernel {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return kernel{}
	}
	return kernel{time.Duration(ru.Stime.Nano()), ru.Minflt}
}

// childKernel is a finished child process's kernel CPU time and minor
// page faults.
func childKernel(ps *os.ProcessState) kernel {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return kernel{}
	}
	return kernel{time.Duration(ru.Stime.Nano()), ru.Minflt}
}
