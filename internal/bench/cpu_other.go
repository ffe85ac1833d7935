//go:build !unix

package bench

import "time"

// cpuTime is not measured here: CPU columns read zero.
func cpuTime() time.Duration { return 0 }
