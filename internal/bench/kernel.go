package bench

import (
	"fmt"
	"time"
)

// kernel is a process's kernel CPU time and minor page faults: on the
// machines these figures were taken on (a VM whose host backs the guest's
// memory as it is first touched), a catch-up's wall time went up and down
// by the kernel time of its page faults alone, so each side of a
// comparison shows them (BENCHMARKS.md, "The catch-up's page faults").
type kernel struct {
	Sys    time.Duration
	Faults int64
}

func (k kernel) sub(o kernel) kernel { return kernel{k.Sys - o.Sys, k.Faults - o.Faults} }

// perFault is the kernel time a fault, in microseconds (0 with none).
func (k kernel) perFault() float64 {
	if k.Faults <= 0 {
		return 0
	}
	return float64(k.Sys.Microseconds()) / float64(k.Faults)
}

// String reads "kernel 7.23 s, 1.87M page faults (3.9 µs each)".
func (k kernel) String() string {
	return fmt.Sprintf("kernel %s, %.2fM page faults (%.1f µs each)", secs(k.Sys), float64(k.Faults)/1e6, k.perFault())
}

// kernels are a measurement's runs.
type kernels []kernel

// String is each run's, in order.
func (ks kernels) String() string {
	if len(ks) == 0 {
		return "–"
	}
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += "; "
		}
		s += k.String()
	}
	return s
}
