package bench

import (
	"fmt"
	"runtime/metrics"
	"slices"
	"strings"
	"time"
)

// kernel is a process's kernel CPU time and minor page faults: on the
// machines these figures were taken on (a VM whose host backs the guest's
// memory as it is first touched), a catch-up's wall time went up and down
// by the kernel time of its page faults alone, so each side of a
// comparison shows them (docs/bench-history.md, "The catch-up's page faults").
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

// gcCost is Go's collector's work in the bench's process: its cycles and
// the CPU the runtime counts for it (an estimate of the runtime's, with
// assists), to tell the engine's own CPU in the bench's process from the
// collector's over the emulator's heap.
type gcCost struct {
	Cycles uint64
	CPU    time.Duration
}

var gcSamples = []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}

// gcNow is the collector's work so far.
func gcNow() gcCost {
	s := slices.Clone(gcSamples)
	metrics.Read(s)
	var g gcCost
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.Cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		g.CPU = time.Duration(s[1].Value.Float64() * float64(time.Second))
	}
	return g
}

func (g gcCost) sub(o gcCost) gcCost { return gcCost{g.Cycles - o.Cycles, g.CPU - o.CPU} }

// String reads "42 GC cycles, 1.20 s".
func (g gcCost) String() string { return fmt.Sprintf("%d GC cycles, %s", g.Cycles, secs(g.CPU)) }

// gcText is each run's, in order.
func gcText(gs []gcCost) string {
	if len(gs) == 0 {
		return "–"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.String()
	}
	return strings.Join(parts, "; ")
}
