//go:build !unix

package bench

import (
	"os"
	"time"
)

// settle does nothing here.
func settle() {}

// cpuTime is not measured here: CPU columns read zero.
func cpuTime() time.Duration { return 0 }

// kernelNow is not measured here: it reads zero.
func kernelNow() kernel { return kernel{} }

// childKernel is not measured here: it reads zero.
func childKernel(*os.ProcessState) kernel { return kernel{} }
