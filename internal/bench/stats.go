package bench

import (
	"fmt"
	"slices"
	"time"
)

// Stat is a measurement repeated a few times: its median and range.
type Stat struct {
	Runs []time.Duration
}

// Median is the middle run (the mean of the two middle ones for an even count).
func (s Stat) Median() time.Duration { return median(s.Runs) }

// median is the middle value, or the mean of the two middle ones; 0 when
// there are none.
func median[T time.Duration | float64](vals []T) T {
	if len(vals) == 0 {
		return 0
	}
	v := slices.Clone(vals)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Min is the fastest run.
func (s Stat) Min() time.Duration { return slices.Min(s.Runs) }

// Max is the slowest run.
func (s Stat) Max() time.Duration { return slices.Max(s.Runs) }

// Seconds is the median in seconds.
func (s Stat) Seconds() float64 { return s.Median().Seconds() }

// Add records a run.
func (s *Stat) Add(d time.Duration) { s.Runs = append(s.Runs, d) }

// String reads "1.23 s (1.20–1.31)".
func (s Stat) String() string {
	if len(s.Runs) == 0 {
		return "–"
	}
	if len(s.Runs) == 1 {
		return secs(s.Median())
	}
	return fmt.Sprintf("%s (%s–%s)", secs(s.Median()), num(s.Min()), num(s.Max()))
}

func secs(d time.Duration) string { return num(d) + " s" }

func num(d time.Duration) string {
	switch s := d.Seconds(); {
	case s >= 100:
		return fmt.Sprintf("%.0f", s)
	case s >= 10:
		return fmt.Sprintf("%.1f", s)
	case s >= 0.1:
		return fmt.Sprintf("%.2f", s)
	default:
		return fmt.Sprintf("%.3f", s)
	}
}

// Quantity is a repeated measurement of something other than time (bytes,
// events a second), kept as float64s.
type Quantity struct {
	Vals []float64
}

// Add records a value.
func (q *Quantity) Add(v float64) { q.Vals = append(q.Vals, v) }

// Median is the middle value.
func (q Quantity) Median() float64 { return median(q.Vals) }

// Format renders the median and range with f formatting one value.
func (q Quantity) Format(f func(float64) string) string {
	if len(q.Vals) == 0 {
		return "–"
	}
	if len(q.Vals) == 1 {
		return f(q.Vals[0])
	}
	return fmt.Sprintf("%s (%s–%s)", f(q.Median()), f(slices.Min(q.Vals)), f(slices.Max(q.Vals)))
}

// mib formats bytes as MiB or GiB.
func mib(b float64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", b/(1<<20))
}

// rows formats a row count as 1M, 10M, 100k.
func rows(n int64) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// Costs are a repeated step's wall and CPU times.
type Costs struct {
	Wall, CPU Stat
}

// Add records one run.
func (c *Costs) Add(x cost) {
	c.Wall.Add(x.Wall)
	c.CPU.Add(x.CPU)
}

// String is the wall time's median and range, then the CPU time's median.
func (c Costs) String() string {
	if len(c.Wall.Runs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%s; cpu %s", c.Wall, secs(c.CPU.Median()))
}

// ratios are a's medians over b's: wall and CPU.
func ratios(a, b Costs) (wall, cpu float64) {
	return a.Wall.Seconds() / b.Wall.Seconds(), a.CPU.Seconds() / b.CPU.Seconds()
}

// inTurns runs a then b in run i, b then a in the next, so that neither
// side of a comparison always goes first (caches, the machine's load).
func inTurns(i int, a, b func() error) error {
	return inRotation(i, a, b)
}

// inRotation runs fns one after the other, run i starting at the i-th
// (modulo their number), so that each goes first as often as the others.
func inRotation(i int, fns ...func() error) error {
	for k := range fns {
		if err := fns[(i+k)%len(fns)](); err != nil {
			return err
		}
	}
	return nil
}
