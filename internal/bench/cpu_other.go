//go:build !unix

package bench

import "time"

// settle does nothing here.
func settle() {}

// cpuTime is not measured here: CPU columns read zero.
func cpuTime() time.Duration { return 0 }
